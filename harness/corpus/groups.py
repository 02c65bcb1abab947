"""What a state checked under other code comes to: one group per state.

A state must resume as the checking version's own baseline of the same scenario ends, or
fail closed (a clear error, nothing changed in the store, no effect done). Anything else
is named by what went wrong, most severe first; a state's group is the most severe of
what its check found.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Group:
    name: str
    severity: str  # "high" | "medium" | "low" | "info"
    failing: bool  # fails `corpus check` (exit 1) and the state's test item
    meaning: str


GROUPS: tuple[Group, ...] = (
    Group("hung", "high", True, "the resumer passed its time limit"),
    Group("store-unreadable", "high", True, "the checking version cannot read the rows the recording version left"),
    Group("effect-repeated-after-upgrade", "high", True, "the resumed run repeated a side effect the old worker had done, beyond the bound"),
    Group("stranded", "high", True, "the run is left RUNNING or PENDING with nothing that will finish it"),
    Group("diverged-after-upgrade", "high", True, "the resumed run ends otherwise than the checking version's own baseline, failed after changing the store, or left it breaking an invariant"),
    Group("effect-repeated-in-control", "high", True, "checked with the very versions that recorded it (a control, no upgrade): the resumed run repeated a side effect the old worker had done, beyond the bound"),
    Group("diverged-in-control", "high", True, "checked with the very versions that recorded it (a control, no upgrade): the resumed run ends otherwise than that version's own baseline, failed after changing the store, or left it breaking an invariant"),
    Group("no-baseline", "high", True, "the checking version's own uninterrupted run of the scenario failed: nothing to hold the state to"),
    Group("adapter-error", "high", True, "the checking version's adapter answered outside its Protocol (an invalid normal form): the adapter's defect; nothing is said of the runtime"),
    Group("error", "high", True, "killpoint itself failed on this state; nothing is said of the runtime"),
    Group("broken-when-recorded", "info", False, "the recording version's own cell found the store broken at this point: the state tests no upgrade"),
    Group("fails-closed", "low", False, "the checking version refused the state with an error, and changed nothing"),
    Group("ok", "info", False, "the resumed run ends as the checking version's baseline does"),
)  # fmt: skip
BY_NAME = {g.name: g for g in GROUPS}
# A state checked with the versions that recorded it: what went wrong is no upgrade's.
CONTROL = {
    "diverged-after-upgrade": "diverged-in-control",
    "effect-repeated-after-upgrade": "effect-repeated-in-control",
}
ORDER = {g.name: n for n, g in enumerate(GROUPS)}


def worst(names: list[str]) -> str:
    """The most severe group among `names`; `ok` when there is none."""
    return min(names, key=ORDER.__getitem__) if names else "ok"


__all__ = ["BY_NAME", "CONTROL", "GROUPS", "Group", "worst"]
