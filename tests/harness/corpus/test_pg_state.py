"""PostgreSQL states: a cell's schema kept as data and restored into a fresh schema by
statements killpoint writes (rows, sequences, keys, indexes and foreign keys alike); a
corpus recorded on a server checks back ok there; a tampered corpus (a psql meta-command,
a server-side program, a table in public, a 1 GiB file, a link to /etc, a value the
server refuses) is refused with exit 2 and leaves nothing on the server or the disk."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from killpoint.cli.main import main
from killpoint.corpus import manifest as mf
from killpoint.corpus import pg_form, pg_state
from killpoint.corpus.check import check
from killpoint.corpus.record import record
from killpoint.engine.options import CampaignConfig
from killpoint.errors import CorpusError, Interrupted
from killpoint.stores.postgresql import PostgresStores, schema_of
from tests.harness.ticking_campaign import ctrl_c_default

REPO = Path(__file__).resolve().parents[3]


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


def schemas(url: str) -> set[str]:
    return {
        str(r[0]) for r in run(url, "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'kp\\_%'")
    }


def public_tables(url: str) -> set[str]:
    return {
        str(r[0]) for r in run(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    }


# A store of the shapes the runtimes make (the reference runtime: text, varchar, float,
# integer, foreign keys; LangGraph: jsonb, bytea, text defaults, indexes; agno: bigserial).
SHAPES = (
    "CREATE TABLE runs (id bigserial PRIMARY KEY, status varchar(40) NOT NULL UNIQUE, "
    "  meta jsonb NOT NULL DEFAULT '{}', blob bytea, price numeric(10,2), score double precision,"
    "  at timestamptz DEFAULT now(), ok boolean DEFAULT false, tags text[], note text DEFAULT '',"
    "  key uuid)",
    "CREATE TABLE steps (run_id bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE, "
    "  idx integer NOT NULL, body text NOT NULL, PRIMARY KEY (run_id, idx))",
    "CREATE INDEX steps_body ON steps (body)",
    "INSERT INTO runs (status, meta, blob, price, score, at, tags, key) VALUES "
    "  ('RUNNING', '{\"a\": [1, 2]}', '\\x00ff27'::bytea, 12.50, 0.1, '2024-02-29 12:00:00.123456+00',"
    "   ARRAY['x', 'y''z'], '00000000-0000-0000-0000-00000000002a'), "
    "  ('a''); DROP TABLE runs; --', '[]', NULL, NULL, '-Infinity', NULL, NULL, NULL)",
    "INSERT INTO steps VALUES (1, 0, 'first'), (1, 1, E'second\\nline')",
)


@pytest.mark.postgres
def test_a_schema_round_trips(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of every type, a sequence's position, keys, an index and a foreign key come
    back in another schema; the kept file names neither schema; no client program is
    needed (PATH empty: no pg_dump, no psql)."""
    monkeypatch.setenv("PATH", "")
    stores = PostgresStores(pg_url)
    first = stores.fresh(tmp_path)
    run(first, *SHAPES)
    kept = tmp_path / pg_form.FILE
    pg_state.dump(first, kept)
    before = run(first, "SELECT * FROM runs ORDER BY id")
    stores.drop(first)
    second = stores.fresh(tmp_path)
    pg_state.restore(kept, second)
    assert run(second, "SELECT * FROM runs ORDER BY id") == before
    assert run(second, "SELECT run_id, idx, body FROM steps ORDER BY idx") == [
        (1, 0, "first"),
        (1, 1, "second\nline"),
    ]
    assert run(second, "INSERT INTO runs (status) VALUES ('DONE') RETURNING id, meta, note") == [
        (3, {}, "")
    ]
    with pytest.raises(Exception, match=r"unique|duplicate"):
        run(second, "INSERT INTO runs (status) VALUES ('DONE')")
    with pytest.raises(Exception, match=r"foreign key"):
        run(second, "INSERT INTO steps VALUES (99, 0, 'orphan')")
    assert run(second, "DELETE FROM runs WHERE id = 1", "SELECT count(*) FROM steps") == [(0,)]
    assert run(second, "SELECT indexname FROM pg_indexes WHERE tablename = 'steps' "
                       "AND indexname = 'steps_body'") == [("steps_body",)]  # fmt: skip
    body = kept.read_text()
    assert schema_of(first) not in body and schema_of(second) not in body
    assert "DROP TABLE runs" in body  # a value, kept as data
    assert run(second, "SELECT count(*) FROM runs") == [(2,)]  # ... and never run
    stores.drop(second)


@pytest.mark.postgres
def test_a_refused_value_leaves_the_schema_empty(pg_url: str, tmp_path: Path) -> None:
    """A value the server refuses for its column's type fails the restore at its line
    (the corpus's fault: a FormError) and, one transaction, leaves the schema as it was."""
    stores = PostgresStores(pg_url)
    url = stores.fresh(tmp_path)
    bad = tmp_path / pg_form.FILE
    lines = [pg_form.header(),
             {"kind": "table", "name": "t", "columns": [
                 {"name": "x", "type": "integer", "not_null": False, "default": None}]},
             {"kind": "row", "table": "t", "values": ["1"]},
             {"kind": "row", "table": "t", "values": ["not a number"]}]  # fmt: skip
    bad.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(pg_form.FormError, match=rf"{pg_form.FILE}' line 4: the server refuses it"):
        pg_state.restore(bad, url)
    assert run(url, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()") == [(0,)]
    stores.drop(url)


@pytest.mark.postgres
def test_a_restore_stops_at_ctrl_c(pg_url: str, tmp_path: Path) -> None:
    """With its stop event set, a restore stops at its next statement and undoes itself."""
    stores = PostgresStores(pg_url)
    url = stores.fresh(tmp_path)
    path = big_state(tmp_path / pg_form.FILE, rows=2000)
    stop = threading.Event()
    stop.set()
    with pytest.raises(Interrupted):
        pg_state.restore(path, url, stop)
    assert run(url, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()") == [(0,)]
    stores.drop(url)


@pytest.mark.postgres
def test_only_a_cells_own_schema_is_dumped(pg_url: str, tmp_path: Path) -> None:
    """The server's default schema is never taken for a cell's."""
    with pytest.raises(pg_state.PgStateError, match="not one killpoint made"):
        pg_state.dump(pg_url, tmp_path / "x.jsonl")


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("CREATE VIEW v AS SELECT 1 AS one", "v (relkind v)"),
        ("CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'", "function or procedure f"),
        ("CREATE TABLE t (x int CHECK (x > 0))", "check, exclusion or trigger constraint"),
        ("CREATE TYPE mood AS ENUM ('ok')", "type mood"),
        ("CREATE TABLE t (x int DEFAULT (random() * 10)::int)", "the default"),
        ("CREATE TABLE t (x point)", "of type point"),
        ("CREATE TABLE t (x int); CREATE INDEX ON t ((x + 1))", "not a plain ascending btree"),
    ],
)
def test_what_the_form_cannot_hold_is_not_kept(
    pg_url: str, tmp_path: Path, statement: str, named: str
) -> None:
    """A schema that holds anything but tables of the form's types, their keys, plain
    indexes and sequences is refused when recording, naming it: never kept half."""
    stores = PostgresStores(pg_url)
    url = stores.fresh(tmp_path)
    run(url, *statement.split("; "))
    with pytest.raises(pg_state.PgStateError, match=named.replace("(", r"\(").replace(")", r"\)")):
        pg_state.dump(url, tmp_path / pg_form.FILE)
    assert not (tmp_path / pg_form.FILE).exists()
    assert not list(tmp_path.glob("*.tmp"))
    stores.drop(url)


def big_state(path: Path, rows: int) -> Path:
    """A valid state of one table and `rows` rows."""
    with path.open("w") as f:
        f.write(json.dumps(pg_form.header()) + "\n")
        f.write(json.dumps({"kind": "table", "name": "t", "columns": [
            {"name": "x", "type": "integer", "not_null": True, "default": None},
            {"name": "y", "type": "text", "not_null": False, "default": None}]}) + "\n")  # fmt: skip
        for n in range(rows):
            f.write(json.dumps({"kind": "row", "table": "t", "values": [str(n), "y" * 40]}) + "\n")
    return path


# -- a corpus recorded on a server --------------------------------------------------------


@pytest.fixture(scope="module")
def pg_corpus(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, str]]:
    name = f"kp_{uuid.uuid4().hex[:20]}"
    pg_server.execute(f'CREATE DATABASE "{name}"')
    url = pg_server.url_for(name)
    out = tmp_path_factory.mktemp("pgcorpus") / "research"
    config = CampaignConfig.from_options(
        scenarios=("research",), modes=("tool-batch",), points="after-checkpoint,mid-batch",
        workers=2, keep="none", store=url,
    )  # fmt: skip
    done = record(config, out)
    assert len(done.states) >= 4 and not done.refused
    yield out, url
    pg_server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.postgres
def test_a_postgresql_corpus_checks_back_ok(pg_corpus: tuple[Path, str]) -> None:
    """Recorded on a server, each state is data (store.jsonl), and checked there with the
    same code every state resumes as the baseline ends; a changed tool diverges some."""
    corpus, url = pg_corpus
    m = mf.read_manifest(corpus)
    assert m.store == "postgresql"
    for sid in m.states:
        folder = corpus / mf.STATES / mf.folder_name(sid)
        assert pg_form.check(folder / pg_form.FILE) > 0
        assert not (folder / "store.db").exists() and not (folder / pg_form.OLD_FILE).exists()
    left = schemas(url)
    result = check(corpus, "reference", store=url)
    assert {s.group for s in result.states} == {"ok"}, [
        (s.id, s.group, s.sentence) for s in result.states
    ]
    renamed = check(corpus, "reference", store=url, scenario_version="tool-renamed")
    assert "diverged-after-upgrade" in {s.group for s in renamed.states}
    assert schemas(url) == left  # every state's schema dropped


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
    with pytest.raises(CorpusError, match=r"holds sqlite states.*check it without --store"):
        check(tmp_path / "c", "reference", store=pg_url)


# -- a tampered corpus ------------------------------------------------------------------


def first_state(corpus: Path) -> Path:
    sid = mf.read_manifest(corpus).states[0]
    return corpus / mf.STATES / mf.folder_name(sid)


def old_sql(state: Path, body: str) -> None:
    """The SQL form an earlier killpoint recorded, in place of the data."""
    (state / pg_form.FILE).unlink()
    (state / pg_form.OLD_FILE).write_text(body)


def rewrite(state: Path, change: Any) -> None:
    path = state / pg_form.FILE
    records = [json.loads(x) for x in path.read_text().splitlines()]
    change(records)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def sparse_gib(state: Path) -> None:
    with (state / pg_form.FILE).open("r+b") as f:
        f.truncate(1024**3)  # a hole: no gigabyte is written


def link_to_etc(state: Path) -> None:
    (state / "model").mkdir(exist_ok=True)
    os.symlink("/etc", state / "model" / "etc")


def shell_in_type(records: list[dict[str, Any]]) -> None:
    table = next(r for r in records if r.get("kind") == "table")
    table["columns"][0]["type"] = "text; COPY (SELECT 1) TO PROGRAM 'touch {marker}'"


def table_in_public(records: list[dict[str, Any]]) -> None:
    records.insert(1, {"kind": "table", "schema": "public", "name": "evil", "columns": []})


def refused_value(records: list[dict[str, Any]]) -> None:
    """A value of the wrong type: the form is right, the server refuses it mid-restore."""
    table = next(r for r in records if r.get("kind") == "table" and r["name"] == "kp_runs")
    at = next(i for i, c in enumerate(table["columns"]) if c["type"] == "integer")
    row = next(r for r in records if r.get("kind") == "row" and r["table"] == "kp_runs")
    row["values"][at] = "{marker}"


TAMPERS = {
    "psql meta-command": (lambda s, m: old_sql(s, f"\\! touch {m}\n"), pg_form.OLD_FILE),
    "server-side program": (
        lambda s, m: old_sql(s, f"COPY (SELECT 1) TO PROGRAM 'touch {m}';\n"),
        pg_form.OLD_FILE,
    ),
    "program in a type": (
        lambda s, m: rewrite(s, lambda r: (shell_in_type(r), _marked(r, m))),
        "columns[0].type",
    ),
    "table in public (SQL)": (
        lambda s, m: old_sql(s, "CREATE TABLE public.evil (x int);\n"),
        pg_form.OLD_FILE,
    ),
    "table in public (data)": (lambda s, m: rewrite(s, table_in_public), "'schema'"),
    "1 GiB file": (lambda s, m: sparse_gib(s), "over the 64.0 MiB"),
    "link to /etc": (lambda s, m: link_to_etc(s), "symbolic link"),
    "value the server refuses": (
        lambda s, m: rewrite(s, lambda r: (refused_value(r), _marked(r, m))),
        "the server refuses it",
    ),
}


def _marked(records: list[dict[str, Any]], marker: str) -> None:
    for r in records:
        for key, value in list(r.items()):
            if isinstance(value, str):
                r[key] = value.replace("{marker}", marker)
        if r.get("kind") == "table":
            for c in r["columns"]:
                c["type"] = c["type"].replace("{marker}", marker)
        if r.get("kind") == "row":
            r["values"] = [v.replace("{marker}", marker) if v else v for v in r["values"]]


@pytest.mark.postgres
@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_a_tampered_corpus_is_refused_and_leaves_nothing(
    tamper: str,
    pg_corpus: tuple[Path, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """exit 2, the file (and line or field) named; no command ran (the marker file it
    would touch is absent), no kp_ schema and no table in public left on the server, no
    folder left in the work folder."""
    corpus, url = pg_corpus
    copy = tmp_path / "corpus"
    shutil.copytree(corpus, copy)
    state = first_state(copy)
    marker = tmp_path / "ran"
    change, named = TAMPERS[tamper]
    change(state, str(marker))
    work = tmp_path / "work"
    work.mkdir()
    before = schemas(url)
    code = main(["corpus", "check", str(copy), "--store", url, "--work-dir", str(work)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert named in err and str(state) in err, err
    assert not marker.exists()
    assert schemas(url) == before
    assert public_tables(url) == set()
    assert [p for p in work.rglob("*") if p.is_file()] == []


@pytest.mark.postgres
def test_ctrl_c_during_a_restore(pg_corpus: tuple[Path, str], tmp_path: Path) -> None:
    """Ctrl-C while a large state is being restored: the command ends within seconds
    (the restore stops at its next statement), its schema dropped, nothing left in the
    work folder."""
    corpus, url = pg_corpus
    copy = tmp_path / "corpus"
    shutil.copytree(corpus, copy)
    state = first_state(copy)
    big_state(state / pg_form.FILE, rows=300_000)  # about 20 MB: a minute of INSERTs
    work = tmp_path / "work"
    work.mkdir()
    before = schemas(url)
    proc = subprocess.Popen(
        [sys.executable, "-m", "killpoint.cli.main", "corpus", "check", str(copy), "--store",
         url, "--work-dir", str(work), "--workers", "1"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        preexec_fn=ctrl_c_default,
    )  # fmt: skip
    try:
        # The restore is underway once the server runs one of its INSERTs.
        deadline = time.monotonic() + 120
        while not run(
            url,
            "SELECT 1 FROM pg_stat_activity WHERE query LIKE 'INSERT INTO \"kp\\_%'",
        ):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the restore never began"
            time.sleep(0.05)
        interrupted = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - interrupted
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert took < 15, f"Ctrl-C took {took:.1f} s"
    assert schemas(url) == before
    assert [p for p in work.rglob("*") if p.is_file()] == []


@pytest.mark.postgres
def test_a_schema_that_cannot_be_dropped_is_named(
    pg_corpus: tuple[Path, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A state's schema the server will not drop (here: every drop refused) stays, and the
    output names each one with the statement that drops it."""
    from killpoint.errors import StoreLeftover

    corpus, url = pg_corpus
    real_drop = PostgresStores.drop
    kept: list[str] = []

    def refuse(self: PostgresStores, store_url: str) -> None:
        schema = schema_of(store_url) or ""
        if schema.startswith("kp_") and store_url not in kept:
            kept.append(store_url)
        raise StoreLeftover(f"schema {schema}", "the server", f'DROP SCHEMA "{schema}" CASCADE;',
                            "refused by the test")  # fmt: skip

    before = schemas(url)
    monkeypatch.setattr(PostgresStores, "drop", refuse)
    try:
        assert main(["corpus", "check", str(corpus), "--store", url]) == 0
    finally:
        monkeypatch.setattr(PostgresStores, "drop", real_drop)
    err = capsys.readouterr().err
    left = schemas(url) - before
    assert left  # the baselines' and the states' schemas stayed
    for schema in left:
        assert (
            f'could not drop schema {schema} on the server (refused by the test); drop it with: DROP SCHEMA "{schema}" CASCADE;'
            in err
        )
    stores = PostgresStores(url)
    for store_url in kept:
        stores.drop(store_url)
    assert schemas(url) == before
