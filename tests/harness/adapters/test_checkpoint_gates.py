"""The gates helper adapters use around a checkpoint's durable write: numbering, the three
gates, and the commit hooks for SQLAlchemy and sqlite3 (aiosqlite where installed)."""

# ruff: noqa: SIM300
from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from killpoint.adapters.checkpoint_gates import CheckpointGates
from killpoint.scenarios import gates


@pytest.fixture
def traced() -> Iterator[list[str]]:
    """Every gate hit in this process, in order (nothing armed: nothing blocks)."""
    seen: list[str] = []
    gates.configure((), announce=None, tracer=seen.append)
    yield seen
    gates.disarm()


class TestNumbering:
    def test_writes_are_numbered_from_the_offset_with_their_three_gates(
        self, traced: list[str]
    ) -> None:
        checkpoints = CheckpointGates(offset=3)
        write = checkpoints.wrap(lambda value: value * 2)

        assert 10 == write(5)
        write(1)

        assert [
            "checkpoint:4:writing",
            "checkpoint:4:landed",
            "checkpoint:5:writing",
            "checkpoint:5:landed",
        ] == traced

    def test_a_write_that_raises_never_lands(self, traced: list[str]) -> None:
        checkpoints = CheckpointGates()

        def fail() -> None:
            raise OSError("disk full")

        with pytest.raises(OSError, match="disk full"):
            checkpoints.wrap(fail)()

        assert ["checkpoint:1:writing"] == traced
        assert checkpoints.current() is None

    def test_a_coroutine_function_is_wrapped_as_one(self, traced: list[str]) -> None:
        checkpoints = CheckpointGates()

        async def save(value: int) -> int:
            await asyncio.sleep(0)
            return value

        assert 7 == asyncio.run(checkpoints.wrap(save)(7))
        assert ["checkpoint:1:writing", "checkpoint:1:landed"] == traced


class TestCommitHooks:
    def test_sqlalchemy_commits_inside_a_write_hit_committing(
        self, traced: list[str], tmp_path: Path
    ) -> None:
        engine = create_engine(f"sqlite:///{tmp_path / 's.db'}")
        checkpoints = CheckpointGates()
        checkpoints.watch_sqlalchemy(engine)

        def save() -> None:
            with engine.begin() as conn:
                conn.execute(text("CREATE TABLE IF NOT EXISTS t (x INTEGER)"))
            with engine.begin() as conn:
                conn.execute(text("INSERT INTO t VALUES (1)"))

        checkpoints.wrap(save)()
        with engine.begin() as conn:  # outside any checkpoint: no gate
            conn.execute(text("INSERT INTO t VALUES (2)"))
        engine.dispose()

        assert [
            "checkpoint:1:writing",
            "checkpoint:1:committing",
            "checkpoint:1:committing#2",
            "checkpoint:1:landed",
        ] == traced

    def test_a_commit_of_another_thread_is_not_the_checkpoints(
        self, traced: list[str], tmp_path: Path
    ) -> None:
        """A lease renewal committing on its own thread while a checkpoint is open is not
        one of the checkpoint's transactions."""
        engine = create_engine(f"sqlite:///{tmp_path / 's.db'}")
        checkpoints = CheckpointGates()
        checkpoints.watch_sqlalchemy(engine)

        def renew() -> None:
            with engine.begin() as conn:
                conn.execute(text("SELECT 1"))

        with checkpoints.write():
            other = threading.Thread(target=renew)
            other.start()
            other.join()
        engine.dispose()

        assert ["checkpoint:1:writing", "checkpoint:1:landed"] == traced

    def test_a_sqlite3_commit_hits_committing_before_it_runs(
        self, traced: list[str], tmp_path: Path
    ) -> None:
        conn = sqlite3.connect(tmp_path / "s.db")
        checkpoints = CheckpointGates()
        checkpoints.watch_sqlite3(conn)
        seen_rows: list[int] = []

        def note_rows(name: str) -> None:
            traced.append(name)
            if name == "checkpoint:1:committing":  # not yet committed: another reader sees 0
                other = sqlite3.connect(tmp_path / "s.db")
                seen_rows.append(other.execute("SELECT count(*) FROM t").fetchone()[0])
                other.close()

        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.commit()
        gates.configure((), announce=None, tracer=note_rows)
        with checkpoints.write():
            conn.execute("INSERT INTO t VALUES (1)")
            conn.commit()
        conn.close()

        assert ["checkpoint:1:writing", "checkpoint:1:committing", "checkpoint:1:landed"] == [
            t for t in traced if t.startswith("checkpoint:")
        ]
        assert [0] == seen_rows

    def test_an_aiosqlite_commit_on_its_own_thread_goes_to_the_open_checkpoint(
        self, traced: list[str], tmp_path: Path
    ) -> None:
        aiosqlite = pytest.importorskip("aiosqlite", reason="aiosqlite comes with langgraph")
        checkpoints = CheckpointGates()

        async def main() -> None:
            async with aiosqlite.connect(tmp_path / "s.db") as conn:
                await checkpoints.watch_aiosqlite(conn)
                await conn.execute("CREATE TABLE t (x INTEGER)")
                await conn.commit()  # no checkpoint open: no gate
                async with checkpoints.awrite():
                    await conn.execute("INSERT INTO t VALUES (1)")
                    await conn.commit()

        asyncio.run(main())
        assert ["checkpoint:1:writing", "checkpoint:1:committing", "checkpoint:1:landed"] == traced
