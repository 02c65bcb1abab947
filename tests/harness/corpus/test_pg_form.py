"""The PostgreSQL state form: what killpoint writes reads back; anything else is refused at
its line and field, before a server sees it (no SQL in it can be anything but data)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from killpoint.corpus import pg_form as form

TABLE = {
    "kind": "table",
    "name": "runs",
    "columns": [
        {"name": "id", "type": "integer", "not_null": True, "default": {"sequence": "runs_id_seq"}},
        {"name": "status", "type": "character varying(16)", "not_null": True, "default": None},
        {"name": "meta", "type": "jsonb", "not_null": False, "default": {"value": "{}"}},
        {"name": "at", "type": "timestamp(3) with time zone", "not_null": False,
         "default": {"function": "now"}},
    ],
}  # fmt: skip
SEQUENCE = {
    "kind": "sequence", "name": "runs_id_seq", "type": "integer", "start": 1, "increment": 1,
    "min": 1, "max": 2147483647, "cycle": False, "last_value": 2, "is_called": True,
    "owned_by": ["runs", "id"],
}  # fmt: skip
ROW = {"kind": "row", "table": "runs", "values": ["1", "RUNNING", None, "2024-01-01 00:00:00+00"]}
KEY = {"kind": "primary_key", "table": "runs", "name": "runs_pkey", "columns": ["id"]}


def write(path: Path, *records: dict[str, Any], head: Any = None) -> Path:
    lines = [form.header() if head is None else head, *records]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def refusal(path: Path) -> str:
    with pytest.raises(form.FormError) as caught:
        form.check(path)
    return str(caught.value)


class TestWritten:
    def test_what_killpoint_writes_reads_back(self, tmp_path: Path) -> None:
        """Every kind of record, written by to_json, reads back equal."""
        records: list[form.Record] = [
            form.Sequence("s", "bigint", 1, 1, 1, 2**63 - 1, False, 5, True, ("t", "id")),
            form.Table(
                "t",
                (
                    form.Column("id", form.ColumnType("bigint"), True, form.Default(sequence="s")),
                    form.Column("name", form.ColumnType("character varying", (64,)), True),
                    form.Column("price", form.ColumnType("numeric", (10, 2))),
                    form.Column("tags", form.ColumnType("text", (), True)),
                    form.Column("at", form.ColumnType("time with time zone", (3,))),
                ),
            ),
            form.Row("t", ("1", "a'); DROP TABLE t; --", None, '{"x","y"}', None)),
            form.Key("primary_key", "t", "t_pkey", ("id",)),
            form.Key("index", "t", "t_name", ("name",), unique=False),
            form.ForeignKey("t", "t_self", ("id",), "t", ("id",), "cascade", "set null"),
        ]
        path = tmp_path / form.FILE
        path.write_bytes(
            form.line(form.header()) + b"".join(form.line(form.to_json(r)) for r in records)
        )
        assert [r for _, r in form.read(path)] == records

    @pytest.mark.parametrize(
        "spelled",
        ["integer", "character varying(128)", "numeric(10,2)", "numeric", "text[]",
         "timestamp(3) with time zone", "timestamp without time zone", "time with time zone",
         "double precision", "bytea", "jsonb", "uuid", "interval", "character(1)"],
    )  # fmt: skip
    def test_types_as_format_type_spells_them(self, spelled: str) -> None:
        kind = form.parse_type(spelled)
        assert kind is not None and kind.spelled() == spelled


class TestRefused:
    @pytest.mark.parametrize(
        "spelled",
        ["text; DROP TABLE x", "integer) ; COPY (SELECT 1) TO PROGRAM 'id' --", "public.mood",
         "regclass", "character varying(0)", "numeric(2,5)", "timestamp(9) with time zone",
         "int4", "text[][]x", ""],
    )  # fmt: skip
    def test_a_type_outside_the_table(self, tmp_path: Path, spelled: str) -> None:
        """A type is looked up in killpoint's own table; no other text is a type."""
        table = {**TABLE, "columns": [{**TABLE["columns"][1], "type": spelled}]}  # type: ignore[dict-item]
        text = refusal(write(tmp_path / form.FILE, table))
        assert "line 2" in text and "columns[0].type" in text

    def test_the_line_and_field_are_named(self, tmp_path: Path) -> None:
        path = write(
            tmp_path / form.FILE, SEQUENCE, TABLE, {**ROW, "values": ["1", None, None, None]}
        )
        text = refusal(path)
        assert str(path) in text and "line 4" in text and "values[1]" in text and "NOT NULL" in text

    @pytest.mark.parametrize(
        ("record", "field"),
        [
            ({**TABLE, "schema": "public"}, "'schema'"),
            ({**KEY, "kind": "trigger"}, "'kind'"),
            ({**KEY, "kind": "sql", "text": "COPY x TO PROGRAM 'id'"}, "'kind'"),
            ({**TABLE, "name": "a\nb"}, "'name'"),
            ({**TABLE, "name": "x" * 64}, "'name'"),
            ({**TABLE, "name": "a%s"}, "'name'"),
            ({**TABLE, "columns": [{**TABLE["columns"][0], "default": {"function": "pg_read_file"}}]},  # type: ignore[dict-item]
             "default.function"),
            ({**TABLE, "columns": [{**TABLE["columns"][0], "default": {"sql": "1"}}]},  # type: ignore[dict-item]
             "default"),
        ],
    )  # fmt: skip
    def test_a_field_outside_the_form(
        self, tmp_path: Path, record: dict[str, Any], field: str
    ) -> None:
        text = refusal(write(tmp_path / form.FILE, SEQUENCE, record))
        assert "line 3" in text and field in text

    def test_references_to_what_is_not_declared(self, tmp_path: Path) -> None:
        """A row, a key or a default names only what an earlier line declared."""
        assert "not declared above" in refusal(write(tmp_path / "a", ROW))
        assert "not declared above" in refusal(write(tmp_path / "b", TABLE))  # its sequence
        bad_key = {**KEY, "columns": ["nope"]}
        assert "no column 'nope'" in refusal(write(tmp_path / "c", SEQUENCE, TABLE, bad_key))
        owned = {**SEQUENCE, "owned_by": ["runs", "gone"]}
        assert "line 2" in refusal(write(tmp_path / "d", owned, TABLE))

    def test_the_order_of_kinds(self, tmp_path: Path) -> None:
        """Keys come after rows, rows after tables: a state restores in one pass."""
        text = refusal(write(tmp_path / form.FILE, SEQUENCE, TABLE, KEY, ROW))
        assert "line 5" in text and "after a key line" in text

    def test_the_header(self, tmp_path: Path) -> None:
        assert "header" in refusal(write(tmp_path / "a", TABLE, head={"form": "other/1"}))
        (tmp_path / "b").write_text("")
        assert "empty" in refusal(tmp_path / "b")
        (tmp_path / "c").write_text("\\! touch /tmp/x\n")
        assert "line 1" in refusal(tmp_path / "c")

    @pytest.mark.parametrize(
        "values", ['["1", "x", null, NaN]', '["1", "x", null, 5]', '["1", "x\\u0000y", null, null]']
    )
    def test_values_that_are_not_text(self, tmp_path: Path, values: str) -> None:
        """A value is a string (its text form) or null: no number, no NaN, no NUL."""
        path = write(tmp_path / form.FILE, SEQUENCE, TABLE)
        with path.open("a") as f:
            f.write(f'{{"kind": "row", "table": "runs", "values": {values}}}\n')
        assert "line 4" in refusal(path)

    def test_a_deep_line_is_refused_not_a_crash(self, tmp_path: Path) -> None:
        path = tmp_path / form.FILE
        path.write_text(json.dumps(form.header()) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
        assert "line 2" in refusal(path)
