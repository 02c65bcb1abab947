"""Crash points and schedules as typed values: `after-checkpoint:2`, `mid-batch:1:0`,
`mid-batch:1:0+after-checkpoint:3`.

What each kind means, and which points a baseline offers, is the kind's own business
(killpoint.kinds); this module only reads and writes the names, and asks the registry
which kinds exist.
"""

from __future__ import annotations

from dataclasses import dataclass


class PointError(ValueError):
    """A crash point or schedule that cannot be parsed, or that a baseline does not offer."""


def _registry():  # type: ignore[no-untyped-def]
    from . import kinds  # the kinds import this module: resolved on first use

    return kinds


@dataclass(frozen=True, order=True)
class CrashPoint:
    kind: str
    k: int
    i: int | None = None

    def __str__(self) -> str:
        return f"{self.kind}:{self.k}" if self.i is None else f"{self.kind}:{self.k}:{self.i}"

    @property
    def kills(self) -> bool:
        """The worker is SIGKILLed at this point."""
        return bool(_registry().get(self.kind).kills)

    @classmethod
    def parse(cls, text: str) -> CrashPoint:
        kinds = _registry()
        kind, _, rest = text.strip().partition(":")
        if kind not in kinds.REGISTRY:
            raise PointError(
                f"killpoint: unknown crash point {text!r}; kinds: {', '.join(kinds.names())} "
                "(e.g. 'after-checkpoint:2', 'mid-batch:1:0')"
            )
        arity = kinds.get(kind).arity
        parts = rest.split(":") if rest else []
        if len(parts) != arity or not all(p.isdigit() for p in parts):
            shape = f"{kind}:K:I" if arity == 2 else f"{kind}:K"
            raise PointError(
                f"killpoint: crash point {text!r} should look like {shape!r} with whole numbers"
            )
        k = int(parts[0])
        if k < 1:
            raise PointError(f"killpoint: crash point {text!r}: K counts from 1")
        return cls(kind, k, int(parts[1]) if arity == 2 else None)

    def sort_key(self) -> tuple[int, int, int]:
        return (_registry().order(self.kind), self.k, self.i or 0)


class Schedule(tuple[CrashPoint, ...]):
    """The crash points of one cell, in order: a first point, then (depth 2) crashes of
    the resumed run. Written `point+point`."""

    def __new__(cls, points: tuple[CrashPoint, ...] | list[CrashPoint] = ()) -> Schedule:
        return super().__new__(cls, tuple(points))

    def __str__(self) -> str:
        return "+".join(str(p) for p in self)

    @property
    def first(self) -> CrashPoint:
        return self[0]

    @property
    def rest(self) -> Schedule:
        return Schedule(self[1:])

    def sort_key(self) -> tuple[tuple[int, int, int], ...]:
        return tuple(p.sort_key() for p in self)

    @classmethod
    def parse(cls, text: str) -> Schedule:
        points = tuple(CrashPoint.parse(p) for p in text.split("+"))
        kinds = _registry()
        for later in points[1:]:
            if not kinds.get(later.kind).follows:
                allowed = [k.name for k in kinds.REGISTRY.values() if k.follows]
                raise PointError(
                    f"killpoint: schedule {text!r}: a crash in the resumed run must be one of "
                    f"{', '.join(f'{a}:K' for a in allowed)}"
                )
        if len(points) > 1 and not points[0].kills:
            raise PointError(
                f"killpoint: schedule {text!r}: only a kill can be followed by another"
            )
        return cls(points)


def format_schedule(schedule: tuple[CrashPoint, ...]) -> str:
    return "+".join(str(p) for p in schedule)


def parse_schedule(text: str) -> Schedule:
    return Schedule.parse(text)


__all__ = ["CrashPoint", "PointError", "Schedule", "format_schedule", "parse_schedule"]
