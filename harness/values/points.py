"""Crash points and schedules as typed values: `after-checkpoint:2`, `mid-batch:1:0`,
`mid-batch:1:0+after-checkpoint:3`.

Plain values: what each kind means, which kinds exist and how a point is parsed and
ordered is the registry's business (killpoint.kinds: parse_point, parse_schedule,
point_order); this module only holds and writes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from killpoint.errors import PointError


@dataclass(frozen=True, order=True)
class CrashPoint:
    kind: str
    k: int
    i: int | None = None

    def __str__(self) -> str:
        return f"{self.kind}:{self.k}" if self.i is None else f"{self.kind}:{self.k}:{self.i}"


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


__all__ = ["CrashPoint", "PointError", "Schedule"]
