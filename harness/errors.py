"""The errors killpoint raises on purpose, every one of them, in one module a user can import:
`from killpoint.errors import OptionError, StoreUnavailable`.

Every such error is a KillpointError, and also the built-in it refines (a bad value is a
ValueError, a mount that fails an OSError, a name nothing is registered under a
LookupError), so `except ValueError` keeps working where it did. A face (the CLI, the
pytest plugin) catches KillpointError and shows its message as one line; anything else
escaping is a bug in killpoint.

The modules that raise each error import it from here (and the names stay importable from
them, as before).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from killpoint.redaction import redact

NO_PROCESS = "could not start a process"  # NoProcess's words, and a refused worker's log line


class KillpointError(Exception):
    """Base of every error killpoint raises on purpose: bad input, an unusable store, a
    report that cannot be read or written, an interrupted campaign."""


# -- what a user gives: options, files, names ------------------------------------------------


class ConfigError(KillpointError, ValueError):
    """A campaign that cannot run as configured; the message names the fix."""


class OptionError(ConfigError):
    """One option with a bad value: which, the value, why, and the choices.

    `option` is the option's name in killpoint.engine.option_table (`fs_ops`); each front
    shows the error with its own name for it (`--fs-ops`, `--crash-fs-ops`, `ini option
    crash_fs_ops`, `crash.check fs_ops`) through `text(label)`; the rest of the sentence
    is the same everywhere. `near`: the choice a typo most likely meant, said before the
    choices (killpoint.values.near finds it; this module, below every layer, cannot)."""

    def __init__(
        self,
        option: str,
        value: Any,
        why: str,
        choices: Sequence[str] = (),
        near: str | None = None,
    ) -> None:
        self.option = option
        self.value = value
        self.why = why.removeprefix("killpoint: ")
        self.choices = tuple(choices)
        self.near = near
        super().__init__(self.text())

    @property
    def reason(self) -> str:
        """Why, the nearest choice, and the choices: the part every front end says the
        same way (`not a mode ...; did you mean 'tool-batch'? choose from ...`)."""
        text = self.why
        if self.near is not None:
            text += f"; did you mean {self.near!r}?"
        if self.choices and "choose from" not in self.why:
            text += f"{' ' if self.near is not None else '; '}choose from {', '.join(self.choices)}"
        return text

    def text(self, label: str | None = None) -> str:
        """One line: `killpoint: LABEL='VALUE': why; choose from ...` (LABEL: the command
        line's flag unless a front names the option otherwise)."""
        label = label or flag_of(self.option)
        return f"killpoint: {label}={_shown(self.value)!r}: {self.reason}"


class UnnamedObject(ConfigError, TypeError):
    """An object given to `crash.check` (a runtime, a scenario) that no module names at its
    top level: worker processes import it by name, so give its import path."""


class ProjectConfigError(KillpointError, ValueError):
    """An unknown key or a value of the wrong type in `[tool.killpoint]`."""


class InputError(KillpointError, ValueError):
    """An input file that is too large, too deep or not of its format; the message names
    the file and what is wrong."""


class AcceptError(KillpointError, ValueError):
    """An accepted-findings file that cannot be read; names the file and the fix."""


class ShardError(KillpointError, ValueError):
    """A `K/N` that names no shard; the message says why and what to give."""


class CutModelError(KillpointError, ValueError):
    """A cut model named wrong; the message names the value, why, and the choices."""

    def __init__(self, text: str, why: str) -> None:
        self.why = why
        super().__init__(f"killpoint: cut model {text!r}: {why}")


class PointError(KillpointError, ValueError):
    """A crash point or schedule that cannot be parsed, or that a baseline does not offer."""


class ScenarioRefError(KillpointError, ValueError):
    """A scenario reference that names no scenario."""


class RecordError(KillpointError, ValueError):
    """A recording (`killpoint record`) that cannot be made or kept (bad input, an agent
    that failed, a provider that refused): the message says what and what to do."""


class RerunError(KillpointError, ValueError):
    """A report that cannot be rerun as asked; the message names why and the fix."""


# -- what a runtime's adapter declares or answers --------------------------------------------


class AdapterError(KillpointError, ValueError):
    """A runtime name or import path that does not give an adapter."""


class ModeError(KillpointError, ValueError):
    """A checkpoint mode declared wrong (killpoint.Mode: its name, its one-line meaning, its
    flags), or a mode a runtime does not know."""


class NormalFormError(KillpointError, ValueError):
    """A value from `read_session` that is not in the normal form; names the field."""


class UnknownFinding(KillpointError, ValueError):
    """A Finding of a kind killpoint does not know (killpoint.values.findings.KINDS)."""


class AdapterFault(KillpointError, RuntimeError):
    """An adapter method called by the engine raised, or returned what the Protocol does
    not allow; `method` names it ("read_session()")."""

    def __init__(
        self, method: str, what: str, evidence: tuple[str, ...] = (), *, raised: bool = False
    ) -> None:
        super().__init__(f"the adapter's {method} {redact(what)}")
        self.method = method
        self.evidence = tuple(redact(line) for line in evidence)
        self.raised = raised  # False: it answered outside the Protocol


class StoreNotSupported(KillpointError, ValueError):
    """A store URL an adapter cannot give its runtime (pydantic-ai's DBOS)."""


# -- the store ------------------------------------------------------------------------------


class StoreError(KillpointError, ValueError):
    """A store option that is malformed or cannot be reached."""


class StoreUnavailable(KillpointError):
    """The store server cannot be reached (stopped, restarting, refusing connections): a
    failure of killpoint's own dependency, not of the runtime under test."""


class StoreLeftover(KillpointError):
    """A store that could not be removed (the server gone, a kill -9 of its postmaster):
    it stays on the server until the statement that drops it is run."""

    def __init__(self, store: str, where: str, statement: str, reason: str) -> None:
        super().__init__(f"could not drop {store} on {where} ({reason}); drop it with: {statement}")
        self.store = store
        self.where = where
        self.statement = statement
        self.reason = reason

    def to_json(self) -> dict[str, str]:
        return {
            "store": self.store,
            "server": self.where,
            "statement": self.statement,
            "error": self.reason,
        }


# -- reports and corpora ------------------------------------------------------------------------


class ReportError(KillpointError, ValueError):
    """A file that is not a killpoint report; the message names it and what is wrong."""


class SchemaError(KillpointError, ValueError):
    """A field of a report of the wrong type; the message names where."""


class TargetError(KillpointError, ValueError):
    """A report path that cannot be written; the message names it and why."""


class DiffError(KillpointError, ValueError):
    """Two reports that cannot be compared; the message names why and the fix."""


class MergeError(KillpointError, ValueError):
    """Shards that cannot be merged into one report; the message names why and the fix."""


class CorpusError(KillpointError, ValueError):
    """A corpus folder this killpoint cannot use (missing, malformed, another schema, a
    file that is not plain data or passes a size limit); the message names the file, and
    the line or field where there is one. The command exits 2."""


class FormError(CorpusError):
    """A line of a PostgreSQL state (killpoint.corpus.pg_form) that is not the form: names
    the file, the line and the field."""


class PgStateError(KillpointError, RuntimeError):
    """A dump or a restore failed on the server's side (unreachable, or a schema that
    holds what a state cannot): said with the server's first line, redacted."""


# -- the power-loss filesystem -------------------------------------------------------------------


class MountFailed(KillpointError, OSError):
    """The power-loss filesystem could not be mounted (the message says why and what to do)."""


class UnmountFailed(KillpointError, OSError):
    """The power-loss filesystem could not be unmounted (fusermount3 missing, or refused)."""


class MountBusy(UnmountFailed):
    """The mount cannot be unmounted: a process still holds a file in it."""


class ImageExists(KillpointError, FileExistsError):
    """A power cut asked to write its image to a folder that exists: give a new path."""


class CutError(KillpointError, RuntimeError):
    """A cut asked of a mount that cannot give one (not mounted, already cut, server gone)."""


class NotInTree(KillpointError, LookupError):
    """A path the power-loss model does not know: the backing folder was changed behind its
    back."""


# -- a campaign as it runs ---------------------------------------------------------------------


class UnknownKind(KillpointError, LookupError):
    """No registered crash-point kind has this name."""


class KindError(KillpointError, ValueError):
    """A crash-point kind that cannot be registered (its name is taken)."""


class Interrupted(KillpointError):
    """The campaign is stopping: no new worker may start."""


class Overdue(KillpointError):
    """A call did not return within its time limit (its thread is abandoned)."""

    def __init__(self, what: str, seconds: float, shown: str) -> None:
        # `shown`: the limit as every output shows time (killpoint.values.durations, a
        # layer that this module, under every layer, cannot import).
        super().__init__(f"{what} did not return within the time limit ({shown})")
        self.what = what
        self.seconds = seconds


class NoProcess(KillpointError, OSError):
    """The engine could not start a worker: the kernel refused the fork (EAGAIN, ENOMEM)
    or the forkserver could not answer for it."""

    def __init__(self, why: BaseException) -> None:
        super().__init__(
            f"killpoint {NO_PROCESS} for a worker ({type(why).__name__}: {why or 'no answer'})"
        )


def flag_of(option: str) -> str:
    """The command line's flag for an option of the table: `fs_ops` is `--fs-ops`."""
    return "--" + option.replace("_", "-")


def _shown(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value)
    return value


__all__ = [
    "NO_PROCESS",
    "AcceptError",
    "AdapterError",
    "AdapterFault",
    "ConfigError",
    "CorpusError",
    "CutError",
    "CutModelError",
    "DiffError",
    "FormError",
    "ImageExists",
    "InputError",
    "Interrupted",
    "KillpointError",
    "KindError",
    "MergeError",
    "ModeError",
    "MountBusy",
    "MountFailed",
    "NoProcess",
    "NormalFormError",
    "NotInTree",
    "OptionError",
    "Overdue",
    "PgStateError",
    "PointError",
    "ProjectConfigError",
    "RecordError",
    "ReportError",
    "RerunError",
    "ScenarioRefError",
    "SchemaError",
    "ShardError",
    "StoreError",
    "StoreLeftover",
    "StoreNotSupported",
    "StoreUnavailable",
    "TargetError",
    "UnknownFinding",
    "UnknownKind",
    "UnmountFailed",
    "UnnamedObject",
    "flag_of",
]
