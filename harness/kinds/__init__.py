"""The registry of crash-point kinds: every kind once, in column order.

Each family of kinds is a module of its own (kills at boundaries and inside steps, pause
and takeover, double resume, model faults, store faults); this module lists them. The
planner, the engine, `--points` (its kinds and groups) and the report's columns and legend
read the registry, and nothing else knows what a kind means.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from killpoint.errors import KindError, PointError, UnknownKind
from killpoint.judge.baseline import Baseline
from killpoint.kinds.base import CellContext, Plan, PointKind
from killpoint.kinds.clock_skew import ClockSkew
from killpoint.kinds.double_resume import DoubleResume
from killpoint.kinds.finish_order import FinishOrder
from killpoint.kinds.fs_ops import FsOp, FsOpAfter
from killpoint.kinds.kills import AfterCheckpoint, MidBatch, MidCommit, MidModel, MidStream
from killpoint.kinds.model_faults import ModelFault
from killpoint.kinds.ownership import (
    ContinueEnded,
    LeaseOutlived,
    LeaseRenewed,
    LeaseResumed,
    SecondResumer,
)
from killpoint.kinds.power_loss import PowerLoss, PowerLossMidCommit, all_here
from killpoint.kinds.provider import ProviderForgot
from killpoint.kinds.regeneration import Regeneration
from killpoint.kinds.store_faults import LockHeld
from killpoint.kinds.store_restart import StoreRestart
from killpoint.kinds.takeover import Sigstop, SigstopWriting
from killpoint.scenarios.behaviours import BEHAVIOURS
from killpoint.values.cell import Cell
from killpoint.values.points import CrashPoint, Schedule

# Column order in reports: boundaries first, then in-step points, then other faults.
REGISTRY: dict[str, PointKind] = {}


def register(kind: PointKind) -> PointKind:
    """Add a kind (once; its name must be new)."""
    if kind.name in REGISTRY:
        raise KindError(f"killpoint: a crash-point kind named {kind.name!r} is registered")
    REGISTRY[kind.name] = kind
    return kind


_BUILTIN: tuple[PointKind, ...] = (
    AfterCheckpoint(),
    MidBatch(),
    MidModel(),
    MidStream(),
    MidCommit(),
    Sigstop(),
    SigstopWriting(),
    DoubleResume(),
    SecondResumer(),
    LeaseOutlived(),
    LeaseRenewed(),
    LeaseResumed(),
    ClockSkew(ahead=False),
    ClockSkew(ahead=True),
    ContinueEnded(),
    FinishOrder(),
    ModelFault("model-500", "500"),
    ModelFault("model-timeout", "timeout"),
    ProviderForgot(),
    *(Regeneration(b) for b in BEHAVIOURS),
    LockHeld(),
    PowerLoss(),
    PowerLossMidCommit(),
    FsOp(),
    FsOpAfter(),
    StoreRestart(),
    StoreRestart(in_commit=True),
)
for _kind in _BUILTIN:
    register(_kind)


def get(name: str) -> PointKind:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UnknownKind(name) from None


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def order(name: str) -> int:
    """A kind's column position (an unknown kind sorts after every known one)."""
    return list(REGISTRY).index(name) if name in REGISTRY else len(REGISTRY)


def point_order(point: CrashPoint) -> tuple[int, int, int]:
    """Where a point stands in a report: its kind's column, then its numbers."""
    return (order(point.kind), point.k, point.i or 0)


def is_kill(point: CrashPoint) -> bool:
    """The worker is SIGKILLed at this point."""
    return bool(get(point.kind).kills)


def parse_point(text: str) -> CrashPoint:
    """`after-checkpoint:2`, `mid-batch:1:0`: a point of a registered kind, of its shape."""
    kind, _, rest = text.strip().partition(":")
    if kind not in REGISTRY:
        raise PointError(
            f"killpoint: unknown crash point {text!r}; kinds: {', '.join(names())} "
            "(e.g. 'after-checkpoint:2', 'mid-batch:1:0')"
        )
    arity = get(kind).arity
    parts = rest.split(":") if rest else []
    if len(parts) != arity or not all(p.isdigit() for p in parts):
        shape = f"{kind}:K:I" if arity == 2 else f"{kind}:K"
        raise PointError(
            f"killpoint: crash point {text!r} should look like {shape!r} with whole numbers"
        )
    k = int(parts[0])
    if k < 1:
        raise PointError(f"killpoint: crash point {text!r}: K counts from 1")
    return CrashPoint(kind, k, int(parts[1]) if arity == 2 else None)


def parse_schedule(text: str) -> Schedule:
    """`point+point`: a first point, then crashes of the resumed run (kinds that follow)."""
    points = tuple(parse_point(p) for p in text.split("+"))
    for later in points[1:]:
        if not get(later.kind).follows:
            allowed = [k.name for k in REGISTRY.values() if k.follows]
            raise PointError(
                f"killpoint: schedule {text!r}: a crash in the resumed run must be one of "
                f"{', '.join(f'{a}:K' for a in allowed)}"
            )
    if len(points) > 1 and not is_kill(points[0]):
        raise PointError(f"killpoint: schedule {text!r}: only a kill can be followed by another")
    return Schedule(points)


def parse_cell(cell_id: str) -> Cell:
    """`RUNTIME/SCENARIO/MODE/STORE/SCHEDULE`, as every report and replay command writes it.
    A scenario may hold slashes (`cassette:path/to/file.json`): a runtime, a mode, a store
    and a schedule never do."""
    parts = cell_id.split("/")
    if len(parts) > 5:
        parts = [parts[0], "/".join(parts[1:-3]), *parts[-3:]]
    if len(parts) != 5:
        raise PointError(
            f"killpoint: cell id {cell_id!r} should read "
            "'RUNTIME/SCENARIO/MODE/STORE/SCHEDULE', e.g. "
            "'reference/research/tool-batch/sqlite/after-checkpoint:2'"
        )
    runtime, scenario, mode, store, schedule = parts
    return Cell(runtime, scenario, mode, store, parse_schedule(schedule))


def _offered(base: Baseline, names: Iterable[str]) -> list[CrashPoint]:
    found = [p for name in names for p in get(name).points(base)]
    return sorted(found, key=point_order)


def points_of(base: Baseline, names: Iterable[str]) -> list[CrashPoint]:
    """Every point of the named kinds that the baseline offers, in column order: offered
    by both of its runs' traces when it has two (a point one run's race offered alone is
    not planned; `one_trace_only` names them)."""
    names = tuple(names)
    found = _offered(base, names)
    other = base.other()
    if other is None:
        return found
    both = set(_offered(other, names))
    return [p for p in found if p in both]


def sample(points: list[CrashPoint], seed: str, named: Iterable[str] = ()) -> list[CrashPoint]:
    """`points`, with each kind that keeps only a few of a row's points (PointKind.sampled:
    per row, or per K for a kind whose points are K:I) cut down to that many, drawn from
    `seed` (the campaign's seed and the row); a kind `named` on its own keeps every point."""
    named = set(named)
    by: dict[tuple[str, int | None], list[CrashPoint]] = {}
    for p in points:
        by.setdefault((p.kind, p.k if get(p.kind).arity == 2 else None), []).append(p)
    keep: set[CrashPoint] = set()
    for (kind, k), found in by.items():
        cap = get(kind).sampled
        if cap is None or kind in named or len(found) <= cap:
            keep.update(found)
            continue
        rng = random.Random(f"{seed}/{kind}/{k}")
        keep.update(rng.sample(found, cap))
    return [p for p in points if p in keep]


def reorderable(base: Baseline) -> list[tuple[int, int]]:
    """(batch number, how many orders its calls can finish in) of each batch of two calls
    or more: what a search draws finish orders from."""
    from math import factorial

    return [(b.number, factorial(len(b.calls))) for b in base.batches if len(b.calls) >= 2]


def order_point(batch: int, rank: int) -> CrashPoint:
    """The point at which batch `batch`'s calls finish in the order of this rank."""
    return CrashPoint(FinishOrder().name, batch, rank)


def left_out_of_all() -> dict[str, str]:
    """Kinds that join `--points all` only where they can run, each with why it is not
    part of it here (power loss without FUSE): what the matrix's banner says."""
    why = all_here()
    return {} if why is None else {PowerLoss().name: why}


def one_trace_only(base: Baseline, names: Iterable[str] | None = None) -> list[CrashPoint]:
    """The points of the named kinds (default: all) that one of the baseline's two traces
    offers and the other does not."""
    names = tuple(REGISTRY if names is None else names)
    other = base.other()
    if other is None:
        return []
    return sorted(set(_offered(base, names)) ^ set(_offered(other, names)), key=point_order)


def unavailable(names: Iterable[str], store_kind: str) -> dict[str, str]:
    """The named kinds that cannot run here, each with its reason (its cells are skipped)."""
    found = {}
    for name in dict.fromkeys(names):
        why = get(name).unavailable(store_kind)
        if why is not None:
            found[name] = why
    return found


def plan(base: Baseline, point: CrashPoint) -> Plan:
    return get(point.kind).plan(base, point)


def boundary(k: int) -> CrashPoint:
    """The kill after checkpoint k: what a depth-2 schedule crashes its resumed run at."""
    return CrashPoint(AfterCheckpoint.name, k)


def boundaries(base: Baseline) -> list[CrashPoint]:
    """Every boundary the baseline offers (both its traces)."""
    return points_of(base, (AfterCheckpoint.name,))


def model_request(turn: int) -> CrashPoint:
    """The kill while model turn `turn`'s request waits for its reply."""
    return CrashPoint(MidModel.name, turn)


def stand_in() -> CrashPoint:
    """A point every row has (its first model request): the one cell that carries the
    failure of a row that cannot be planned (its baseline failed)."""
    return model_request(1)


def kills() -> tuple[str, ...]:
    return tuple(k.name for k in REGISTRY.values() if k.kills)


def groups() -> dict[str, tuple[str, ...]]:
    """`--points` groups: each group's kinds, in column order ("all": the default set)."""
    found: dict[str, list[str]] = {}
    for kind in REGISTRY.values():
        for group in kind.groups:
            found.setdefault(group, []).append(kind.name)
    # "all" last: the groups read from the narrowest to the widest.
    return {g: tuple(k) for g, k in sorted(found.items(), key=lambda item: item[0] == "all")}


__all__ = [
    "REGISTRY",
    "CellContext",
    "Plan",
    "PointKind",
    "UnknownKind",
    "boundaries",
    "boundary",
    "get",
    "groups",
    "is_kill",
    "kills",
    "left_out_of_all",
    "model_request",
    "names",
    "one_trace_only",
    "order",
    "order_point",
    "parse_cell",
    "parse_point",
    "parse_schedule",
    "plan",
    "point_order",
    "points_of",
    "register",
    "reorderable",
    "sample",
    "stand_in",
    "unavailable",
]
