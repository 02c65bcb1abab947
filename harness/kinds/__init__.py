"""The registry of crash-point kinds: every kind once, in column order.

Each family of kinds is a module of its own (kills at boundaries and inside steps, pause
and takeover, double resume, model faults, store faults); this module lists them. The
planner, the engine, `--points` (its kinds and groups) and the report's columns and legend
read the registry, and nothing else knows what a kind means.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..baseline import Baseline
from ..points import CrashPoint
from .base import CellContext, Plan, PointKind
from .double_resume import DoubleResume
from .kills import AfterCheckpoint, MidBatch, MidCommit, MidModel
from .model_faults import ModelFault
from .power_loss import PowerLoss, PowerLossMidCommit
from .store_faults import LockHeld
from .store_restart import StoreRestart
from .takeover import Sigstop, SigstopWriting


class UnknownKind(LookupError):
    """No registered kind has this name."""


# Column order in reports: boundaries first, then in-step points, then other faults.
REGISTRY: dict[str, PointKind] = {}


def register(kind: PointKind) -> PointKind:
    """Add a kind (once; its name must be new)."""
    if kind.name in REGISTRY:
        raise ValueError(f"killpoint: a crash-point kind named {kind.name!r} is registered")
    REGISTRY[kind.name] = kind
    return kind


for _kind in (
    AfterCheckpoint(),
    MidBatch(),
    MidModel(),
    MidCommit(),
    Sigstop(),
    SigstopWriting(),
    DoubleResume(),
    ModelFault("model-500", "500"),
    ModelFault("model-timeout", "timeout"),
    LockHeld(),
    PowerLoss(),
    PowerLossMidCommit(),
    StoreRestart(),
    StoreRestart(in_commit=True),
):
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


def _offered(base: Baseline, names: Iterable[str]) -> list[CrashPoint]:
    found = [p for name in names for p in get(name).points(base)]
    return sorted(found, key=CrashPoint.sort_key)


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


def one_trace_only(base: Baseline, names: Iterable[str] | None = None) -> list[CrashPoint]:
    """The points of the named kinds (default: all) that one of the baseline's two traces
    offers and the other does not."""
    names = tuple(REGISTRY if names is None else names)
    other = base.other()
    if other is None:
        return []
    return sorted(set(_offered(base, names)) ^ set(_offered(other, names)), key=CrashPoint.sort_key)


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


def kills() -> tuple[str, ...]:
    return tuple(k.name for k in REGISTRY.values() if k.kills)


def followers() -> tuple[str, ...]:
    """Kinds that may crash the resumed run of a depth-2 schedule."""
    return tuple(k.name for k in REGISTRY.values() if k.follows)


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
    "followers",
    "get",
    "groups",
    "kills",
    "names",
    "one_trace_only",
    "order",
    "plan",
    "points_of",
    "register",
    "unavailable",
]
