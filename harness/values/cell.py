"""A cell of the crash matrix, and the evidence its run produces."""

from __future__ import annotations

import importlib
import os
import shlex
import site
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from killpoint.errors import ReportError
from killpoint.values.findings import fails, open_severity
from killpoint.values.points import Schedule
from killpoint.values.timeline import Event, event_from_json

# A row of the matrix: its cells differ only by their schedule.
Row = tuple[str, str, str, str]  # runtime, scenario, mode, store kind


@dataclass(frozen=True)
class Cell:
    runtime: str
    scenario: str
    mode: str
    store: str  # "sqlite" | "postgresql"
    schedule: Schedule

    def __post_init__(self) -> None:
        if not isinstance(self.schedule, Schedule):
            object.__setattr__(self, "schedule", Schedule(self.schedule))

    @property
    def id(self) -> str:
        return "/".join((self.runtime, self.scenario, self.mode, self.store, str(self.schedule)))

    @property
    def row(self) -> Row:
        return (self.runtime, self.scenario, self.mode, self.store)

    def replay_command(self, options: tuple[str, ...] = ()) -> str:
        """The one command that reruns this cell, from any folder: PYTHONPATH names where
        the user's own runtime or scenario module was imported from (a PostgreSQL cell
        also needs its server URL, which is never written out). `options`: the campaign's
        options the cell ran with that its id does not say (`--cut torn-seq`)."""
        return command(["replay", self.id, *options], self.runtime, self.scenario, self.store)


def row_command(runtime: str, scenario: str, mode: str, store: str) -> str:
    """A command that runs the row's uninterrupted run again, with the row's boundaries:
    what a row-level finding (seen without a crash) is reproduced by."""
    argv = ["matrix", "--runtime", runtime, "--scenarios", scenario, "--modes", mode]
    return command([*argv, "--points", "boundaries"], runtime, scenario, store)


def command(argv: list[str], runtime: str, scenario: str, store: str) -> str:
    """`killpoint ARGV` runnable from any folder: PYTHONPATH names where the user's own
    runtime or scenario module was imported from (a PostgreSQL store also needs its
    server URL, which is never written out)."""
    text = shlex.join(["killpoint", *argv]) + store_words(store)
    roots: list[str] = []
    for ref in (runtime, scenario):
        if ":" in ref and not ref.startswith("random:"):
            root = import_root(ref.partition(":")[0])
            if root is not None and root not in roots:
                roots.append(root)
    if not roots:
        return text
    return f"PYTHONPATH={shlex.quote(os.pathsep.join(roots))} {text}"


# The shell variable a printed command names a server's URL by (docs/how-to/postgresql.md).
STORE_VARIABLE = "KILLPOINT_STORE"


def store_words(store: str) -> str:
    """What names `store` at the end of a printed command: nothing for sqlite (the
    default); a server by `"$KILLPOINT_STORE"`, its URL never written out (its password
    would be, or the masked `***` that pasted sends as the password)."""
    return "" if store == "sqlite" else f' --store "${STORE_VARIABLE}"'


def import_root(module_name: str) -> str | None:
    """The sys.path entry `module_name` was imported from, unless it is an installed one."""
    try:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
    except Exception:
        return None
    filename = getattr(module, "__file__", None)
    if not filename:
        return None
    path = Path(filename).resolve()
    depth = module_name.count(".") + (1 if path.name == "__init__.py" else 0)
    root = path.parents[depth]
    installed = {Path(p).resolve() for p in (*site.getsitepackages(), site.getusersitepackages())}
    return None if root in installed else str(root)


@dataclass
class CellResult:
    id: str
    runtime: str
    scenario: str
    mode: str
    store: str
    schedule: list[str]
    verdict: str
    expected: bool
    duplicates: int = 0  # repeats of the baseline's effects, counted whatever the verdict
    bound: int = 0  # repeats the crashes allowed (calls in flight)
    seconds: float = 0.0
    detail: str = ""  # the sentence of the finding that set the verdict
    findings: list[dict[str, Any]] = field(default_factory=list)  # Finding.to_json()
    sides: dict[str, str] = field(default_factory=dict)  # what was compared with what
    diff: list[dict[str, Any]] = field(default_factory=list)  # every leaf that differs
    store_at_crash: dict[str, Any] | None = None
    stderr_tail: str = ""
    timeline: list[Event] = field(default_factory=list)  # [t, text, kind, lane] in JSON
    exit_codes: list[int | None] = field(default_factory=list)
    replay: str = ""
    kept: str | None = None  # work directory kept for inspection
    accepted: bool = False  # every unexpected finding is in an accepted group

    @property
    def unexpected(self) -> bool:
        return not self.expected

    @property
    def severity(self) -> str | None:
        """How much the cell's unexpected findings harm (the most severe of them); None for
        an expected cell."""
        if self.expected:
            return None
        return open_severity(self.findings) or "high"

    @property
    def low(self) -> bool:
        """Unexpected, not accepted, and every unexpected finding of low severity (usage,
        an order, bookkeeping): reported as such, failing a run only under `--fail-on low`."""
        return not self.expected and not self.accepted and not fails(self.severity)

    @property
    def failing(self) -> bool:
        """Unexpected, not accepted, and of medium severity or more: what fails a run."""
        return not self.expected and not self.accepted and fails(self.severity)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["timeline"] = [list(e) for e in self.timeline]
        return data

    def json_view(self) -> dict[str, Any]:
        """The cell as to_json() gives it, without copying what it holds: for a writer that
        dumps it at once (the campaign's journal, once per cell), never to keep or change
        (to_json's deep copy is most of what writing a journal line costs)."""
        data = {name: getattr(self, name) for name in _FIELD_NAMES}
        data["timeline"] = [list(e) for e in self.timeline]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellResult:
        """A cell of a report's JSON; ReportError (a ValueError) naming what is missing or
        wrong."""
        if not isinstance(data, dict):
            raise ReportError(f"a cell should be an object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        required = ("id", "runtime", "scenario", "mode", "store", "schedule", "verdict", "expected")
        missing = [k for k in required if k not in data]
        if missing:
            raise ReportError(f"a cell lacks {', '.join(missing)}")
        kept = {k: v for k, v in data.items() if k in known}
        kept["timeline"] = [event_from_json(e) for e in data.get("timeline") or []]
        return cls(**kept)


_FIELD_NAMES = tuple(f.name for f in fields(CellResult))
