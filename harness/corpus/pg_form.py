"""A PostgreSQL state as data (`store.jsonl`): the tables of a cell's schema, their rows,
keys and indexes, and its sequences with their positions; read line by line and checked
field by field before anything reaches a server.

The file is JSON lines. The first is the header, `{"form": "killpoint.pg-state/1"}`;
each other line is one object whose `kind` says what it holds, in this order:

- `sequence`: name, type (smallint, integer or bigint), start, increment, min, max,
  cycle, last_value, is_called, owned_by (null or [table, column]);
- `table`: name, columns: each {name, type, not_null, default};
- `row`: table, values (one per column, in the table's order: the value's PostgreSQL
  text form, or null);
- `primary_key`, `unique`: table, name, columns;
- `index`: table, name, columns, unique (a plain ascending btree over columns);
- `foreign_key`: table, name, columns, references (a table of this state),
  referenced_columns, on_update, on_delete (no action, restrict, cascade, set null,
  set default).

A column's type is one of TYPES (a name as PostgreSQL's format_type spells it, with its
length or precision where it takes one, optionally an array: `character varying(128)`,
`numeric(10,2)`, `timestamp(3) with time zone`, `text[]`); its default is null, a
sequence of the state (`{"sequence": NAME}`), a constant in the type's text form
(`{"value": TEXT}`) or one of FUNCTIONS (`{"function": "now"}`).

Nothing in it is SQL: names are quoted as identifiers, values are bound as parameters,
types and functions are rendered from killpoint's own table of them, and every object
is made in the checking cell's own schema (killpoint.corpus.pg_state). What is not in
this form is refused, with the file, the line and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from killpoint.corpus import files
from killpoint.errors import FormError

FILE = "store.jsonl"
OLD_FILE = "store.sql"  # the SQL form of earlier killpoints: refused, never run
FORM = "killpoint.pg-state/1"

# name -> (SQL spelling, how many modifiers it takes at most, the largest modifier). The
# SQL spelling is killpoint's own; nothing of a file's type name is ever sent.
TYPES: dict[str, tuple[str, int, int]] = {
    "smallint": ("pg_catalog.int2", 0, 0),
    "integer": ("pg_catalog.int4", 0, 0),
    "bigint": ("pg_catalog.int8", 0, 0),
    "real": ("pg_catalog.float4", 0, 0),
    "double precision": ("pg_catalog.float8", 0, 0),
    "numeric": ("pg_catalog.numeric", 2, 1000),
    "boolean": ("pg_catalog.bool", 0, 0),
    "text": ("pg_catalog.text", 0, 0),
    "character varying": ("pg_catalog.varchar", 1, 10485760),
    "character": ("pg_catalog.bpchar", 1, 10485760),
    "bytea": ("pg_catalog.bytea", 0, 0),
    "json": ("pg_catalog.json", 0, 0),
    "jsonb": ("pg_catalog.jsonb", 0, 0),
    "uuid": ("pg_catalog.uuid", 0, 0),
    "date": ("pg_catalog.date", 0, 0),
    "time without time zone": ("pg_catalog.time", 1, 6),
    "time with time zone": ("pg_catalog.timetz", 1, 6),
    "timestamp without time zone": ("pg_catalog.timestamp", 1, 6),
    "timestamp with time zone": ("pg_catalog.timestamptz", 1, 6),
    "interval": ("pg_catalog.interval", 0, 0),
}
SEQUENCE_TYPES = ("smallint", "integer", "bigint")
FUNCTIONS = {"now": "pg_catalog.now", "gen_random_uuid": "pg_catalog.gen_random_uuid"}
ACTIONS = {
    "no action": "NO ACTION",
    "restrict": "RESTRICT",
    "cascade": "CASCADE",
    "set null": "SET NULL",
    "set default": "SET DEFAULT",
}
# A type as format_type spells it: "character varying(128)", "timestamp(3) with time
# zone", "numeric(10,2)[]". The name is looked up in TYPES; the modifiers are numbers.
_TYPE = re.compile(
    r"(?P<name>[a-z]+(?: [a-z]+)*?)(?:\((?P<mods>\d{1,8}(?:,\d{1,8})?)\))?"
    r"(?P<zone> with time zone| without time zone)?(?P<array>\[\])?"
)
NAME_BYTES = 63  # PostgreSQL's identifier length
MAX_COLUMNS = 1600  # PostgreSQL's own limit per table
INT8 = (-(2**63), 2**63 - 1)
ORDER = ("sequence", "table", "row", "key")  # a kind never follows a later one
KINDS = {
    "sequence": "sequence",
    "table": "table",
    "row": "row",
    "primary_key": "key",
    "unique": "key",
    "index": "key",
    "foreign_key": "key",
}


@dataclass(frozen=True)
class ColumnType:
    name: str  # a key of TYPES
    modifiers: tuple[int, ...] = ()
    array: bool = False

    def spelled(self) -> str:
        """As format_type spells it (and the form keeps it)."""
        base, zone = self.name, ""
        if self.name.startswith(("time ", "timestamp ")):
            base, _, rest = self.name.partition(" ")
            zone = f" {rest}"
        mods = f"({','.join(map(str, self.modifiers))})" if self.modifiers else ""
        return f"{base}{mods}{zone}{'[]' if self.array else ''}"


@dataclass(frozen=True)
class Default:
    sequence: str | None = None
    value: str | None = None
    function: str | None = None

    def to_json(self) -> dict[str, str]:
        for key in ("sequence", "value", "function"):
            if getattr(self, key) is not None:
                return {key: getattr(self, key)}
        raise FormError("killpoint: a column default that names no sequence, value or function")


@dataclass(frozen=True)
class Column:
    name: str
    type: ColumnType
    not_null: bool = False
    default: Default | None = None


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class Sequence:
    name: str
    type: str  # one of SEQUENCE_TYPES
    start: int
    increment: int
    minimum: int
    maximum: int
    cycle: bool
    last_value: int
    is_called: bool
    owned_by: tuple[str, str] | None = None


@dataclass(frozen=True)
class Row:
    table: str
    values: tuple[str | None, ...]


@dataclass(frozen=True)
class Key:
    """A primary key or unique constraint, or an index."""

    kind: str  # primary_key | unique | index
    table: str
    name: str
    columns: tuple[str, ...]
    unique: bool = True  # an index's; constraints are unique


@dataclass(frozen=True)
class ForeignKey:
    table: str
    name: str
    columns: tuple[str, ...]
    references: str
    referenced_columns: tuple[str, ...]
    on_update: str = "no action"
    on_delete: str = "no action"


Record = Sequence | Table | Row | Key | ForeignKey


# -- writing ----------------------------------------------------------------------------


def header() -> dict[str, Any]:
    return {"form": FORM}


def to_json(record: Record) -> dict[str, Any]:
    if isinstance(record, Sequence):
        return {
            "kind": "sequence",
            "name": record.name,
            "type": record.type,
            "start": record.start,
            "increment": record.increment,
            "min": record.minimum,
            "max": record.maximum,
            "cycle": record.cycle,
            "last_value": record.last_value,
            "is_called": record.is_called,
            "owned_by": list(record.owned_by) if record.owned_by else None,
        }
    if isinstance(record, Table):
        return {
            "kind": "table",
            "name": record.name,
            "columns": [
                {
                    "name": c.name,
                    "type": c.type.spelled(),
                    "not_null": c.not_null,
                    "default": c.default.to_json() if c.default else None,
                }
                for c in record.columns
            ],
        }
    if isinstance(record, Row):
        return {"kind": "row", "table": record.table, "values": list(record.values)}
    if isinstance(record, Key):
        data: dict[str, Any] = {
            "kind": record.kind,
            "table": record.table,
            "name": record.name,
            "columns": list(record.columns),
        }
        if record.kind == "index":
            data["unique"] = record.unique
        return data
    return {
        "kind": "foreign_key",
        "table": record.table,
        "name": record.name,
        "columns": list(record.columns),
        "references": record.references,
        "referenced_columns": list(record.referenced_columns),
        "on_update": record.on_update,
        "on_delete": record.on_delete,
    }


def line(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


# -- reading ----------------------------------------------------------------------------


def parse_type(text: str) -> ColumnType | None:
    """A column type from its spelling; None unless it is one of TYPES, its modifiers
    within their bounds."""
    m = _TYPE.fullmatch(text)
    if m is None:
        return None
    name = m["name"] + (m["zone"] or "")
    if name not in TYPES:
        return None
    _, most, largest = TYPES[name]
    mods = tuple(int(x) for x in m["mods"].split(",")) if m["mods"] else ()
    if len(mods) > most or any(x > largest for x in mods):
        return None
    if name in ("character varying", "character") and mods and mods[0] < 1:
        return None
    if name == "numeric" and mods and (mods[0] < 1 or (len(mods) == 2 and mods[1] > mods[0])):
        return None
    return ColumnType(name, mods, bool(m["array"]))


class _Reader:
    """Checks one file's records in order, keeping what later lines refer to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.number = 0
        self.stage = 0
        self.tables: dict[str, Table] = {}
        self.sequences: dict[str, tuple[int, Sequence]] = {}
        self.relations: set[str] = set()  # tables, sequences, indexes: one namespace
        self.constraints: set[tuple[str, str]] = set()  # (table, name)

    def fail(self, what: str) -> FormError:
        return FormError(
            f"killpoint: {str(self.path)!r} line {self.number}: {what}; a PostgreSQL state "
            f"holds only tables, rows, keys, indexes and sequences in the form {FORM} "
            "(see docs/upgrades.md): record the corpus again with `killpoint corpus record`"
        )

    # -- fields --

    def fields(self, data: dict[str, Any], required: tuple[str, ...]) -> None:
        extra = sorted(set(data) - set(required))
        if extra:
            raise self.fail(f"field {extra[0]!r} is not one a {data.get('kind')} line holds")
        for key in required:
            if key not in data:
                raise self.fail(f"field {key!r} is missing")

    def string(self, value: Any, field: str) -> str:
        if not isinstance(value, str):
            raise self.fail(f"field {field!r} is {_shown(value)}; expected a string")
        return value

    def name(self, value: Any, field: str) -> str:
        text = self.string(value, field)
        if not text or len(text.encode()) > NAME_BYTES or re.search(r"[\x00-\x1f\x7f%]", text):
            raise self.fail(
                f"field {field!r} is {_shown(text)}; a name is 1 to {NAME_BYTES} bytes without "
                "control characters or %"
            )
        return text

    def names(self, value: Any, field: str, least: int = 1) -> tuple[str, ...]:
        if not isinstance(value, list) or len(value) < least:
            raise self.fail(f"field {field!r} is {_shown(value)}; expected a list of names")
        found = tuple(self.name(v, f"{field}[{n}]") for n, v in enumerate(value))
        if len(set(found)) != len(found):
            raise self.fail(f"field {field!r} names a column twice")
        return found

    def integer(self, value: Any, field: str) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(f"field {field!r} is {_shown(value)}; expected a whole number")
        if not INT8[0] <= value <= INT8[1]:
            raise self.fail(f"field {field!r} is {value}, outside a bigint")
        return value

    def boolean(self, value: Any, field: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(f"field {field!r} is {_shown(value)}; expected true or false")
        return value

    def table_of(self, value: Any, field: str) -> Table:
        name = self.name(value, field)
        if name not in self.tables:
            raise self.fail(f"field {field!r}: table {name!r} is not declared above")
        return self.tables[name]

    def columns_of(self, table: Table, value: Any, field: str) -> tuple[str, ...]:
        found = self.names(value, field)
        known = {c.name for c in table.columns}
        for column in found:
            if column not in known:
                raise self.fail(f"field {field!r}: table {table.name!r} has no column {column!r}")
        return found

    def relation(self, name: str, field: str) -> None:
        if name in self.relations:
            raise self.fail(f"field {field!r}: {name!r} names a table, sequence or index already")
        self.relations.add(name)

    # -- records --

    def record(self, data: Any) -> Record:
        if not isinstance(data, dict):
            raise self.fail(f"holds {type(data).__name__}, not an object")
        kind = data.get("kind")
        if kind not in KINDS:
            raise self.fail(f"field 'kind' is {_shown(kind)}; expected one of {', '.join(KINDS)}")
        stage = ORDER.index(KINDS[kind])
        if stage < self.stage:
            raise self.fail(f"a {kind} line comes after a {ORDER[self.stage]} line")
        self.stage = stage
        if kind == "sequence":
            return self.sequence(data)
        if kind == "table":
            return self.table(data)
        if kind == "row":
            return self.row(data)
        if kind == "foreign_key":
            return self.foreign_key(data)
        return self.key(data, kind)

    def sequence(self, data: dict[str, Any]) -> Sequence:
        self.fields(data, ("kind", "name", "type", "start", "increment", "min", "max", "cycle",
                           "last_value", "is_called", "owned_by"))  # fmt: skip
        name = self.name(data["name"], "name")
        self.relation(name, "name")
        kind = data["type"]
        if kind not in SEQUENCE_TYPES:
            raise self.fail(f"field 'type' is {_shown(kind)}; expected {', '.join(SEQUENCE_TYPES)}")
        numbers = {k: self.integer(data[k], k) for k in ("start", "increment", "min", "max",
                                                        "last_value")}  # fmt: skip
        if numbers["increment"] == 0 or numbers["min"] > numbers["max"]:
            raise self.fail("fields 'increment', 'min' and 'max' describe no sequence")
        for key in ("start", "last_value"):
            if not numbers["min"] <= numbers[key] <= numbers["max"]:
                raise self.fail(f"field {key!r} is outside 'min' and 'max'")
        owned = data["owned_by"]
        if owned is not None:
            pair = self.names(owned, "owned_by", least=2)
            if len(pair) != 2:
                raise self.fail("field 'owned_by' is not [table, column]")
            owned = (pair[0], pair[1])
        found = Sequence(
            name, kind, numbers["start"], numbers["increment"], numbers["min"], numbers["max"],
            self.boolean(data["cycle"], "cycle"), numbers["last_value"],
            self.boolean(data["is_called"], "is_called"), owned,
        )  # fmt: skip
        self.sequences[name] = (self.number, found)
        return found

    def table(self, data: dict[str, Any]) -> Table:
        self.fields(data, ("kind", "name", "columns"))
        name = self.name(data["name"], "name")
        self.relation(name, "name")
        raw = data["columns"]
        if not isinstance(raw, list) or len(raw) > MAX_COLUMNS:
            raise self.fail(f"field 'columns' is not a list of at most {MAX_COLUMNS} columns")
        columns = []
        for n, col in enumerate(raw):
            where = f"columns[{n}]"
            if not isinstance(col, dict):
                raise self.fail(f"field {where!r} is {_shown(col)}; expected an object")
            extra = sorted(set(col) - {"name", "type", "not_null", "default"})
            if extra or set(col) != {"name", "type", "not_null", "default"}:
                field = extra[0] if extra else "name, type, not_null, default"
                raise self.fail(f"field {where!r}: expected exactly name, type, not_null and "
                                f"default ({field!r})")  # fmt: skip
            spelled = self.string(col["type"], f"{where}.type")
            kind = parse_type(spelled)
            if kind is None:
                raise self.fail(
                    f"field '{where}.type' is {_shown(spelled)}, not a type a state may hold "
                    f"({', '.join(TYPES)}, with a length or precision where it takes one, "
                    "or an array of one)"
                )
            columns.append(
                Column(
                    self.name(col["name"], f"{where}.name"),
                    kind,
                    self.boolean(col["not_null"], f"{where}.not_null"),
                    self.default(col["default"], f"{where}.default"),
                )
            )
        if len({c.name for c in columns}) != len(columns):
            raise self.fail("field 'columns' names a column twice")
        found = Table(name, tuple(columns))
        self.tables[name] = found
        return found

    def default(self, value: Any, field: str) -> Default | None:
        if value is None:
            return None
        if not isinstance(value, dict) or len(value) != 1:
            raise self.fail(f"field {field!r} is {_shown(value)}; expected null or one of "
                            "{sequence}, {value}, {function}")  # fmt: skip
        ((key, item),) = value.items()
        if key == "sequence":
            name = self.name(item, f"{field}.sequence")
            if name not in self.sequences:
                raise self.fail(
                    f"field '{field}.sequence': sequence {name!r} is not declared above"
                )
            return Default(sequence=name)
        if key == "value":
            return Default(value=self.value(item, f"{field}.value"))
        if key == "function":
            if item not in FUNCTIONS:
                raise self.fail(
                    f"field '{field}.function' is {_shown(item)}; expected {', '.join(FUNCTIONS)}"
                )
            return Default(function=item)
        raise self.fail(f"field {field!r} holds {key!r}; expected sequence, value or function")

    def value(self, item: Any, field: str) -> str:
        text = self.string(item, field)
        if "\x00" in text:
            raise self.fail(f"field {field!r} holds a NUL character, which PostgreSQL text cannot")
        return text

    def row(self, data: dict[str, Any]) -> Row:
        self.fields(data, ("kind", "table", "values"))
        table = self.table_of(data["table"], "table")
        values = data["values"]
        if not isinstance(values, list) or len(values) != len(table.columns):
            raise self.fail(
                f"field 'values' is not a list of {len(table.columns)} values (table "
                f"{table.name!r} has {len(table.columns)} columns)"
            )
        found: list[str | None] = []
        for n, (item, column) in enumerate(zip(values, table.columns, strict=True)):
            if item is None:
                if column.not_null:
                    raise self.fail(
                        f"field 'values[{n}]' is null; column {column.name!r} is NOT NULL"
                    )
                found.append(None)
            else:
                found.append(self.value(item, f"values[{n}]"))
        return Row(table.name, tuple(found))

    def key(self, data: dict[str, Any], kind: str) -> Key:
        required = ("kind", "table", "name", "columns", *(("unique",) if kind == "index" else ()))
        self.fields(data, required)
        table = self.table_of(data["table"], "table")
        name = self.name(data["name"], "name")
        # A key's index and an index are relations of the schema; a key is a constraint
        # of its table too.
        self.relation(name, "name")
        if kind != "index":
            self.constraint(table.name, name)
        columns = self.columns_of(table, data["columns"], "columns")
        unique = self.boolean(data["unique"], "unique") if kind == "index" else True
        return Key(kind, table.name, name, columns, unique)

    def constraint(self, table: str, name: str) -> None:
        if (table, name) in self.constraints:
            raise self.fail(f"field 'name': table {table!r} has a constraint {name!r} already")
        self.constraints.add((table, name))

    def foreign_key(self, data: dict[str, Any]) -> ForeignKey:
        self.fields(data, ("kind", "table", "name", "columns", "references",
                           "referenced_columns", "on_update", "on_delete"))  # fmt: skip
        table = self.table_of(data["table"], "table")
        name = self.name(data["name"], "name")
        self.constraint(table.name, name)
        columns = self.columns_of(table, data["columns"], "columns")
        target = self.table_of(data["references"], "references")
        referenced = self.columns_of(target, data["referenced_columns"], "referenced_columns")
        if len(referenced) != len(columns):
            raise self.fail("fields 'columns' and 'referenced_columns' differ in length")
        actions = []
        for field in ("on_update", "on_delete"):
            if data[field] not in ACTIONS:
                raise self.fail(
                    f"field {field!r} is {_shown(data[field])}; expected {', '.join(ACTIONS)}"
                )
            actions.append(data[field])
        return ForeignKey(table.name, name, columns, target.name, referenced, *actions)

    def finish(self) -> None:
        """What a line may refer to further down: a sequence's owning column."""
        for number, seq in self.sequences.values():
            if seq.owned_by is None:
                continue
            self.number = number
            table, column = seq.owned_by
            if table not in self.tables or column not in {
                c.name for c in self.tables[table].columns
            }:
                raise self.fail(f"field 'owned_by': no column {column!r} in a table {table!r}")


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _constant(text: str) -> Any:
    raise FormError(f"{text} is not a JSON number a state holds")


def read(path: Path) -> Iterator[tuple[int, Record]]:
    """The records of a state file (line number, record), each checked before it is
    given; FormError (a CorpusError) at the first line that is not the form, naming the
    file, the line and the field. The file is read as data, within files.FILE_BYTES."""
    reader = _Reader(path)
    seen_header = False
    for number, raw in files.read_lines(path):
        reader.number = number
        if not raw.strip():
            raise reader.fail("the line is empty")
        try:
            data = json.loads(raw.decode("utf-8"), parse_constant=_constant)
        except RecursionError:
            raise reader.fail("the line nests too deep") from None
        except (UnicodeDecodeError, ValueError) as exc:
            raise reader.fail(f"not JSON ({exc})") from None
        if not seen_header:
            if data != header():
                raise reader.fail(f"the first line is not the header {json.dumps(header())}")
            seen_header = True
            continue
        yield number, reader.record(data)
    if not seen_header:
        reader.number = 1
        raise reader.fail(f"the file is empty; its first line is the header {json.dumps(header())}")
    reader.finish()


def check(path: Path) -> int:
    """Read the whole file (nothing kept): its number of records; FormError at the first
    line that is not the form."""
    return sum(1 for _ in read(path))


__all__ = [
    "FILE",
    "FORM",
    "FUNCTIONS",
    "OLD_FILE",
    "TYPES",
    "Column",
    "ColumnType",
    "Default",
    "ForeignKey",
    "FormError",
    "Key",
    "Record",
    "Row",
    "Sequence",
    "Table",
    "check",
    "header",
    "line",
    "parse_type",
    "read",
    "to_json",
]
