"""The oracle: compare a resumed session with its baseline, count effects, name the verdict."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

VERDICTS = ("ok", "lost", "diverged", "duplicated", "corrupt", "unresumable", "hung", "missed")


@dataclass(frozen=True)
class Difference:
    path: str
    baseline: Any
    actual: Any

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "baseline": _clip(self.baseline), "actual": _clip(self.actual)}

    def __str__(self) -> str:
        return f"{self.path}: baseline {_clip(self.baseline)!r}, resumed {_clip(self.actual)!r}"


def _clip(value: Any, limit: int = 600) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + f"... ({len(value)} chars)"
    if isinstance(value, (dict, list)):
        text = repr(value)
        return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"
    return value


def comparable(session: dict[str, Any] | None) -> dict[str, Any] | None:
    """A normalised session with its runs in order (run ids are excluded from comparison)."""
    if session is None:
        return None
    return {"state": session["state"], "runs": list(session["runs"].values())}


def first_difference(baseline: Any, actual: Any, path: str = "session") -> Difference | None:
    if isinstance(baseline, dict) and isinstance(actual, dict):
        for key in list(baseline) + [k for k in actual if k not in baseline]:
            if key not in actual or key not in baseline:
                return Difference(f"{path}.{key}", baseline.get(key), actual.get(key))
            found = first_difference(baseline[key], actual[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(baseline, list) and isinstance(actual, list):
        for n, (b, a) in enumerate(zip(baseline, actual, strict=False)):
            found = first_difference(b, a, f"{path}[{n}]")
            if found:
                return found
        if len(baseline) != len(actual):
            n = min(len(baseline), len(actual))
            return Difference(
                f"{path}[{n}] (length {len(baseline)} vs {len(actual)})",
                baseline[n] if n < len(baseline) else None,
                actual[n] if n < len(actual) else None,
            )
        return None
    if baseline != actual:
        return Difference(path, baseline, actual)
    return None


@dataclass(frozen=True)
class EffectCount:
    duplicates: int
    missing: list[tuple[str, str]]  # (tool, arguments) the baseline did and the cell did not
    repeated: list[tuple[str, str, int]]  # (tool, arguments, extra executions)
    foreign: list[tuple[str, str, int]]  # (tool, arguments, executions) the baseline never had


def count_effects(
    baseline: Counter[tuple[str, str]], actual: Counter[tuple[str, str]]
) -> EffectCount:
    """Effects of the cell against its baseline's. A repeat of an effect the baseline had
    is a duplicate; an effect it never had is no duplicate of anything: the run went
    elsewhere (a divergence), and it is listed apart."""
    repeated = [(t, a, actual[(t, a)] - n) for (t, a), n in baseline.items() if actual[(t, a)] > n]
    foreign = [(t, a, n) for (t, a), n in actual.items() if (t, a) not in baseline]
    missing = [(t, a) for (t, a), n in baseline.items() if actual[(t, a)] < n]
    return EffectCount(sum(x[2] for x in repeated), missing, repeated, foreign)
