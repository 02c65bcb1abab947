"""Crash points and schedules: names, parsing, and what each means in a baseline's terms.

Kill points (the worker is SIGKILLed there):
  after-checkpoint:k   checkpoint k of the session has landed, k+1 has not
  mid-batch:k:i        tool batch k: calls 0..i-1 finished, call i in flight, the rest not started
  mid-model:k          the request for model turn k was sent, no reply yet
  mid-commit:k         inside checkpoint k's transaction, before COMMIT
Other faults (columns of the matrix like any crash point):
  sigstop:k            after checkpoint k the worker is paused; a second worker takes the
                       run over; the first is woken and must have its writes rejected
  double-resume:k      killed after checkpoint k; two resumers start at once
  model-500:k          the request for model turn k gets a 500 (the run ends ERROR), continue
  model-timeout:k      the request for model turn k times out, continue
  lock-held:k          another connection holds the store's write lock when checkpoint k is
                       written; the worker gives up (its write fails), then a fresh one continues
"""

from __future__ import annotations

from dataclasses import dataclass

KILL_KINDS = ("after-checkpoint", "mid-batch", "mid-model", "mid-commit")
FAULT_KINDS = ("sigstop", "double-resume", "model-500", "model-timeout", "lock-held")
KINDS = KILL_KINDS + FAULT_KINDS
# Column order in reports: boundaries first, then in-step points, then other faults.
ORDER = {kind: n for n, kind in enumerate(KINDS)}


class PointError(ValueError):
    """A crash point or schedule that cannot be parsed."""


@dataclass(frozen=True, order=True)
class CrashPoint:
    kind: str
    k: int
    i: int | None = None

    def __str__(self) -> str:
        return f"{self.kind}:{self.k}" if self.i is None else f"{self.kind}:{self.k}:{self.i}"

    @property
    def kills(self) -> bool:
        return self.kind in KILL_KINDS

    @classmethod
    def parse(cls, text: str) -> CrashPoint:
        kind, _, rest = text.strip().partition(":")
        if kind not in KINDS:
            raise PointError(
                f"killpoint: unknown crash point {text!r}; kinds: {', '.join(KINDS)} "
                "(e.g. 'after-checkpoint:2', 'mid-batch:1:0')"
            )
        parts = rest.split(":") if rest else []
        want = 2 if kind == "mid-batch" else 1
        if len(parts) != want or not all(p.isdigit() for p in parts):
            shape = f"{kind}:K:I" if want == 2 else f"{kind}:K"
            raise PointError(
                f"killpoint: crash point {text!r} should look like {shape!r} with whole numbers"
            )
        k = int(parts[0])
        if k < 1:
            raise PointError(f"killpoint: crash point {text!r}: K counts from 1")
        return cls(kind, k, int(parts[1]) if want == 2 else None)

    def sort_key(self) -> tuple[int, int, int]:
        return (ORDER[self.kind], self.k, self.i or 0)


Schedule = tuple[CrashPoint, ...]


def format_schedule(schedule: Schedule) -> str:
    return "+".join(str(p) for p in schedule)


def parse_schedule(text: str) -> Schedule:
    points = tuple(CrashPoint.parse(p) for p in text.split("+"))
    for later in points[1:]:
        if later.kind not in ("after-checkpoint", "mid-model"):
            raise PointError(
                f"killpoint: schedule {text!r}: a crash in the resumed run must be "
                "'after-checkpoint:K' or 'mid-model:K'"
            )
    if not points[0].kills and len(points) > 1:
        raise PointError(f"killpoint: schedule {text!r}: only a kill can be followed by another")
    return points
