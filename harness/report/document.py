"""The campaign's JSON document: built from a result, redacted, written whole or not at all,
and read back (checked to be a killpoint report before anything uses it)."""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from killpoint.adapters.registry import BUILTINS
from killpoint.engine.campaign import CampaignResult, summarize
from killpoint.engine.cell_log import heads, select
from killpoint.engine.options import CampaignConfig
from killpoint.errors import ReportError
from killpoint.judge.causes import find_causes
from killpoint.judge.groups import NO_LONGER, NOT_EXERCISED, Accepted, group_findings, met_by
from killpoint.report.planned import not_planned_json, planned_json
from killpoint.report.redact import redact, redact_argv, redact_tree
from killpoint.report.targets import Target, fallback_path, write_atomically
from killpoint.report.text import FIELD_LIMIT
from killpoint.values.cell import CellResult

SCHEMA = "killpoint.matrix/2"
READABLE = ("killpoint.matrix/1", "killpoint.matrix/2")


def versions(runtime: str = "reference", store: str = "sqlite") -> dict[str, str]:
    """The versions of what the campaign imported: Python, killpoint, the campaign's
    runtime's distributions (a built-in's list, or the distribution a user's adapter
    module comes from), and the PostgreSQL driver when the store is a server; not every
    runtime library that happens to be installed."""
    found = {"python": platform.python_version()}
    builtin = BUILTINS.get(runtime)
    if builtin is not None:
        names: tuple[str, ...] = builtin.distributions
    else:
        top = runtime.partition(":")[0].split(".")[0]
        names = tuple(metadata.packages_distributions().get(top, ()))
    if store != "sqlite":
        names += ("psycopg",)
    for dist in dict.fromkeys(("killpoint", *names)):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return found


def _excluded(runtime: str) -> list[str]:
    from killpoint.adapters.registry import load_adapter

    try:
        return list(load_adapter(runtime).excluded)
    except Exception:  # an adapter that cannot load has no exclusions to show
        return []


def narrowing(config: CampaignConfig) -> list[str]:
    """How the configuration narrows the campaign (points, scenarios, modes)."""
    parts = []
    if str(config.points) != "all":
        parts.append(f"--points {config.points}")
    if config.scenarios:
        parts.append(f"--scenarios {','.join(config.scenarios)}")
    if config.modes:
        parts.append(f"--modes {','.join(config.modes)}")
    return parts


def narrowed_text(
    parts: Sequence[str], *, interrupted: bool, rerun: bool, stopped: str | None = None
) -> str | None:
    """Why a campaign may not have run every cell its runtime offers (None: it did): an
    accepted group it did not meet was then not exercised, not fixed. `stopped`: how a
    campaign that stopped early (--fail-fast, --budget) says so."""
    why = [
        *(["it was interrupted"] if interrupted else []),
        *([stopped] if stopped else []),
        *(["it reran the failed cells of a report"] if rerun else []),
        *parts,
    ]
    return "; ".join(why) or None


def narrowed(result: CampaignResult, rerun: bool = False) -> str | None:
    stopped = result.stopped.sentence() if result.stopped is not None else None
    return narrowed_text(
        narrowing(result.config), interrupted=result.interrupted, rerun=rerun, stopped=stopped
    )


def head(
    config: CampaignConfig,
    seed: int,
    accepted: Mapping[str, Accepted],
    command: list[str] | None = None,
) -> dict[str, Any]:
    """What the document says of the campaign before any cell ran: its configuration."""
    return {
        "schema": SCHEMA,
        "command": " ".join(redact_argv(command if command is not None else sys.argv)),
        "seed": seed,
        "runtime": config.runtime,
        "store": "sqlite" if config.store == "sqlite" else "postgresql",
        "scenarios": list(config.scenario_names()),
        "modes": list(config.mode_names()),
        "points": str(config.points),
        "depth": config.depth,
        "versions": versions(
            config.runtime, "sqlite" if config.store == "sqlite" else "postgresql"
        ),
        "excluded_from_comparison": _excluded(config.runtime),
        "accepted": {k: {"reason": a.reason, "link": a.link} for k, a in accepted.items()},
        "narrowed_by": narrowing(config),
        "shard": config.shard.to_json() if config.shard is not None else None,
    }


def plan(result: CampaignResult, store: str) -> dict[str, Any]:
    """What the document says once the baselines ran: what their runs showed, the rows
    skipped, the baselines, and the cells planned (what tells "not run" from "n/a")."""
    return {
        **({"planned_cells": planned_json(result.plan)} if result.plan else {}),
        "without_crash": [g.to_json() for g in result.row_groups()],
        "skipped": [{**vars(s), "store": store} for s in result.skipped],
        "baselines": [
            {
                "runtime": b.runtime,
                "scenario": b.scenario,
                "mode": b.mode,
                "store": b.store,
                "checkpoints": b.checkpoints,
                "seconds": round(b.seconds, 3),
                "problem": b.problem,
                "nondeterministic": b.nondeterministic,
                "writes_lag": b.writes_lag,
                "trace_note": b.trace_note,
                "findings": b.findings,
                **not_planned_json(result.not_planned, b.row),
            }
            for b in result.baselines
        ],
    }


def assemble(
    top: dict[str, Any],
    planned: dict[str, Any],
    cells: Sequence[CellResult],
    *,
    count: int,
    seconds: float,
    interrupted: bool,
    leftover_stores: Sequence[dict[str, Any]] = (),
    rerun: bool = False,
    stopped: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole document from its parts: `top` (head()), `planned` (plan()), the cells in
    report order, how many were planned (`count`). A campaign's own result and a journal
    left behind are written by this one function."""
    order = ("schema", "command", "seed", "runtime", "store", "modes", "points", "depth")
    document = {k: top[k] for k in order}
    if top.get("scenarios") is not None:
        document["scenarios"] = top["scenarios"]
    if top.get("shard") is not None:  # one shard of a campaign (killpoint.values.shard)
        document["shard"] = top["shard"]
    document["versions"] = top["versions"]
    document["interrupted"] = interrupted
    if stopped is not None:  # --fail-fast, --budget: why, and what it covered
        document["stopped"] = dict(stopped)
    rows = planned.get("without_crash", [])
    failing_rows = sum(1 for g in rows if g["verdict"] != "ok" and not g.get("accepted"))
    document["summary"] = summarize(cells, count, seconds, failing_rows)
    document["excluded_from_comparison"] = top["excluded_from_comparison"]
    groups = group_findings(heads(cells))
    document["groups"] = [g.to_json() for g in groups]
    # Whole cells for the causes' sentences (the store at the crash), unexpected ones only.
    found = find_causes(select(cells, lambda c: not c.expected), groups=groups)
    document["causes"] = [c.to_json() for c in found]
    document["without_crash"] = rows
    narrow = narrowed_text(
        top.get("narrowed_by", []),
        interrupted=interrupted,
        rerun=rerun,
        stopped=stopped.get("sentence") if stopped is not None else None,
    )
    document["narrowed"] = narrow
    met = {g["key"] for g in [*document["groups"], *rows]}
    document["accepted"] = {
        key: {
            **entry,
            "this_campaign": "met"
            if met_by(key, met)
            else (NOT_EXERCISED if narrow else NO_LONGER),
        }
        for key, entry in top["accepted"].items()
    }
    document["skipped"] = planned.get("skipped", [])
    document["baselines"] = planned.get("baselines", [])
    if "planned_cells" in planned:
        document["planned_cells"] = planned["planned_cells"]
    document["cells"] = [c.to_json() for c in cells]
    document["leftover_stores"] = list(leftover_stores)
    return document


def to_document(
    result: CampaignResult, command: list[str] | None = None, *, rerun: bool = False
) -> dict[str, Any]:
    top = head(result.config, result.seed, result.accepted, command)
    return assemble(
        top,
        plan(result, top["store"]),
        result.cells,
        count=result.planned,
        seconds=result.seconds,
        interrupted=result.interrupted,
        leftover_stores=result.leftover_stores,
        rerun=rerun,
        stopped=stopped_json(result),
    )


def stopped_json(result: CampaignResult) -> dict[str, Any] | None:
    """How a campaign that stopped early says so in its document (None: it did not)."""
    if result.stopped is None:
        return None
    return {**result.stopped.to_json(), "sentence": result.stopped.sentence()}


def dumps(document: dict[str, Any]) -> str:
    """The document as JSON text, with every secret masked (the whole text, so that no
    field can carry one past)."""
    clipped = redact_tree(document, limit=FIELD_LIMIT)
    return redact(json.dumps(clipped, indent=1, ensure_ascii=True) + "\n")


def write_json(document: dict[str, Any], path: Path) -> None:
    write_atomically(path, dumps(document))


def write(target: Target, text: str) -> Path | None:
    """Write `text` to the target; on failure to a fallback file, whose path is returned
    (None: written where asked). Raises only if the fallback fails too."""
    try:
        target.write(text)
        return None
    except OSError:
        fallback = fallback_path(target.path)
        write_atomically(fallback, text)
        return fallback


def read_json(path: Path) -> dict[str, Any]:
    """A killpoint report's document; ReportError when the file is anything else."""
    from killpoint.errors import InputError, SchemaError
    from killpoint.report.report_schema import check_document
    from killpoint.values.input_files import load_json

    try:  # bounded in size and depth: the file may be anything
        document = load_json(path)
    except InputError as exc:
        raise ReportError(str(exc)) from None
    if not isinstance(document, dict) or document.get("schema") not in READABLE:
        raise ReportError(
            f"killpoint: {str(path)!r} is not a killpoint matrix report (no schema "
            f"{' or '.join(READABLE)}); give a JSON written by `killpoint matrix`"
        )
    cells = document.get("cells")
    if not isinstance(cells, list):
        raise ReportError(f"killpoint: {str(path)!r} has no list of cells")
    for n, cell in enumerate(cells):
        try:
            CellResult.from_json(cell)
        except (ValueError, TypeError, ArithmeticError) as exc:  # a number too big for a float
            raise ReportError(f"killpoint: {str(path)!r}, cell {n}: {exc}") from None
    try:
        check_document(document)
    except SchemaError as exc:
        raise ReportError(
            f"killpoint: {str(path)!r} is not a report killpoint wrote: {exc}"
        ) from None
    return document


__all__ = [
    "SCHEMA",
    "ReportError",
    "assemble",
    "dumps",
    "head",
    "plan",
    "read_json",
    "to_document",
    "versions",
    "write",
    "write_json",
]
