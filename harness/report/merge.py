"""The shards of one campaign merged into the report an unsharded run would have written.

Each shard ran every row's baseline (a row's points are read from its baseline) and its
own cells (killpoint.values.shard); so the cells are the union, the baselines, skips and
row-level groups the same in every shard (taken once), and the groups, the summary and
the accepted groups' standing are computed again from the merged cells by the functions
that compute them for a campaign (document.assemble). Shards of different campaigns are
refused before anything is written: a different seed samples other points, another
version judges differently, and their union would be a report of no campaign. A shard
that lists a cell twice is refused too (its cells would be counted twice), and the
shards are read only while their sizes add up to at most `limit` (MERGE_BYTES unless
the caller raises it): each file is bounded by itself, but not their number.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from killpoint.engine.campaign import sorted_cells
from killpoint.engine.stop_rule import RowCoverage, Stopped, coverage
from killpoint.errors import MergeError
from killpoint.report.document import assemble
from killpoint.report.planned import ROW_FIELDS, planned_json, read_planned
from killpoint.values.cell import CellResult, Row
from killpoint.values.input_files import MERGE_BYTES, MIB
from killpoint.values.sentences import count as count_of
from killpoint.values.sentences import plural_of
from killpoint.values.shard import Shard

# What makes two shards the same campaign: each must be equal in every shard.
SAME = (
    "runtime",
    "store",
    "seed",
    "scenarios",
    "modes",
    "points",
    "depth",
    "versions",
    "excluded_from_comparison",
)


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def difference(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """The first thing that tells campaign `b` from `a`, in words; None: the same."""
    for key in SAME:
        if a.get(key) != b.get(key):
            if key == "versions" and isinstance(a.get(key), dict) and isinstance(b.get(key), dict):
                va, vb = a[key], b[key]
                for name in sorted(set(va) | set(vb)):
                    if va.get(name) != vb.get(name):
                        return f"{name} {va.get(name) or 'absent'} vs {vb.get(name) or 'absent'}"
            return f"{key} {_shown(a.get(key))} vs {_shown(b.get(key))}"
    accepted_a = {k: v.get("reason") for k, v in (a.get("accepted") or {}).items()}
    accepted_b = {k: v.get("reason") for k, v in (b.get("accepted") or {}).items()}
    if accepted_a != accepted_b:
        return "the accepted groups (--accept) differ"
    return None


def shard_of(document: dict[str, Any], name: str) -> Shard:
    data = document.get("shard")
    if data is None:
        raise MergeError(
            f"killpoint: {name} is not a shard (written without --shard); merge the JSON "
            "of `killpoint matrix --shard K/N` (or pytest --crash-shard K/N)"
        )
    return Shard.from_json(data)


def check(documents: Sequence[tuple[str, dict[str, Any]]], *, partial: bool) -> list[Shard]:
    """The shards missing (empty unless `partial`); MergeError on anything that stops a
    merge: no shard, two counts, a shard given twice, another campaign, a missing shard."""
    if not documents:
        raise MergeError("killpoint: give `merge` the JSON of every shard")
    shards = [(name, shard_of(doc, name)) for name, doc in documents]
    first_name, first = documents[0]
    count = shards[0][1].count
    seen: dict[int, str] = {}
    for (name, shard), (_, doc) in zip(shards, documents, strict=True):
        if shard.count != count:
            raise MergeError(
                f"killpoint: {name} is shard {shard} but {first_name} is shard "
                f"{shards[0][1]}: shards of one campaign share N; give the {count_of(count, 'shard')} of one run"
            )
        if shard.index in seen:
            raise MergeError(
                f"killpoint: shard {shard} is given twice ({seen[shard.index]} and {name}); "
                "give each shard once"
            )
        seen[shard.index] = name
        why = difference(first, doc)
        if why is not None:
            raise MergeError(
                f"killpoint: {name} is another campaign than {first_name} ({why}); merge the "
                "shards of one run (same seed, runtime, versions and selection)"
            )
        ids: set[str] = set()
        for c in doc["cells"]:
            if c["id"] in ids:
                raise MergeError(
                    f"killpoint: {name} lists cell {c['id']!r} more than once; a shard holds "
                    "each of its cells once: give the JSON as `--shard` wrote it"
                )
            ids.add(c["id"])
        strays = [c["id"] for c in doc["cells"] if not shard.owns(c["id"])]
        if strays:
            raise MergeError(
                f"killpoint: {name} says it is shard {shard} but holds cell {strays[0]!r} of "
                "another shard; give the JSON as `--shard` wrote it"
            )
    missing = [Shard(k, count) for k in range(1, count + 1) if k not in seen]
    if missing and not partial:
        have = ", ".join(str(s) for _, s in sorted(shards, key=lambda p: p[1].index))
        raise MergeError(
            f"killpoint: {plural_of('shard', missing)} {', '.join(str(s) for s in missing)} missing "
            f"(given: {have}); "
            "give every shard's JSON, or --partial to merge what is here (the report says "
            "which are missing)"
        )
    return missing


def _once(items: Sequence[dict[str, Any]], key: Any) -> list[dict[str, Any]]:
    found: dict[Any, dict[str, Any]] = {}
    for item in items:
        found.setdefault(key(item), item)
    return list(found.values())


def _row_groups(documents: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The row-level groups of every shard, each once, with the rows of all."""
    from killpoint.values.findings import RANK, SEVERITIES

    merged: dict[str, dict[str, Any]] = {}
    for doc in documents:
        for group in doc.get("without_crash", []):
            kept = merged.setdefault(group["key"], {**group, "rows": []})
            kept["rows"] += [r for r in group.get("rows", []) if r not in kept["rows"]]
            kept["count"] = len(kept["rows"])
    return sorted(
        merged.values(),
        key=lambda g: (RANK[g["verdict"]], SEVERITIES.index(g["severity"]), -g["count"], g["key"]),
    )


def merge(
    documents: Sequence[tuple[str, dict[str, Any]]],
    *,
    command: str,
    partial: bool = False,
) -> dict[str, Any]:
    """One document from the shards' (name, document) pairs; MergeError if they are not
    the shards of one campaign."""
    missing = check(documents, partial=partial)
    docs = [doc for _, doc in documents]
    first = docs[0]
    top = {
        **{k: first.get(k) for k in ("schema", "seed", "runtime", "store", "modes", "points")},
        "depth": first.get("depth"),
        "command": command,
        "scenarios": first.get("scenarios"),
        "versions": first.get("versions", {}),
        "excluded_from_comparison": first.get("excluded_from_comparison", []),
        "accepted": {
            k: {"reason": v.get("reason"), "link": v.get("link")}
            for k, v in (first.get("accepted") or {}).items()
        },
        "narrowed_by": [
            *_narrowed_by(first),
            *(
                [f"{plural_of('shard', missing)} {', '.join(str(s) for s in missing)} not merged"]
                if missing
                else []
            ),
        ],
    }
    planned = {
        "without_crash": _row_groups(docs),
        "skipped": _once(
            [s for d in docs for s in d.get("skipped", [])],
            lambda s: json.dumps(s, sort_keys=True),
        ),
        "baselines": _once(
            [b for d in docs for b in d.get("baselines", [])],
            lambda b: (b.get("runtime"), b.get("scenario"), b.get("mode"), b.get("store")),
        ),
    }
    cells = sorted_cells(CellResult.from_json(c) for d in docs for c in d["cells"])
    plan = _plan(docs)
    if plan is not None:
        planned["planned_cells"] = planned_json(plan)
    document = assemble(
        top,
        planned,
        cells,
        count=sum(int(d.get("summary", {}).get("planned", 0)) for d in docs),
        # The shards ran side by side: the campaign took as long as its slowest shard.
        seconds=max(float(d.get("summary", {}).get("seconds", 0.0)) for d in docs),
        interrupted=any(d.get("interrupted") for d in docs),
        leftover_stores=[x for d in docs for x in d.get("leftover_stores", [])],
        stopped=_stopped(docs, plan, cells, planned["baselines"]),
    )
    document["merged_from"] = [name for name, _ in documents]
    return document


def _plan(documents: Sequence[dict[str, Any]]) -> dict[Row, tuple[str, ...] | None] | None:
    """The campaign's plan, each shard's cells of a row together (None: a shard kept no
    plan, so the merge cannot tell a cell not run from one not applicable). A row one
    shard stopped before planning is unplanned in the merge too: its cells of that shard
    are not known."""
    plans = [read_planned(d) for d in documents]
    if any(p is None for p in plans):
        return None
    merged: dict[Row, tuple[str, ...] | None] = {}
    for one in plans:
        for row, schedules in (one or {}).items():
            if row in merged and merged[row] is None:
                continue
            merged[row] = None if schedules is None else (*(merged.get(row) or ()), *schedules)
    return merged


def _stopped(
    documents: Sequence[dict[str, Any]],
    plan: Mapping[Row, Sequence[str] | None] | None,
    cells: Sequence[CellResult],
    baselines: Sequence[dict[str, Any]],
) -> dict[str, Any] | None:
    """How the merged campaign stopped early, if a shard did (--fail-fast, --budget): the
    shards' reasons, and what all of them covered, from the merged plan and cells. A
    shard that ran every cell is in the coverage too, so the merge says what the campaign
    covered, not what its stopped shards did."""
    stops = [
        Stopped.from_json(d["stopped"]) for d in documents if isinstance(d.get("stopped"), Mapping)
    ]
    if not stops:
        return None
    reasons = list(dict.fromkeys(s.reason for s in stops))
    if plan is not None:
        failed = {
            tuple(str(b.get(k, "")) for k in ROW_FIELDS) for b in baselines if b.get("not_planned")
        }
        rows = coverage(plan, cells, not_planned=failed)  # type: ignore[arg-type]
    else:  # shards that kept no plan: what the stopped ones say of their own cells
        rows = _summed([r for s in stops for r in s.rows])
    stopped = Stopped(
        reason=reasons[0] if len(reasons) == 1 else ", ".join(reasons),
        seconds=max(s.seconds for s in stops),
        budget=next((s.budget for s in stops if s.budget is not None), None),
        rows=rows,
    )
    return {**stopped.to_json(), "sentence": stopped.sentence()}


def _summed(rows: Sequence[RowCoverage]) -> list[RowCoverage]:
    """The shards' coverage of each row added up."""
    found: dict[Row, RowCoverage] = {}
    for r in rows:
        had = found.get(r.row)
        if had is None:
            found[r.row] = RowCoverage(**vars(r))
            continue
        had.kinds = tuple(dict.fromkeys([*had.kinds, *r.kinds]))
        had.covered = tuple(dict.fromkeys([*had.covered, *r.covered]))
        had.cells, had.ran = had.cells + r.cells, had.ran + r.ran
        had.planned = had.planned and r.planned
        had.baseline_failed = had.baseline_failed or r.baseline_failed
    return list(found.values())


def _narrowed_by(document: dict[str, Any]) -> list[str]:
    """What narrowed the shards' campaign, from the parts their `narrowed` text names (a
    shard's own interruption is counted by `interrupted`)."""
    text = document.get("narrowed") or ""
    return [p for p in text.split("; ") if p.startswith("--")]


def read_shards(
    paths: Sequence[Path], limit: int = MERGE_BYTES
) -> list[tuple[str, dict[str, Any]]]:
    """Each shard's document, after their sizes are added up (before any is read):
    MergeError naming the total and the limit when they pass it."""
    from killpoint.errors import ReportError
    from killpoint.report.document import read_json

    total = 0
    for path in paths:
        try:
            total += path.stat().st_size
        except OSError:
            continue  # read_json says why it cannot be read
    if total > limit:
        raise MergeError(
            f"killpoint: the {count_of(len(paths), 'shard file')} given hold {total / MIB:.1f} MiB, "
            f"over the {limit / MIB:.0f} MiB merge reads; give the shards of one campaign, "
            "or raise the limit with --max-input-mb"
        )
    found = []
    for path in paths:
        try:
            found.append((str(path), read_json(path)))
        except ReportError as exc:
            raise MergeError(str(exc)) from None
    return found


__all__ = ["SAME", "MergeError", "check", "difference", "merge", "read_shards"]
