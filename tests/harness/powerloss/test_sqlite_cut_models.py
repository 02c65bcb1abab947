"""Ground truth for the cut models: plain sqlite3 in each journal mode and `synchronous`
level, cut under each model, judged against what SQLite documents
(https://www.sqlite.org/pragma.html#pragma_synchronous):
- FULL in WAL mode, FULL with a journal truncated at commit, and EXTRA with a deleted
  journal keep every acknowledged commit, whatever the cut keeps of what was not synced;
- WAL with NORMAL "is always consistent ... but does lose durability": the image is
  sound and holds the commits up to the last checkpoint, never a later commit without an
  earlier one;
- OFF hands every write to the OS unsynced: "the database might become corrupted" when
  the power goes; a cut that keeps a part of those writes finds it so.
The workload is tests/harness/powerloss/sqlite_workload.py; the measured table, over
more seeds, is in docs/powerloss.md (`python -m tests.benchmarks.cut_ground_truth`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from killpoint.powerloss.cut_models import parse_cut
from tests.harness.powerloss.sqlite_workload import CORRUPT, DURABLE, LOST, Outcome, run_and_cut

MODELS = ("synced", "torn-op", "torn-op:byte", "torn-seq", "reorder")
SEEDS = (0, 1)


def outcomes(cell: Path, journal: str, synchronous: str, model: str) -> list[Outcome]:
    found = []
    for seed in SEEDS:
        folder = cell / f"seed-{seed}"
        folder.mkdir()
        found.append(run_and_cut(folder, journal, synchronous, parse_cut(model, seed)))
    return found


def shown(found: list[Outcome]) -> list[tuple[str, str, list[int]]]:
    return [(o.verdict, o.check, sorted(o.commits)) for o in found]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(
    ("journal", "synchronous"), [("WAL", "FULL"), ("TRUNCATE", "FULL"), ("DELETE", "EXTRA")]
)
def test_where_sqlite_promises_durability_every_cut_keeps_every_commit(
    cell: Path, journal: str, synchronous: str, model: str
) -> None:
    found = outcomes(cell, journal, synchronous, model)

    assert [DURABLE] * len(SEEDS) == [o.verdict for o in found], shown(found)


@pytest.mark.parametrize("model", MODELS)
def test_wal_normal_stays_consistent_and_keeps_what_was_checkpointed(
    cell: Path, model: str
) -> None:
    """Sound, the commits a prefix, the checkpointed ones (0-2) always there; under the
    synced cut exactly those: the two acknowledged after the checkpoint are gone."""
    found = outcomes(cell, "WAL", "NORMAL", model)

    for o in found:
        assert ("ok", frozenset(), True) == (o.check, o.partial, o.prefix), shown(found)
        assert {0, 1, 2} <= o.commits, shown(found)
        assert o.verdict in (DURABLE, LOST)
    if model == "synced":
        assert [{0, 1, 2}] * len(SEEDS) == [set(o.commits) for o in found]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("synchronous", ["FULL", "NORMAL"])
def test_a_deleted_journal_loses_at_most_the_last_commit(
    cell: Path, synchronous: str, model: str
) -> None:
    """DELETE at FULL or NORMAL: the journal's unlink is not synced; where the cut brings
    it back, opening the image rolls the last commit back; never more, never unsound."""
    found = outcomes(cell, "DELETE", synchronous, model)

    for o in found:
        assert ("ok", frozenset()) == (o.check, o.partial), shown(found)
        assert o.commits in ({0, 1, 2, 3}, {0, 1, 2, 3, 4}), shown(found)
    if model == "synced":
        assert [LOST] * len(SEEDS) == [o.verdict for o in found]


@pytest.mark.parametrize("journal", ["WAL", "DELETE"])
def test_off_is_sound_only_when_nothing_unsynced_lands(cell: Path, journal: str) -> None:
    """OFF: the synced cut leaves the base, sound; a cut that keeps a seeded subset of
    the unsynced writes (torn-seq) leaves a malformed database."""
    (cell / "synced").mkdir()
    (cell / "torn-seq").mkdir()
    synced = outcomes(cell / "synced", journal, "OFF", "synced")
    torn = outcomes(cell / "torn-seq", journal, "OFF", "torn-seq")

    assert [(LOST, "ok", [0])] * len(SEEDS) == shown(synced)
    assert CORRUPT in [o.verdict for o in torn], shown(torn)
