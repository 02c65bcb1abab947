"""A PostgreSQL store kept as a file and given back in a fresh schema.

Every cell's store is a schema of its own (`kp_` and 16 hex digits, killpoint.stores.
postgresql), which the runtime reaches through its connections' search_path. The state a
kill left is `pg_dump --schema` of that schema, taken after the worker's death: one
consistent snapshot of every committed transaction (pg_dump reads in one repeatable-read
transaction), tables, sequences with their positions, indexes and constraints, in the
server's own SQL, so it restores on a later server version too.

pg_dump names the schema in every statement. The dump is kept with that name replaced
by a placeholder, and a restore writes the new schema's name in its place: the schema
name is 19 characters of a random token that nothing but the name itself holds. The
fresh schema a check's cell was given is dropped first, in the restore's transaction,
for the dump creates it.

The tools are the server's client programs (`pg_dump`, `psql`): from PATH, else the
newest /usr/lib/postgresql/*/bin (Debian's layout). The password reaches them in the
environment (PGPASSWORD), never on a command line another user could read.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from sqlalchemy.engine import make_url

from killpoint.errors import PgStateError
from killpoint.redaction import redact
from killpoint.stores.postgresql import PREFIX, schema_of

DUMP = "store.sql"
PLACEHOLDER = "__killpoint_schema__"
TIMEOUT = 120.0  # seconds for one dump or restore: a cell's store is small
TOOLS_HINT = "install the PostgreSQL client programs (Debian: apt-get install postgresql-client)"


def tool(name: str) -> str:
    """The path of a PostgreSQL client program, or PgStateError naming how to get it."""
    found = shutil.which(name)
    if found:
        return found
    bins = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), key=_version)
    if bins:
        return str(bins[-1])
    raise PgStateError(f"killpoint: `{name}` was not found on PATH; {TOOLS_HINT}")


def _version(path: Path) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", path.parent.parent.name))


def _libpq(url: str) -> tuple[list[str], dict[str, str]]:
    """Connection arguments for a client program, and its environment (the password)."""
    u = make_url(url)
    args = []
    if u.host:
        args += ["--host", u.host]
    if u.port:
        args += ["--port", str(u.port)]
    if u.username:
        args += ["--username", u.username]
    args += ["--dbname", u.database or "postgres"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    if u.password is not None:
        env["PGPASSWORD"] = str(u.password)
    return args, env


def _run(cmd: list[str], env: dict[str, str], what: str, given: str | None = None) -> str:
    try:
        done = subprocess.run(
            cmd, env=env, input=given, capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise PgStateError(f"killpoint: {what} did not finish in {TIMEOUT:.0f} s") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()[:3]
        raise PgStateError(redact(f"killpoint: {what} failed: {' / '.join(lines)}"))
    return done.stdout


def _schema(url: str) -> str:
    schema = schema_of(url)
    if schema is None or not re.fullmatch(rf"{PREFIX}[0-9a-f]{{16}}", schema):
        raise PgStateError(
            f"killpoint: store URL selects schema {schema!r}, not one killpoint made; a "
            "PostgreSQL state is kept only from a cell's own schema"
        )
    return schema


def dump(url: str, dest: Path) -> None:
    """Write the schema `url` selects to `dest`, its name replaced by the placeholder."""
    schema = _schema(url)
    args, env = _libpq(url)
    sql = _run(
        [tool("pg_dump"), *args, "--schema", schema, "--no-owner", "--no-privileges"],
        env,
        f"pg_dump of schema {schema}",
    )
    dest.write_text(sql.replace(schema, PLACEHOLDER))


def restore(source: Path, url: str) -> None:
    """Replace the (fresh, empty) schema `url` selects with the one kept in `source`."""
    schema = _schema(url)
    # In the restore's own transaction: a failed restore leaves the fresh schema as it was.
    sql = f'DROP SCHEMA IF EXISTS "{schema}" CASCADE;\n' + source.read_text().replace(
        PLACEHOLDER, schema
    )
    args, env = _libpq(url)
    # On standard input: a corpus may be read-only (a checkout, a CI artefact).
    _run(
        [tool("psql"), *args, "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction"],
        env,
        f"psql restore into schema {schema}",
        given=sql,
    )


__all__ = ["DUMP", "PgStateError", "dump", "restore", "tool"]
