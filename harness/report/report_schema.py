"""What a report file must look like before anything uses it: the type of every field
killpoint reads, at every level (the document, its cells, their findings and timelines,
groups, baselines, skips, the planned cells), and cell ids that parse and agree with their cell.

A field may be absent (older reports lack some); present, it has its type, or the file is
refused with one line naming the field, what it holds and what it should be.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from killpoint.errors import SchemaError

Spec = tuple[type | None, ...]
TEXT: Spec = (str,)
OPTIONAL_TEXT: Spec = (str, type(None))
WHOLE: Spec = (int,)
NUMBER: Spec = (int, float)
# Bigger than any time, count or size a campaign writes (1e12 s is 31,000 years).
LARGEST = 1e12
FLAG: Spec = (bool,)
LIST: Spec = (list,)
OBJECT: Spec = (dict,)

TOP: dict[str, Spec] = {
    "schema": TEXT,
    "command": TEXT,
    "seed": (int, type(None)),
    "runtime": TEXT,
    "store": TEXT,
    "scenarios": LIST,
    "modes": LIST,
    "points": TEXT,
    "depth": WHOLE,
    "versions": OBJECT,
    "interrupted": FLAG,
    "summary": OBJECT,
    "excluded_from_comparison": LIST,
    "groups": LIST,
    "causes": LIST,
    "accepted": OBJECT,
    "skipped": LIST,
    "baselines": LIST,
    "planned_cells": LIST,
    "cells": LIST,
    "shard": (dict, type(None)),
    "merged_from": LIST,
    "rerun_of": (dict, type(None)),
    "search": (dict, type(None)),
    "stopped": (dict, type(None)),
}
# `shard`: which shard of a campaign the report holds (killpoint.values.shard).
SHARD: dict[str, Spec] = {"index": WHOLE, "count": WHOLE}
# `rerun_of`: the earlier report a --rerun-failed reran, and what changed since.
RERUN_OF: dict[str, Spec] = {"report": TEXT, "still_failing": LIST, "now_passing": LIST}
# `stopped`: a campaign that stopped early (--fail-fast, --budget), and what it covered
# (killpoint.engine.stop_rule).
STOPPED: dict[str, Spec] = {
    "reason": TEXT,
    "seconds": NUMBER,
    "budget": (int, float, type(None)),
    "ran": WHOLE,
    "planned": WHOLE,
    "rows": LIST,
}
STOPPED_ROW: dict[str, Spec] = {
    "runtime": TEXT,
    "scenario": TEXT,
    "mode": TEXT,
    "store": TEXT,
    "cells": WHOLE,
    "ran": WHOLE,
    "planned": FLAG,
    "baseline_failed": FLAG,
    "kinds": LIST,
    "covered": LIST,
}
CELL: dict[str, Spec] = {
    "id": TEXT,
    "runtime": TEXT,
    "scenario": TEXT,
    "mode": TEXT,
    "store": TEXT,
    "schedule": LIST,
    "verdict": TEXT,
    "expected": FLAG,
    "duplicates": WHOLE,
    "bound": WHOLE,
    "seconds": NUMBER,
    "detail": TEXT,
    "findings": LIST,
    "sides": OBJECT,
    "diff": LIST,
    "store_at_crash": (dict, type(None)),
    "stderr_tail": TEXT,
    "timeline": LIST,
    "exit_codes": LIST,
    "replay": TEXT,
    "kept": OPTIONAL_TEXT,
    "accepted": FLAG,
}
FINDING: dict[str, Spec] = {
    "kind": TEXT,
    "severity": TEXT,
    "verdict": TEXT,
    "expected": FLAG,
    "sentence": TEXT,
    "path": TEXT,
    "tool": OPTIONAL_TEXT,
    "evidence": LIST,
    "group": OPTIONAL_TEXT,
    "sides": (list, type(None)),
    "facts": (dict, type(None)),
    "accepted": OPTIONAL_TEXT,
}
GROUP: dict[str, Spec] = {
    "key": TEXT,
    "kind": TEXT,
    "tool": OPTIONAL_TEXT,
    "path": OPTIONAL_TEXT,
    "severity": TEXT,
    "verdict": TEXT,
    "meaning": TEXT,
    "count": WHOLE,
    "cells": LIST,
    "rows": LIST,
    "example": TEXT,
    "example_cell": TEXT,
    "example_row": TEXT,
    "replay": TEXT,
    "accepted": OPTIONAL_TEXT,
    "failing": FLAG,
    "verdicts": OBJECT,
}
# A cause (killpoint.judge.causes): cells clustered by the groups that occur together.
CAUSE: dict[str, Spec] = {
    "key": TEXT,
    "name": TEXT,
    "kind": TEXT,
    "sentence": TEXT,
    "severity": TEXT,
    "verdicts": OBJECT,
    "count": WHOLE,
    "failing_cells": WHOLE,
    "low_cells": WHOLE,
    "accepted_cells": WHOLE,
    "rows": LIST,
    "points": OBJECT,
    "cells": LIST,
    "groups": LIST,
    "example": TEXT,
    "example_cell": TEXT,
    "replay": TEXT,
    "accepted": OPTIONAL_TEXT,
}
BASELINE: dict[str, Spec] = {
    "runtime": TEXT,
    "scenario": TEXT,
    "mode": TEXT,
    "store": TEXT,
    "checkpoints": WHOLE,
    "seconds": NUMBER,
    "problem": OPTIONAL_TEXT,
    "nondeterministic": OPTIONAL_TEXT,
    "writes_lag": FLAG,
    "trace_note": OPTIONAL_TEXT,
    "not_planned": FLAG,
    "cells_not_planned": (int, type(None)),
}
SKIPPED: dict[str, Spec] = {
    "runtime": TEXT,
    "scenario": TEXT,
    "mode": TEXT,
    "reason": TEXT,
    "point": OPTIONAL_TEXT,
    "store": TEXT,
}
ACCEPTED: dict[str, Spec] = {"reason": TEXT, "link": OPTIONAL_TEXT}
PLANNED: dict[str, Spec] = {
    "runtime": TEXT,
    "scenario": TEXT,
    "mode": TEXT,
    "store": TEXT,
    "schedules": (list, type(None)),
}


def _type_names(spec: Spec) -> str:
    names = {
        str: "text",
        int: "a whole number",
        float: f"a number (finite, at most {LARGEST:.0e} either side of 0)",
        bool: "true or false",
        list: "a list",
        dict: "an object",
        type(None): "null",
    }
    return " or ".join(dict.fromkeys(names.get(t, str(t)) for t in spec if t is not None))


def _fits(value: Any, spec: Spec) -> bool:
    if isinstance(value, bool) and bool not in spec:
        return False  # JSON's true is no number here
    number = isinstance(value, (int, float)) and float in spec
    if number and not (abs(value) <= LARGEST and math.isfinite(value)):
        return False  # a time of 1e305 s is no time, and a renderer's arithmetic would overflow
    return any(t is not None and isinstance(value, t) for t in spec)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_fields(data: Any, fields: Mapping[str, Spec], where: str) -> None:
    if not isinstance(data, dict):
        raise SchemaError(f"{where} should be an object, got {_shown(data)}")
    for key, spec in fields.items():
        if key in data and not _fits(data[key], spec):
            raise SchemaError(
                f"{where}: {key!r} should be {_type_names(spec)}, got {_shown(data[key])}"
            )


def _all(items: Any, fits: Spec, where: str) -> None:
    for n, item in enumerate(items):
        if not _fits(item, fits):
            raise SchemaError(f"{where}[{n}] should be {_type_names(fits)}, got {_shown(item)}")


def check_cell(cell: Any, where: str) -> None:
    from killpoint import kinds
    from killpoint.errors import PointError

    check_fields(cell, CELL, where)
    _all(cell.get("schedule", ()), TEXT, f"{where}: 'schedule'")
    _all(cell.get("exit_codes", ()), (int, type(None)), f"{where}: 'exit_codes'")
    for key in ("sides",):
        for k, v in (cell.get(key) or {}).items():
            if not isinstance(v, str):
                raise SchemaError(f"{where}: {key!r}[{k!r}] should be text, got {_shown(v)}")
    _all(cell.get("diff", ()), OBJECT, f"{where}: 'diff'")
    for n, finding in enumerate(cell.get("findings", ())):
        check_fields(finding, FINDING, f"{where}, finding {n}")
        _all(finding.get("evidence", ()), TEXT, f"{where}, finding {n}: 'evidence'")
    for n, event in enumerate(cell.get("timeline", ())):
        if (
            not isinstance(event, list)
            or not 2 <= len(event) <= 4
            or not _fits(event[0], NUMBER)
            or not all(isinstance(e, str) for e in event[1:])
        ):
            raise SchemaError(
                f"{where}, timeline event {n} should be [seconds, text, kind, lane] "
                f"(seconds a finite number under {LARGEST:.0e}), "
                f"got {_shown(event)}"
            )
    cell_id = cell.get("id")
    if isinstance(cell_id, str):
        try:
            parsed = kinds.parse_cell(cell_id)
        except PointError as exc:
            raise SchemaError(f"{where}: {str(exc).removeprefix('killpoint: ')}") from None
        named = {k: cell[k] for k in ("runtime", "scenario", "mode", "store") if k in cell}
        if any(getattr(parsed, k) != v for k, v in named.items()):
            raise SchemaError(f"{where}: id {cell_id!r} does not agree with the cell's fields")


def check_shard(shard: Any) -> None:
    """A shard names K of N, 1 <= K <= N."""
    from killpoint.errors import ShardError
    from killpoint.values.shard import Shard

    check_fields(shard, SHARD, "'shard'")
    try:
        Shard.from_json(shard)
    except ShardError as exc:
        raise SchemaError(f"'shard' {_shown(shard)}: {exc}") from None


def check_document(document: Any) -> None:
    """SchemaError naming the first field of the wrong type."""
    check_fields(document, TOP, "the document")
    _all(document.get("modes", ()), TEXT, "'modes'")
    _all(document.get("scenarios", ()), TEXT, "'scenarios'")
    _all(document.get("merged_from", ()), TEXT, "'merged_from'")
    if document.get("shard") is not None:
        check_shard(document["shard"])
    if document.get("stopped") is not None:
        check_fields(document["stopped"], STOPPED, "'stopped'")
        for n, row in enumerate(document["stopped"].get("rows", ())):
            check_fields(row, STOPPED_ROW, f"'stopped'['rows'][{n}]")
            for key in ("kinds", "covered"):
                _all(row.get(key, ()), TEXT, f"'stopped'['rows'][{n}][{key!r}]")
    if document.get("rerun_of") is not None:
        check_fields(document["rerun_of"], RERUN_OF, "'rerun_of'")
        for key in ("still_failing", "now_passing"):
            _all(document["rerun_of"].get(key, ()), TEXT, f"'rerun_of'[{key!r}]")
    _all(document.get("excluded_from_comparison", ()), TEXT, "'excluded_from_comparison'")
    for key, value in (document.get("versions") or {}).items():
        if not isinstance(value, str):
            raise SchemaError(f"'versions'[{key!r}] should be text, got {_shown(value)}")
    summary = document.get("summary") or {}
    for key, value in summary.items():
        if key == "by_verdict":
            check_fields(value, {}, "'summary'['by_verdict']")
            _all(value.values(), WHOLE, "'summary'['by_verdict']")
        elif not _fits(value, NUMBER):
            raise SchemaError(f"'summary'[{key!r}] should be a number, got {_shown(value)}")
    for n, group in enumerate(document.get("groups", ())):
        check_fields(group, GROUP, f"group {n}")
        for key in ("cells", "rows"):
            _all(group.get(key, ()), TEXT, f"group {n}: {key!r}")
    for n, cause in enumerate(document.get("causes", ())):
        check_fields(cause, CAUSE, f"cause {n}")
        for key in ("cells", "rows"):
            _all(cause.get(key, ()), TEXT, f"cause {n}: {key!r}")
        _all(cause.get("groups", ()), OBJECT, f"cause {n}: 'groups'")
        for key in ("verdicts", "points"):
            _all((cause.get(key) or {}).values(), WHOLE, f"cause {n}: {key!r}")
    for key, entry in (document.get("accepted") or {}).items():
        check_fields(entry, ACCEPTED, f"'accepted'[{key!r}]")
    for n, skip in enumerate(document.get("skipped", ())):
        check_fields(skip, SKIPPED, f"skip {n}")
    for n, base in enumerate(document.get("baselines", ())):
        check_fields(base, BASELINE, f"baseline {n}")
    for n, row in enumerate(document.get("planned_cells", ())):
        check_fields(row, PLANNED, f"planned row {n}")
        _all(row.get("schedules") or (), TEXT, f"planned row {n}: 'schedules'")
    for n, cell in enumerate(document.get("cells", ())):
        check_cell(cell, f"cell {n}")


__all__ = ["SchemaError", "check_cell", "check_document", "check_fields"]
