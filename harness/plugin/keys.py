"""What the plugin's modules share on pytest's objects: the marker's and the matrix's
names, the stash keys for the session's state and for the cell results a test produced,
and the little of the session that the items and the `crash` fixture ask for.

A module of its own so that the `crash` fixture, the items and the session can use them
without importing each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:
    from killpoint.engine.campaign import CampaignConfig
    from killpoint.engine.engine import Engine
    from killpoint.values.cell import CellResult


class SessionState(Protocol):
    """What a cell item and the `crash` fixture use of the plugin's session
    (killpoint.plugin.session.KillpointSession)."""

    seed: int

    def engine(self) -> Engine: ...

    def accepted(self, runtime: str | None = None) -> dict[str, Any]: ...

    def store_url(self) -> str: ...

    def parallel(self) -> int: ...

    def campaign_config(self, **overrides: Any) -> CampaignConfig: ...

    def record_mode(self) -> str: ...


MARKER = "killpoint"  # configures a test's crash.check; never used to select
MATRIX = "killpoint"  # the node id of the matrix collector; items are "killpoint::CELL"
REPORT_ATTR = "killpoint"  # the report attribute carrying the cells' results (JSON)
CHECKS_ATTR = "killpoint_checks"  # and the one carrying each crash.check's seed and stop
MATRIX_MARKER = "crash_matrix"  # carried by every matrix cell: `-m crash_matrix` selects them
CASSETTES_MARKER = "crash_cassettes"  # a folder of cassettes: one item per cassette
CASSETTE_FIXTURE = "crash_cassette"  # the cassette a crash_cassettes item checks
RESULTS_KEY: pytest.StashKey[list[CellResult]] = pytest.StashKey()
# Per crash.check in a test: {"seed": int, "stopped": the stop's sentence or None}.
CHECKS_KEY: pytest.StashKey[list[dict[str, Any]]] = pytest.StashKey()
SESSION_KEY: pytest.StashKey[SessionState] = pytest.StashKey()

__all__ = [
    "CASSETTES_MARKER",
    "CASSETTE_FIXTURE",
    "CHECKS_ATTR",
    "CHECKS_KEY",
    "MARKER",
    "MATRIX",
    "MATRIX_MARKER",
    "REPORT_ATTR",
    "RESULTS_KEY",
    "SESSION_KEY",
    "SessionState",
]
