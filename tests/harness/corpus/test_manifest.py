"""A corpus's manifest and states: written as docs/reference/corpus.md's schema says, refused in one
line when this killpoint cannot read them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from killpoint.corpus import manifest as mf


def write_manifest(folder: Path, **changes: Any) -> Path:
    data = mf.Manifest(
        schema=mf.SCHEMA,
        versions=mf.Versions("0.1.0", "3.11.7", "reference", {"SQLAlchemy": "2.1.9"}),
        store="sqlite",
        states=("research/tool-batch/after-checkpoint:1",),
        created="2026-12-02T04:00:00Z",
    ).to_json()
    data.update(changes)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / mf.MANIFEST).write_text(json.dumps(data))
    return folder


def conforms(data: Any, schema: dict[str, Any]) -> bool:
    """The subset of JSON Schema MANIFEST_SCHEMA uses (type, required, const, enum, items,
    properties, additionalProperties)."""
    types = {"object": dict, "array": list, "string": str}
    if "const" in schema and data != schema["const"]:
        return False
    if "enum" in schema and data not in schema["enum"]:
        return False
    if "type" in schema and not isinstance(data, types[schema["type"]]):
        return False
    if isinstance(data, dict):
        if any(k not in data for k in schema.get("required", ())):
            return False
        for k, sub in schema.get("properties", {}).items():
            if k in data and not conforms(data[k], sub):
                return False
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            return all(conforms(v, extra) for v in data.values())
    if isinstance(data, list) and "items" in schema:
        return all(conforms(x, schema["items"]) for x in data)
    return True


class TestManifest:
    def test_round_trip(self, tmp_path: Path) -> None:
        """What is written is read back, field by field."""
        m = mf.read_manifest(write_manifest(tmp_path / "c"))
        assert m.versions.libraries == {"SQLAlchemy": "2.1.9"}
        assert m.states == ("research/tool-batch/after-checkpoint:1",)

    def test_written_manifest_conforms_to_the_schema(self, tmp_path: Path) -> None:
        """The manifest a Manifest writes holds to the documented JSON schema; one that
        lacks a field does not."""
        data = json.loads((write_manifest(tmp_path / "c") / mf.MANIFEST).read_text())
        assert conforms(data, mf.MANIFEST_SCHEMA)
        del data["versions"]["libraries"]
        assert not conforms(data, mf.MANIFEST_SCHEMA)

    @pytest.mark.parametrize("schema", [0, 2, None, "1"])
    def test_other_schema_is_refused_in_one_line(self, tmp_path: Path, schema: Any) -> None:
        """A corpus from an older (or unknown) killpoint: one line naming its schema, the
        killpoint that made it, and the schema this one reads."""
        folder = write_manifest(tmp_path / "c", schema=schema)
        with pytest.raises(mf.CorpusError) as caught:
            mf.read_manifest(folder)
        text = str(caught.value)
        assert "\n" not in text
        assert f"schema {schema!r}" in text and "killpoint 0.1.0" in text
        assert f"reads schema {mf.SCHEMA}" in text

    def test_wrong_field_type_is_named(self, tmp_path: Path) -> None:
        """A malformed field is named with what came."""
        folder = write_manifest(tmp_path / "c", states="research")
        with pytest.raises(mf.CorpusError, match="field 'states' is 'research'"):
            mf.read_manifest(folder)

    def test_not_a_corpus(self, tmp_path: Path) -> None:
        with pytest.raises(mf.CorpusError, match="is missing: is this a corpus folder"):
            mf.read_manifest(tmp_path)

    def test_state_baseline_cannot_leave_the_corpus(self, tmp_path: Path) -> None:
        """A state's file names stay inside the corpus (a crafted corpus is bad input)."""
        info = mf.StateInfo(
            id="a/b/c", scenario="research", scenario_name="research", scenario_version="1",
            mode="tool-batch", point="after-checkpoint:1", run_index=0, run_started_at=0,
            checkpoints=1, baseline="../../etc/passwd",
        )  # fmt: skip
        (tmp_path / mf.STATE).write_text(json.dumps(info.to_json()))
        with pytest.raises(mf.CorpusError, match="leaves the corpus"):
            mf.read_state(tmp_path)

    def test_folder_names_are_stable(self) -> None:
        assert mf.folder_name("research/tool-batch/mid-batch:2:0") == (
            "research--tool-batch--mid-batch_2_0"
        )


def test_libraries_name_the_versions_imported() -> None:
    """Each library's version is the one this interpreter imports (the first on the
    path), for the adapter's modules and the distributions that extend them."""
    import importlib.metadata

    found = mf.libraries(["killpoint.adapters.reference", "sqlalchemy"])
    assert found["SQLAlchemy"] == importlib.metadata.version("SQLAlchemy")
    assert found["killpoint"] == importlib.metadata.version("killpoint")
    assert all(importlib.metadata.version(name) == v for name, v in found.items())


class TestStateIds:
    @pytest.mark.parametrize(
        "sid",
        ["research/tool-batch/x\n::add-mask::y", "a##[error]b", "a b", "", "x" * 301, "a\x1b[2J"],
    )
    def test_an_id_that_could_shape_output_is_refused(self, tmp_path: Path, sid: str) -> None:
        """A state id is a pytest node id and a line of output: only the characters of
        scenario references, modes and points."""
        folder = write_manifest(tmp_path / "c", states=[sid])
        with pytest.raises(mf.CorpusError, match=r"states\[0\].*is not a state id"):
            mf.read_manifest(folder)

    def test_an_id_listed_twice(self, tmp_path: Path) -> None:
        folder = write_manifest(tmp_path / "c", states=["a/b/c:1", "a/b/c:1"])
        with pytest.raises(mf.CorpusError, match="listed twice"):
            mf.read_manifest(folder)

    def test_a_manifest_that_is_a_link(self, tmp_path: Path) -> None:
        (tmp_path / "c").mkdir()
        (tmp_path / "c" / mf.MANIFEST).symlink_to("/etc/passwd")
        with pytest.raises(mf.CorpusError, match="symbolic link"):
            mf.read_manifest(tmp_path / "c")


class TestFieldsOfTheWrongShape:
    """Every field is checked to be of its type where it is read: a manifest of the wrong
    shape gets the one-line refusal naming the field, never an AttributeError."""

    @pytest.mark.parametrize(
        ("changes", "named"),
        [
            ({"versions": ["x"]}, "field 'versions' is ['x']; it must be an object"),
            ({"versions": "0.1.0"}, "field 'versions' is '0.1.0'; it must be an object"),
            ({"versions": {"killpoint": "0.1.0"}}, "field 'libraries' is missing"),
            (
                {"versions": {"killpoint": 1, "python": "3", "runtime": "r", "libraries": {}}},
                "versions: field 'killpoint' is 1; it must be a string",
            ),
            (
                {"versions": {"killpoint": "1", "python": "3", "runtime": "r", "libraries": []}},
                "field 'libraries' is []; it must be an object",
            ),
            (
                {"versions": {"killpoint": "1", "python": "3", "runtime": "r", "libraries": {"a": 2}}},
                "library 'a' has version 2; it must be a string",
            ),
            ({"store": ["sqlite"]}, "field 'store' is ['sqlite']; it must be one of 'sqlite'"),
            ({"states": {"a/b/c": 1}}, "field 'states' is {'a/b/c': 1}; it must be a list"),
            ({"states": [1]}, "field 'states' holds 1; it must be a list of state ids"),
            ({"created": 5}, "field 'created' is 5; it must be a string"),
            ({"states": "x" * 500}, "field 'states' is 'xxx"),
        ],
    )  # fmt: skip
    def test_is_refused_in_one_line_naming_the_field(
        self, tmp_path: Path, changes: dict[str, Any], named: str
    ) -> None:
        folder = write_manifest(tmp_path / "c", **changes)
        with pytest.raises(mf.CorpusError) as caught:
            mf.read_manifest(folder)
        text = str(caught.value)
        assert named in text
        assert "\n" not in text and len(text) < 300  # a value too long to quote is cut

    @pytest.mark.parametrize(
        "versions", [["x"], "0.1.0", {"killpoint": ["x"]}, {"killpoint": "1\n::error::x"}]
    )
    def test_another_schema_with_versions_of_the_wrong_shape(
        self, tmp_path: Path, versions: Any
    ) -> None:
        """The schema is checked first, and what made the corpus is named only when the
        manifest says so as a plain version."""
        folder = write_manifest(tmp_path / "c", schema=2, versions=versions)
        with pytest.raises(mf.CorpusError) as caught:
            mf.read_manifest(folder)
        assert "has schema 2 (made by an unknown killpoint)" in str(caught.value)
        assert "\n" not in str(caught.value)

    @pytest.mark.parametrize("schema", [True, 1.0])
    def test_a_schema_that_only_compares_equal_is_refused(
        self, tmp_path: Path, schema: Any
    ) -> None:
        folder = write_manifest(tmp_path / "c", schema=schema)
        with pytest.raises(mf.CorpusError, match=f"has schema {schema!r} "):
            mf.read_manifest(folder)

    @pytest.mark.parametrize(
        ("field", "value", "named"),
        [
            ("run_index", "0", "field 'run_index' is '0'; it must be a whole number"),
            ("checkpoints", True, "field 'checkpoints' is True; it must be a whole number"),
            ("tool_calls", "search", "field 'tool_calls' is 'search'; it must be a list"),
            ("tool_calls", [{"name": "x"}], "field 'tool_calls' holds {'name': 'x'}"),
            ("recorded_verdict", ["ok"], "field 'recorded_verdict' is ['ok']; it must be a string"),
            ("recorded_expected", "no", "field 'recorded_expected' is 'no'; it must be true or false"),
            ("bytes", "x", "field 'bytes' is 'x'; it must be a whole number"),
        ],
    )  # fmt: skip
    def test_a_state_field_of_the_wrong_type(
        self, tmp_path: Path, field: str, value: Any, named: str
    ) -> None:
        info = mf.StateInfo(
            id="a/b/c", scenario="research", scenario_name="research", scenario_version="1",
            mode="tool-batch", point="after-checkpoint:1", run_index=0, run_started_at=0,
            checkpoints=1, baseline="b.json",
        )  # fmt: skip
        data = {**info.to_json(), field: value}
        (tmp_path / mf.STATE).write_text(json.dumps(data))
        with pytest.raises(mf.CorpusError) as caught:
            mf.read_state(tmp_path)
        assert named in str(caught.value)
