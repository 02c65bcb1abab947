"""The reference runtime's store."""

from __future__ import annotations

from .engine import normalise_url
from .ownership import Owner
from .store import Checkpoint, Store, StoredRun

__all__ = ["Checkpoint", "Owner", "Store", "StoredRun", "normalise_url"]
