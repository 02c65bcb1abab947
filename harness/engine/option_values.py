"""How an option's value is read, whichever front gave it: text from a command line, an ini
file or `[tool.killpoint]`, or a Python value given to `crash.check`.

Each reader takes the option's name and the value and returns the checked value, or raises
OptionError naming the option, the value, why, and the choices: the one sentence every
front shows (with its own name for the option). A reader also takes its own result back
unchanged, so a configuration can be read again with a value replaced.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from killpoint.errors import OptionError
from killpoint.redaction import remember_url
from killpoint.values.near import nearest

if TYPE_CHECKING:
    from killpoint.values.points import CrashPoint
    from killpoint.values.shard import Shard

Reader = Callable[[str, Any], Any]

# Cells at work at once, per core, at most: each runs worker processes and three threads of
# its own, and beyond a few per core they only wait for the CPU (2 cores: 6.2 cells/s with
# 2 at once, 8.6 with 4, no better beyond), while every one holds descriptors and a store.
WORKERS_PER_CORE = 16
WORKERS_AT_LEAST = 64  # the bound on a machine of few cores


def split_list(text: str) -> tuple[str, ...]:
    """`a,b`, `a, b` and `a b` alike: an ini file's lists read naturally with spaces."""
    return tuple(p for p in re.split(r"[,\s]+", text.strip()) if p)


def text(option: str, value: Any) -> str:
    return str(value).strip()


def store(option: str, value: Any) -> str:
    """A store: `sqlite` or a URL. Every message after this masks its password."""
    url = str(value).strip()
    remember_url(url)
    return url


def path(option: str, value: Any) -> Path:
    return Path(value).expanduser()


BUILTIN = "builtin"  # --accept builtin: the runtime's own by-design file


def accept(option: str, value: Any) -> Path | str:
    """An accepted-findings file, or BUILTIN: the file the runtime ships for what its
    documentation calls by design (killpoint.engine.acceptances). A file of that name is
    given as `./builtin`."""
    if isinstance(value, str) and value.strip() == BUILTIN:
        return BUILTIN
    return path(option, value)


def flag(option: str, value: Any) -> bool:
    """On or off: a bool, or the words an ini file uses."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off", ""):
        return False
    raise OptionError(option, value, "give true or false")


def names(option: str, value: Any) -> tuple[str, ...]:
    """A list given as text (`a,b`) or as a sequence of names."""
    items = split_list(value) if isinstance(value, str) else tuple(str(v) for v in value)
    if not items:
        raise OptionError(option, value, "names nothing; leave the option out to mean every one")
    return items


def whole(low: int, high: int | None = None) -> Reader:
    """A whole number from `low` (to `high`)."""

    def read(option: str, value: Any) -> int:
        return whole_number(option, value, low, high)

    return read


def whole_number(option: str, value: Any, low: int, high: int | None = None) -> int:
    try:
        number = int(str(value).strip()) if not isinstance(value, int) else value
    except ValueError:
        raise OptionError(option, value, "give a whole number") from None
    if isinstance(value, bool) or number < low or (high is not None and number > high):
        bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise OptionError(option, value, f"give a whole number {bounds}")
    return number


def seconds(option: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise OptionError(option, value, "give a number of seconds") from None
    if isinstance(value, bool) or not math.isfinite(number) or number <= 0:
        raise OptionError(option, value, "give a finite number of seconds above 0")
    return number


_DURATION = re.compile(r"(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>s|m|min|h)?")
_UNIT_SECONDS = {None: 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def duration(option: str, value: Any) -> float:
    """A time span in seconds: `90`, `90s`, `5m`, `1.5h` (a number alone is seconds)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    else:
        found = _DURATION.fullmatch(str(value).strip().lower())
        if found is None:
            raise OptionError(option, value, "give a time span such as 90s, 5m or 1h")
        number = float(found["number"]) * _UNIT_SECONDS[found["unit"]]
    if not math.isfinite(number) or number <= 0:
        raise OptionError(option, value, "give a time span above 0, such as 90s, 5m or 1h")
    return number


def budget(option: str, value: Any) -> float | None:
    """A time span (duration), or `none`: no budget, every cell (the word that takes back a
    budget [tool.killpoint] sets)."""
    if isinstance(value, str) and value.strip().lower() == "none":
        return None
    return duration(option, value)


def choice(choices: Sequence[str], what: str) -> Reader:
    """One of `choices`; otherwise `what` ("not a keep policy") and the choices."""

    def read(option: str, value: Any) -> str:
        word = str(value).strip()
        if word not in choices:
            raise OptionError(option, value, what, choices, near=nearest(word, choices))
        return word

    return read


def default_workers() -> int:
    """Cells at once: twice the cores. A cell spends much of its time waiting (on its
    workers' pipes, on the store), so two per core keep the cores busy; measured on 2
    cores: 6.2 cells/s with 2 at once, 8.6 with 4, no better beyond."""
    return 2 * (os.cpu_count() or 1)


def max_workers() -> int:
    return max(WORKERS_AT_LEAST, WORKERS_PER_CORE * (os.cpu_count() or 1))


def workers(option: str, value: Any) -> int:
    """Cells at once: at least 1, at most max_workers() (a typo of a zero too many would
    start thousands of threads and processes, and run no faster)."""
    number = whole_number(option, value, 1)
    bound = max_workers()
    if number > bound:
        raise OptionError(
            option,
            value,
            f"give a whole number from 1 to {bound} (here, {WORKERS_PER_CORE} per core): each "
            "cell at work runs processes and threads of its own, and more only wait for the "
            "CPU",
        )
    return number


def behaviour(option: str, value: Any) -> str:
    from killpoint.scenarios.behaviours import BEHAVIOURS

    return str(choice(BEHAVIOURS, "not a model behaviour")(option, value))


def cut(option: str, value: Any) -> str:
    """A cut model's name (checked; the seed is each cell's own)."""
    from killpoint.errors import CutModelError
    from killpoint.powerloss.cut_models import parse_cut, spec_of

    try:
        return spec_of(parse_cut(str(value)))
    except CutModelError as exc:
        raise OptionError(option, value, exc.why) from None


def fs_ops(option: str, value: Any) -> str:
    """`all`, `syncs` or a whole number of at least 1: the store-file operations of each
    checkpoint that get an fs-op point (killpoint.kinds.fs_ops)."""
    from killpoint.kinds.fs_ops import BUDGETS

    word = str(value).strip()
    if word in BUDGETS or (word.isdigit() and int(word) >= 1):
        return word
    raise OptionError(
        option,
        value,
        "give all, syncs or a whole number of operations per checkpoint (at least 1), e.g. 4",
    )


def shard(option: str, value: Any) -> Shard:
    from killpoint.errors import ShardError
    from killpoint.values.shard import parse_shard

    try:
        return parse_shard(value)
    except ShardError as exc:
        raise OptionError(option, value, str(exc)) from None


@dataclass(frozen=True)
class PointSelection:
    """What `--points` selects: kinds to enumerate, a random sample size, explicit points.
    Resolved on first use: the kinds' registry is not imported by a pytest session that
    runs no crash test."""

    text: str = "all"

    def __str__(self) -> str:
        return self.text

    def resolve(self) -> tuple[tuple[str, ...], int | None, tuple[CrashPoint, ...]]:
        return _resolve(self.text)

    @property
    def kinds(self) -> tuple[str, ...]:
        return self.resolve()[0]

    @property
    def sample(self) -> int | None:
        return self.resolve()[1]

    @property
    def explicit(self) -> tuple[CrashPoint, ...]:
        return self.resolve()[2]

    @property
    def named(self) -> tuple[str, ...]:
        """The kinds named on their own (not through a group): each gives every point."""
        from killpoint import kinds

        return tuple(i for i in split_list(self.text) if i in kinds.REGISTRY)

    @property
    def everything(self) -> bool:
        """Whether the selection takes the `all` group (so `random:N` does too)."""
        return self.text.startswith("random:") or "all" in split_list(self.text)


def points(option: str, value: Any) -> PointSelection:
    """A checked selection; OptionError names what is wrong."""
    if isinstance(value, PointSelection):
        return value
    selection = PointSelection(str(value).strip())
    _resolve(selection.text, option)
    return selection


def parse_points(text: str) -> PointSelection:
    return points("points", text)


def _resolve(
    text: str, option: str = "points"
) -> tuple[tuple[str, ...], int | None, tuple[CrashPoint, ...]]:
    from killpoint import kinds
    from killpoint.errors import PointError

    groups = kinds.groups()
    if text.startswith("random:"):
        n = text.partition(":")[2]
        if not n.isdigit() or int(n) < 1:
            raise OptionError(option, text, "give a sample size of at least 1, e.g. 'random:20'")
        return groups["all"], int(n), ()
    chosen: list[str] = []
    explicit: list[CrashPoint] = []
    items = split_list(text)
    if not items:
        raise OptionError(option, text, "selects nothing", tuple(groups))
    for item in items:
        if item in groups:
            chosen += groups[item]
        elif item in kinds.REGISTRY:
            chosen.append(item)
        else:
            try:
                explicit.append(kinds.parse_point(item))
            except PointError:
                raise OptionError(
                    option,
                    item,
                    f"not a group ({', '.join(groups)}), a kind ({', '.join(kinds.names())}), "
                    "'random:N', or a point like 'after-checkpoint:2'",
                    near=_near_point(item, groups, kinds.names()),
                ) from None
    return tuple(dict.fromkeys(chosen)), None, tuple(explicit)


def _near_point(item: str, groups: Iterable[str], kinds: Iterable[str]) -> str | None:
    """What a misspelt item most likely meant: a group or a kind (`boundary`:
    `boundaries`), or for a point its kind respelt with the same index
    (`after-checkpont:2`: `after-checkpoint:2`)."""
    kind, sep, index = item.partition(":")
    if not sep:
        return nearest(item, [*groups, *kinds])
    near = nearest(kind, kinds)
    return f"{near}:{index}" if near is not None else None


__all__ = [
    "BUILTIN",
    "PointSelection",
    "Reader",
    "accept",
    "behaviour",
    "budget",
    "choice",
    "cut",
    "default_workers",
    "duration",
    "flag",
    "fs_ops",
    "max_workers",
    "names",
    "parse_points",
    "path",
    "points",
    "seconds",
    "shard",
    "split_list",
    "store",
    "text",
    "whole",
    "whole_number",
    "workers",
]
