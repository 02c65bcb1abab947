"""Without google-adk (`pip install killpoint[adk]`) there is nothing here to run."""

from __future__ import annotations

import importlib.util

collect_ignore_glob = [] if importlib.util.find_spec("google.adk") else ["test_*.py"]
