"""A PostgreSQL store kept as data and given back in a fresh schema.

Every cell's store is a schema of its own (`kp_` and 16 hex digits, killpoint.stores.
postgresql), which the runtime reaches through its connections' search_path. The state a
kill left is read from that schema after the worker's death, in one repeatable-read
transaction (one consistent snapshot of every committed transaction): each table's
columns, keys, indexes and rows, each sequence with its position, written in the form
killpoint.corpus.pg_form describes. Anything else the schema holds (a view, a function,
a trigger, a type of its own, a check constraint, a column type or default outside the
form) is refused when recording, naming it: a state killpoint could not give back whole
is never kept as if it could.

A restore writes every statement itself: names quoted as identifiers, values bound as
parameters, types, defaults' functions and actions spelled from killpoint's own tables,
every object qualified with the checking cell's schema, and the session's search_path
set to pg_catalog alone. So nothing a corpus file holds can run a statement killpoint did
not write, nor reach outside that schema, nor run a program on either machine. The
restore is one transaction into the cell's fresh, empty schema: one that fails leaves it
empty (the caller drops it). A line the server refuses (a value that is not of its
column's type, a duplicate key) is the corpus's fault, said with the file and the line
(FormError, a CorpusError); a server that cannot be reached is PgStateError.

No client program is needed: the statements go over psycopg, the driver killpoint stores
already use.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from killpoint.corpus import files
from killpoint.corpus import pg_form as form
from killpoint.errors import Interrupted, PgStateError
from killpoint.redaction import redact
from killpoint.stores.postgresql import CONNECT_TIMEOUT, PREFIX, conninfo, schema_of

FILE = form.FILE
STATEMENT_TIMEOUT = "120s"  # one statement of a dump or a restore: a cell's store is small
# The session a dump and a restore run in: only pg_catalog's names resolve unqualified,
# and every value's text form is read and written in one fixed style.
SESSION = (
    "SET LOCAL search_path TO pg_catalog",
    "SET LOCAL TimeZone TO 'UTC'",
    "SET LOCAL DateStyle TO 'ISO, YMD'",
    "SET LOCAL IntervalStyle TO 'postgres'",
    "SET LOCAL extra_float_digits TO 3",
    "SET LOCAL bytea_output TO 'hex'",
    f"SET LOCAL statement_timeout TO '{STATEMENT_TIMEOUT}'",
)


def _schema(url: str) -> str:
    schema = schema_of(url)
    if schema is None or not re.fullmatch(rf"{PREFIX}[0-9a-f]{{16}}", schema):
        raise PgStateError(
            f"killpoint: store URL selects schema {schema!r}, not one killpoint made; a "
            "PostgreSQL state is kept from and restored into a cell's own schema only"
        )
    return schema


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return redact(lines[0] if lines else type(exc).__name__)


def _connect(url: str, *, read_only: bool) -> Any:
    import psycopg

    try:
        conn = psycopg.connect(conninfo(url), connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as exc:
        raise PgStateError(
            f"killpoint: cannot reach the store server: {_first_line(exc)}"
        ) from None
    if read_only:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
    for statement in SESSION:
        conn.execute(statement)
    return conn


# -- dump -------------------------------------------------------------------------------

# What a state cannot hold, asked of the catalog: (what it is, query of its names).
# Each query takes the schema's oid and returns one text per object.
_REFUSED = (
    ("view, materialized view, foreign or partitioned table, or composite type",
     "SELECT relname || ' (relkind ' || relkind::text || ')' FROM pg_class "
     "WHERE relnamespace = %s AND relkind NOT IN ('r', 'S', 'i')"),
    ("unlogged table",
     "SELECT relname FROM pg_class WHERE relnamespace = %s AND relkind = 'r' "
     "AND relpersistence <> 'p'"),
    ("table with row security",
     "SELECT relname FROM pg_class WHERE relnamespace = %s AND relrowsecurity"),
    ("function or procedure", "SELECT proname FROM pg_proc WHERE pronamespace = %s"),
    ("type",
     "SELECT typname FROM pg_type WHERE typnamespace = %s AND typrelid = 0 "
     "AND typcategory <> 'A'"),
    ("trigger",
     "SELECT c.relname || '.' || t.tgname FROM pg_trigger t JOIN pg_class c "
     "ON c.oid = t.tgrelid WHERE c.relnamespace = %s AND NOT t.tgisinternal"),
    ("rule",
     "SELECT c.relname || '.' || r.rulename FROM pg_rewrite r JOIN pg_class c "
     "ON c.oid = r.ev_class WHERE c.relnamespace = %s AND c.relkind = 'r'"),
    ("row security policy",
     "SELECT c.relname || '.' || p.polname FROM pg_policy p JOIN pg_class c "
     "ON c.oid = p.polrelid WHERE c.relnamespace = %s"),
    ("table inheritance",
     "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
     "WHERE c.relnamespace = %s"),
    ("check, exclusion or trigger constraint",
     "SELECT conname FROM pg_constraint WHERE connamespace = %s "
     "AND contype NOT IN ('p', 'u', 'f', 'n')"),
    ("foreign key that is deferrable, MATCH FULL, or leads out of the schema",
     "SELECT con.conname FROM pg_constraint con JOIN pg_class f ON f.oid = con.confrelid "
     "WHERE con.connamespace = %s AND con.contype = 'f' AND (con.condeferrable "
     "OR con.confmatchtype <> 's' OR f.relnamespace <> con.connamespace)"),
)  # fmt: skip

_NEXTVAL = re.compile(r"nextval\('(?:[^']|'')+'::regclass\)")
_QUOTED = re.compile(
    r"'(?P<v>(?:[^']|'')*)'::[a-z ]+(?:\(\d+(?:,\d+)?\))?(?: with(?:out)? time zone)?(?:\[\])?"
)
_NUMBER = re.compile(r"\(?(?P<v>-?\d+(?:\.\d+)?)\)?(?:::[a-z ]+)?")
_NULL = re.compile(r"NULL(?:::[a-z ]+(?:\(\d+(?:,\d+)?\))?(?:\[\])?)?")
_FUNCTION = {"now()": "now", "CURRENT_TIMESTAMP": "now", "gen_random_uuid()": "gen_random_uuid"}
_ACTIONS = {"a": "no action", "r": "restrict", "c": "cascade", "n": "set null", "d": "set default"}


class _Catalog:
    """What the schema holds, as the form's records (rows apart: they are streamed)."""

    def __init__(self, conn: Any, schema: str) -> None:
        self.conn = conn
        self.schema = schema
        row = conn.execute("SELECT oid FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
        if row is None:
            raise PgStateError(f"killpoint: schema {schema} is not on the server")
        self.oid = row[0]
        self.refuse()
        self.columns: dict[str, dict[int, str]] = {}  # table -> attnum -> column name
        self.sequences = self._sequences()
        self.tables = self._tables()
        self.keys, self.foreign_keys = self._constraints()
        self.indexes = self._indexes()

    def fail(self, what: str) -> PgStateError:
        return PgStateError(
            f"killpoint: schema {self.schema} holds {what}, which a corpus state cannot keep: a "
            "PostgreSQL state holds tables (columns of the types in docs/upgrades.md, their "
            "keys, plain indexes and rows) and sequences; record this runtime on SQLite"
        )

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return list(self.conn.execute(sql, params).fetchall())

    def refuse(self) -> None:
        for what, sql in _REFUSED:
            names = [str(r[0]) for r in self.query(sql, self.oid)]
            if names:
                raise self.fail(f"{what} {', '.join(sorted(names)[:3])}")

    def _sequences(self) -> list[form.Sequence]:
        from psycopg import sql as q

        found = []
        for oid, name, kind, start, inc, low, high, cycle in self.query(
            "SELECT c.oid, c.relname, format_type(s.seqtypid, NULL), s.seqstart, "
            "s.seqincrement, s.seqmin, s.seqmax, s.seqcycle FROM pg_sequence s JOIN pg_class c "
            "ON c.oid = s.seqrelid WHERE c.relnamespace = %s ORDER BY c.relname",
            self.oid,
        ):
            if kind not in form.SEQUENCE_TYPES:
                raise self.fail(f"sequence {name} of type {kind}")
            last, called = self.conn.execute(
                q.SQL("SELECT last_value, is_called FROM {}").format(
                    q.Identifier(self.schema, name)
                )
            ).fetchone()
            owner = self.query(
                "SELECT t.relname, a.attname, d.deptype FROM pg_depend d JOIN pg_class t ON "
                "t.oid = d.refobjid JOIN pg_attribute a ON a.attrelid = d.refobjid AND "
                "a.attnum = d.refobjsubid WHERE d.classid = 'pg_class'::regclass AND "
                "d.objid = %s AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')",
                oid,
            )
            owned = (str(owner[0][0]), str(owner[0][1])) if owner else None
            found.append(form.Sequence(str(name), kind, start, inc, low, high, cycle, last,
                                       called, owned))  # fmt: skip
        return found

    def _tables(self) -> list[form.Table]:
        found = []
        for oid, name in self.query(
            "SELECT oid, relname FROM pg_class WHERE relnamespace = %s AND relkind = 'r' "
            "ORDER BY relname",
            self.oid,
        ):
            columns = []
            numbers: dict[int, str] = {}
            for num, col, spelled, not_null, identity, generated, collated, expr, seq in self.query(
                "SELECT a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
                "a.attidentity, a.attgenerated, a.attcollation <> t.typcollation, "
                "pg_get_expr(d.adbin, d.adrelid), (SELECT s.relname FROM pg_depend dep JOIN "
                "pg_class s ON s.oid = dep.refobjid WHERE dep.classid = 'pg_attrdef'::regclass "
                "AND dep.objid = d.oid AND dep.refclassid = 'pg_class'::regclass AND "
                "s.relkind = 'S' AND s.relnamespace = %s LIMIT 1) FROM pg_attribute a JOIN pg_type "
                "t ON t.oid = a.atttypid LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND "
                "d.adnum = a.attnum WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped "
                "ORDER BY a.attnum",
                self.oid,
                oid,
            ):
                where = f"column {name}.{col}"
                kind = form.parse_type(str(spelled))
                if kind is None:
                    raise self.fail(f"{where} of type {spelled}")
                if identity or generated:
                    raise self.fail(f"{where}, an identity or generated column")
                if collated:
                    raise self.fail(f"{where} with a collation of its own")
                default = self.default(expr, seq, where)
                columns.append(form.Column(str(col), kind, bool(not_null), default))
                numbers[num] = str(col)
            self.columns[str(name)] = numbers
            found.append(form.Table(str(name), tuple(columns)))
        return found

    def default(self, expr: str | None, seq: str | None, where: str) -> form.Default | None:
        if expr is None or _NULL.fullmatch(expr):
            return None
        if _NEXTVAL.fullmatch(expr):
            if seq is None:
                raise self.fail(f"{where} whose default takes a sequence of another schema")
            return form.Default(sequence=str(seq))
        if expr in _FUNCTION:
            return form.Default(function=_FUNCTION[expr])
        for pattern in (_QUOTED, _NUMBER):
            m = pattern.fullmatch(expr)
            if m is not None:
                return form.Default(value=m["v"].replace("''", "'"))
        if expr in ("true", "false"):
            return form.Default(value=expr)
        raise self.fail(f"{where} with the default {expr}")

    def _names(self, table: str, numbers: list[int], what: str) -> tuple[str, ...]:
        known = self.columns.get(table, {})
        if not numbers or any(n not in known for n in numbers):
            raise self.fail(f"{what} over an expression")
        return tuple(known[n] for n in numbers)

    def _constraints(self) -> tuple[list[form.Key], list[form.ForeignKey]]:
        keys, foreign = [], []
        for name, kind, table, cols, ref, ref_cols, upd, dele in self.query(
            "SELECT con.conname, con.contype, c.relname, con.conkey, f.relname, con.confkey, "
            "con.confupdtype, con.confdeltype FROM pg_constraint con JOIN pg_class c ON c.oid = "
            "con.conrelid LEFT JOIN pg_class f ON f.oid = con.confrelid WHERE c.relnamespace = "
            "%s AND con.contype IN ('p', 'u', 'f') ORDER BY con.contype DESC, c.relname, "
            "con.conname",
            self.oid,
        ):
            what = f"constraint {table}.{name}"
            columns = self._names(str(table), list(cols), what)
            if kind == "f":
                referenced = self._names(str(ref), list(ref_cols), what)
                foreign.append(
                    form.ForeignKey(
                        str(table),
                        str(name),
                        columns,
                        str(ref),
                        referenced,
                        _ACTIONS[upd],
                        _ACTIONS[dele],
                    )
                )
            else:
                kind_name = "primary_key" if kind == "p" else "unique"
                keys.append(form.Key(kind_name, str(table), str(name), columns))
        return keys, foreign

    def _indexes(self) -> list[form.Key]:
        import json

        found = []
        for index, table, data, am, plain_classes, backs in self.query(
            "SELECT ic.relname, c.relname, row_to_json(i)::text, am.amname, "
            "(SELECT coalesce(bool_and(op.opcdefault), true) FROM unnest(i.indclass) oc "
            "JOIN pg_opclass op ON op.oid = oc), EXISTS (SELECT 1 FROM pg_constraint con "
            "WHERE con.conindid = i.indexrelid AND con.conrelid = i.indrelid AND con.contype "
            "IN ('p', 'u')) FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN "
            "pg_class c ON c.oid = i.indrelid JOIN pg_am am ON am.oid = ic.relam WHERE "
            "c.relnamespace = %s ORDER BY ic.relname",
            self.oid,
        ):
            row = json.loads(data)
            what = f"index {index}"
            options = _numbers(row.get("indoption"))
            if (
                row.get("indexprs") is not None
                or row.get("indpred") is not None
                or am != "btree"
                or not plain_classes
                or any(options)
                or row.get("indnkeyatts") != row.get("indnatts")
                or row.get("indnullsnotdistinct")
            ):
                raise self.fail(
                    f"{what}, which is not a plain ascending btree over columns (an expression, "
                    "a predicate, an operator class, INCLUDE or NULLS NOT DISTINCT)"
                )
            if backs:
                continue  # its constraint's record makes it
            numbers = _numbers(row.get("indkey"))
            columns = self._names(str(table), numbers, what)
            found.append(
                form.Key("index", str(table), str(index), columns, bool(row["indisunique"]))
            )
        return found


def _numbers(value: Any) -> list[int]:
    """An int2vector as row_to_json gives it (a JSON array; text on older servers)."""
    if isinstance(value, list):
        return [int(x) for x in value]
    return [int(x) for x in str(value or "").split()]


def dump(url: str, dest: Path, limit: int = files.FILE_BYTES) -> int:
    """Write the schema `url` selects to `dest` in the form (killpoint.corpus.pg_form); the
    bytes written. PgStateError when the schema holds what the form cannot, or passes
    `limit` (what a check would refuse is never written)."""
    from psycopg import sql as q

    schema = _schema(url)
    tmp = dest.with_name(dest.name + ".tmp")
    written = 0

    def put(out: Any, data: dict[str, Any]) -> None:
        nonlocal written
        chunk = form.line(data)
        written += len(chunk)
        if written > limit:
            raise PgStateError(
                f"killpoint: the state of schema {schema} passes {limit // files.MIB} MiB, the "
                "most a corpus file may hold"
            )
        out.write(chunk)

    try:
        with _connect(url, read_only=True) as conn, open(tmp, "wb") as out:
            catalog = _Catalog(conn, schema)
            put(out, form.header())
            head: list[form.Record] = [*catalog.sequences, *catalog.tables]
            for record in head:
                put(out, form.to_json(record))
            for table in catalog.tables:
                select = q.SQL("SELECT {} FROM {}").format(
                    q.SQL(", ").join(
                        q.SQL("{}::pg_catalog.text").format(q.Identifier(c.name))
                        for c in table.columns
                    ),
                    q.Identifier(schema, table.name),
                )
                with conn.cursor(name="killpoint_rows") as rows:
                    rows.execute(select)
                    for values in rows:
                        put(out, form.to_json(form.Row(table.name, tuple(values))))
            tail: list[form.Record] = [*catalog.keys, *catalog.indexes, *catalog.foreign_keys]
            for record in tail:
                put(out, form.to_json(record))
        try:  # what a check would refuse is never kept: read back as a check reads it
            form.check(tmp)
        except form.FormError as exc:
            raise PgStateError(
                f"killpoint: schema {schema} cannot be kept as a corpus state: {exc}"
            ) from None
        tmp.replace(dest)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if _is_psycopg_error(exc):
            raise PgStateError(
                f"killpoint: reading schema {schema} failed: {_first_line(exc)}"
            ) from None
        raise
    return written


def _is_psycopg_error(exc: BaseException) -> bool:
    import psycopg

    return isinstance(exc, psycopg.Error)


# -- restore ----------------------------------------------------------------------------


def _type(kind: form.ColumnType) -> Any:
    from psycopg import sql as q

    text = form.TYPES[kind.name][0]
    if kind.modifiers:
        text += "(" + ",".join(str(int(m)) for m in kind.modifiers) + ")"
    return q.SQL(text + ("[]" if kind.array else ""))


def _statements(
    schema: str, record: form.Record, conn: Any
) -> Iterator[tuple[Any, tuple[Any, ...]]]:
    """The statements that make `record` in `schema`, with their parameters."""
    from psycopg import sql as q

    def ident(*names: str) -> Any:
        return q.Identifier(schema, *names)

    def cols(names: tuple[str, ...]) -> Any:
        return q.SQL(", ").join(q.Identifier(n) for n in names)

    if isinstance(record, form.Sequence):
        yield (
            q.SQL(
                "CREATE SEQUENCE {} AS {} INCREMENT BY {} MINVALUE {} MAXVALUE {} START WITH {} "
                + ("CYCLE" if record.cycle else "NO CYCLE")
            ).format(
                ident(record.name), _type(form.ColumnType(record.type)),
                *(q.Literal(int(n)) for n in (record.increment, record.minimum, record.maximum,
                                               record.start)),
            ),
            (),
        )  # fmt: skip
        yield (
            q.SQL("SELECT pg_catalog.setval(%s::pg_catalog.regclass, %s, %s)"),
            (ident(record.name).as_string(conn), record.last_value, record.is_called),
        )
    elif isinstance(record, form.Table):
        parts = []
        for c in record.columns:
            part = q.SQL("{} {}").format(q.Identifier(c.name), _type(c.type))
            if c.not_null:
                part = q.SQL("{} NOT NULL").format(part)
            if c.default is not None:
                part = q.SQL("{} DEFAULT {}").format(part, _default(schema, c, conn))
            parts.append(part)
        yield q.SQL("CREATE TABLE {} ({})").format(ident(record.name), q.SQL(", ").join(parts)), ()
    elif isinstance(record, form.ForeignKey):
        yield (
            q.SQL(
                "ALTER TABLE {} ADD CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {} ({}) "
                f"ON UPDATE {form.ACTIONS[record.on_update]} "
                f"ON DELETE {form.ACTIONS[record.on_delete]}"
            ).format(
                ident(record.table), q.Identifier(record.name), cols(record.columns),
                ident(record.references), cols(record.referenced_columns),
            ),
            (),
        )  # fmt: skip
    elif isinstance(record, form.Row):
        raise form.FormError("a row is inserted by the restore's own statement per table")
    elif record.kind == "index":
        yield (
            q.SQL("CREATE " + ("UNIQUE " if record.unique else "") + "INDEX {} ON {} ({})").format(
                q.Identifier(record.name), ident(record.table), cols(record.columns)
            ),
            (),
        )
    else:
        kind = "PRIMARY KEY" if record.kind == "primary_key" else "UNIQUE"
        yield (
            q.SQL("ALTER TABLE {} ADD CONSTRAINT {} " + kind + " ({})").format(
                ident(record.table), q.Identifier(record.name), cols(record.columns)
            ),
            (),
        )


def _default(schema: str, column: form.Column, conn: Any) -> Any:
    from psycopg import sql as q

    default = column.default
    assert default is not None
    if default.sequence is not None:
        name = q.Identifier(schema, default.sequence).as_string(conn)
        return q.SQL("pg_catalog.nextval({}::pg_catalog.regclass)").format(q.Literal(name))
    if default.function is not None:
        return q.SQL(form.FUNCTIONS[default.function] + "()")
    return q.SQL("{}::{}").format(q.Literal(default.value), _type(column.type))


def restore(source: Path, url: str, stop: threading.Event | None = None) -> None:
    """Make, in the (fresh, empty) schema `url` selects, what the state file `source`
    holds: one transaction, every statement killpoint's own. FormError (a CorpusError)
    naming the file and line that the form or the server refuses; Interrupted once
    `stop` is set; PgStateError when the server cannot be reached."""
    import psycopg
    from psycopg import sql as q

    schema = _schema(url)
    number = 0
    conn = None
    try:
        conn = _connect(url, read_only=False)
        with conn:
            held = conn.execute(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s",
                (schema,),
            ).fetchone()
            if held is None or held[0]:
                raise PgStateError(
                    f"killpoint: schema {schema} is not empty; a state is restored only into a "
                    "cell's fresh schema"
                )
            inserts: dict[str, Any] = {}  # one INSERT per table (psycopg prepares it)
            owned: list[tuple[int, form.Sequence]] = []
            for number, record in form.read(source):
                if stop is not None and stop.is_set():
                    raise Interrupted()
                if isinstance(record, form.Table):
                    inserts[record.name] = _insert_of(schema, record)
                if isinstance(record, form.Sequence) and record.owned_by is not None:
                    owned.append((number, record))
                statements = (
                    [(inserts[record.table], record.values)]
                    if isinstance(record, form.Row)
                    else _statements(schema, record, conn)
                )
                for statement, params in statements:
                    conn.execute(statement, params or None)
            for at, seq in owned:
                number = at  # the line an error names
                assert seq.owned_by is not None
                conn.execute(
                    q.SQL("ALTER SEQUENCE {} OWNED BY {}").format(
                        q.Identifier(schema, seq.name), q.Identifier(schema, *seq.owned_by)
                    )
                )
    except psycopg.OperationalError as exc:
        raise PgStateError(
            f"killpoint: restoring into schema {schema} failed: {_first_line(exc)}"
        ) from None
    except psycopg.Error as exc:
        raise form.FormError(
            f"killpoint: {str(source)!r} line {number}: the server refuses it: "
            f"{_first_line(exc)}; the corpus holds a state killpoint did not record (record it "
            "again with `killpoint corpus record`)"
        ) from None
    finally:
        if conn is not None:
            conn.close()


def _insert_of(schema: str, table: form.Table) -> Any:
    from psycopg import sql as q

    if not table.columns:
        return q.SQL("INSERT INTO {} DEFAULT VALUES").format(q.Identifier(schema, table.name))
    return q.SQL("INSERT INTO {} ({}) VALUES ({})").format(
        q.Identifier(schema, table.name),
        q.SQL(", ").join(q.Identifier(c.name) for c in table.columns),
        q.SQL(", ").join(q.SQL("%s::{}").format(_type(c.type)) for c in table.columns),
    )


__all__ = ["FILE", "PgStateError", "dump", "restore"]
