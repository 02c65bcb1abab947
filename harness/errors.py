"""The one family of errors killpoint raises on purpose.

Every such error is a KillpointError, and also the built-in it means (a bad value is a
ValueError, a mount that fails an OSError), so `except ValueError` keeps working where it
did. A face (the CLI, the pytest plugin) catches KillpointError and shows its message as
one line; anything else escaping is a bug in killpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class KillpointError(Exception):
    """Base of every error killpoint raises on purpose: bad input, an unusable store, a
    report that cannot be read or written, an interrupted campaign."""


class ConfigError(KillpointError, ValueError):
    """A campaign that cannot run as configured; the message names the fix."""


class OptionError(ConfigError):
    """One option with a bad value: which, the value, why, and the choices.

    `option` is the option's name in killpoint.engine.option_table (`fs_ops`); each front
    shows the error with its own name for it (`--fs-ops`, `--crash-fs-ops`, `ini option
    crash_fs_ops`, `crash.check fs_ops`) through `text(label)`; the rest of the sentence
    is the same everywhere."""

    def __init__(self, option: str, value: Any, why: str, choices: Sequence[str] = ()) -> None:
        self.option = option
        self.value = value
        self.why = why.removeprefix("killpoint: ")
        self.choices = tuple(choices)
        super().__init__(self.text())

    @property
    def reason(self) -> str:
        """Why, and the choices: the part every front end says the same way."""
        if self.choices and "choose from" not in self.why:
            return f"{self.why}; choose from {', '.join(self.choices)}"
        return self.why

    def text(self, label: str | None = None) -> str:
        """One line: `killpoint: LABEL='VALUE': why; choose from ...` (LABEL: the command
        line's flag unless a front names the option otherwise)."""
        label = label or flag_of(self.option)
        return f"killpoint: {label}={_shown(self.value)!r}: {self.reason}"


def flag_of(option: str) -> str:
    """The command line's flag for an option of the table: `fs_ops` is `--fs-ops`."""
    return "--" + option.replace("_", "-")


def _shown(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value)
    return value


__all__ = ["ConfigError", "KillpointError", "OptionError", "flag_of"]
