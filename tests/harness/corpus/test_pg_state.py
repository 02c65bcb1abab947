"""PostgreSQL states: a cell's schema kept as a dump and restored into a fresh schema, rows,
sequences and constraints alike; a corpus recorded on a server checks back ok there, and
is refused, naming the fix, where it cannot be restored."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from killpoint.cli.main import main
from killpoint.corpus import manifest as mf
from killpoint.corpus import pg_state
from killpoint.corpus.check import check
from killpoint.corpus.record import record
from killpoint.engine.options import CampaignConfig
from killpoint.errors import CorpusError
from killpoint.stores.postgresql import PostgresStores, schema_of


def run(url: str, *statements: str) -> list[tuple[object, ...]]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            rows: list[tuple[object, ...]] = []
            for sql in statements:
                result = conn.execute(text(sql))
                if result.returns_rows:
                    rows = [tuple(r) for r in result]
            return rows
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_a_schema_round_trips(pg_url: str, tmp_path: Path) -> None:
    """Rows, a sequence's position and a constraint come back in another schema, and the
    kept file names neither schema."""
    stores = PostgresStores(pg_url)
    first = stores.fresh(tmp_path)
    run(
        first,
        "CREATE TABLE runs (id serial PRIMARY KEY, status text NOT NULL UNIQUE)",
        "INSERT INTO runs (status) VALUES ('RUNNING'), ('PAUSED')",
    )
    kept = tmp_path / pg_state.DUMP
    pg_state.dump(first, kept)
    stores.drop(first)
    second = stores.fresh(tmp_path)
    pg_state.restore(kept, second)
    assert run(second, "SELECT id, status FROM runs ORDER BY id") == [(1, "RUNNING"), (2, "PAUSED")]
    assert run(second, "INSERT INTO runs (status) VALUES ('DONE') RETURNING id") == [(3,)]
    with pytest.raises(Exception, match=r"unique|duplicate"):
        run(second, "INSERT INTO runs (status) VALUES ('DONE')")
    body = kept.read_text()
    assert schema_of(first) not in body and schema_of(second) not in body
    assert pg_state.PLACEHOLDER in body
    stores.drop(second)


@pytest.mark.postgres
def test_a_failed_restore_leaves_the_schema(pg_url: str, tmp_path: Path) -> None:
    """A dump that does not apply changes nothing (one transaction), and the error says
    which restore failed."""
    stores = PostgresStores(pg_url)
    url = stores.fresh(tmp_path)
    run(url, "CREATE TABLE marker (x int)")
    bad = tmp_path / "bad.sql"
    bad.write_text(f"CREATE TABLE {pg_state.PLACEHOLDER}.t (x int);\nNOT SQL AT ALL;\n")
    with pytest.raises(pg_state.PgStateError, match="psql restore into schema kp_"):
        pg_state.restore(bad, url)
    assert run(url, "SELECT count(*) FROM marker") == [(0,)]
    stores.drop(url)


@pytest.mark.postgres
def test_only_a_cells_own_schema_is_dumped(pg_url: str, tmp_path: Path) -> None:
    """The server's default schema is never taken for a cell's."""
    with pytest.raises(pg_state.PgStateError, match="not one killpoint made"):
        pg_state.dump(pg_url, tmp_path / "x.sql")


def test_the_password_goes_in_the_environment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client programs get the password as PGPASSWORD, never on their command line
    (which every user of the machine can read); PG* variables of the caller's own do not
    steer them to another server."""
    url = "postgresql+psycopg://kp:s3cret-pw@db.example:6543/app?options=-csearch_path%3Dkp_x"
    monkeypatch.setenv("PGHOST", "elsewhere")
    args, env = pg_state._libpq(url)
    assert not any("s3cret-pw" in a for a in args)
    assert args == ["--host", "db.example", "--port", "6543", "--username", "kp", "--dbname", "app"]
    assert env["PGPASSWORD"] == "s3cret-pw" and "PGHOST" not in env


@pytest.fixture(scope="module")
def pg_corpus(pg_server: object, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    import uuid

    name = f"kp_{uuid.uuid4().hex[:20]}"
    pg_server.execute(f'CREATE DATABASE "{name}"')  # type: ignore[attr-defined]
    url = pg_server.url_for(name)  # type: ignore[attr-defined]
    out = tmp_path_factory.mktemp("pgcorpus") / "research"
    config = CampaignConfig.from_options(
        scenarios=("research",), modes=("tool-batch",), points="after-checkpoint,mid-batch",
        workers=2, keep="none", store=url,
    )  # fmt: skip
    done = record(config, out)
    assert len(done.states) >= 4
    return out, url


@pytest.mark.postgres
def test_a_postgresql_corpus_checks_back_ok(pg_corpus: tuple[Path, str]) -> None:
    """Recorded on a server, each state is a schema dump, and checked there with the same
    code every state resumes as the baseline ends; a changed tool diverges some."""
    corpus, url = pg_corpus
    m = mf.read_manifest(corpus)
    assert m.store == "postgresql"
    for sid in m.states:
        folder = corpus / mf.STATES / mf.folder_name(sid)
        assert (folder / pg_state.DUMP).stat().st_size > 0
        assert not (folder / "store.db").exists()
    result = check(corpus, "reference", store=url)
    assert {s.group for s in result.states} == {"ok"}, [
        (s.id, s.group, s.sentence) for s in result.states
    ]
    renamed = check(corpus, "reference", store=url, scenario_version="tool-renamed")
    assert "diverged-after-upgrade" in {s.group for s in renamed.states}


@pytest.mark.postgres
def test_a_postgresql_corpus_needs_a_server(
    pg_corpus: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, _ = pg_corpus
    with pytest.raises(CorpusError, match=r"holds postgresql states.*give --store postgresql"):
        check(corpus, "reference")
    assert main(["corpus", "check", str(corpus)]) == 2
    assert "give --store postgresql" in capsys.readouterr().err


@pytest.mark.postgres
def test_a_sqlite_corpus_is_not_checked_on_a_server(tmp_path: Path, pg_url: str) -> None:
    (tmp_path / "c").mkdir()
    mf.write_json(
        tmp_path / "c" / mf.MANIFEST,
        {"schema": mf.SCHEMA, "versions": {"killpoint": "x", "python": "3", "runtime": "r",
         "libraries": {}}, "store": "sqlite", "states": []},
    )  # fmt: skip
    with pytest.raises(CorpusError, match=r"holds sqlite states.*without --store"):
        check(tmp_path / "c", "reference", store=pg_url)
