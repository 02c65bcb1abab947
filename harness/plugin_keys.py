"""What the plugin's modules share on pytest's objects: the marker's name, and the stash
keys for the session's state and for the cell results a test produced.

A module of its own so that the `crash` fixture and the plugin's hooks can both use them
without importing each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .cell import CellResult
    from .pytest_plugin import KillpointSession

MARKER = "killpoint"  # configures a test's crash.check; never used to select
MATRIX_MARKER = "crash_matrix"  # carried by every matrix cell: `-m crash_matrix` selects them
# Annotated rather than subscripted: KillpointSession is only imported for type checkers.
RESULTS_KEY: pytest.StashKey[list[CellResult]] = pytest.StashKey()
SESSION_KEY: pytest.StashKey[KillpointSession] = pytest.StashKey()

__all__ = ["MARKER", "MATRIX_MARKER", "RESULTS_KEY", "SESSION_KEY"]
