"""tests/harness: `fixtures/` holds whole projects that pytester copies and runs; they are
not part of this suite."""

from __future__ import annotations

collect_ignore = ["fixtures"]
