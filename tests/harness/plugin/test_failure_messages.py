"""What a failed cell says: every line of the message."""

# ruff: noqa: SIM300
from __future__ import annotations

from dataclasses import replace

from killpoint.plugin.failure_messages import cell_failure, finding_lines
from killpoint.values.cell import CellResult
from killpoint.values.findings import Finding
from killpoint.values.timeline import Event

CELL = "reference/research/tool-batch/sqlite/after-checkpoint:2"
REPLAY = f"killpoint replay {CELL}"
BARE = CellResult(
    id=CELL,
    runtime="reference",
    scenario="research",
    mode="tool-batch",
    store="sqlite",
    schedule=["after-checkpoint:2"],
    verdict="missed",
    expected=False,
    replay=REPLAY,
)


def test_every_line_of_a_failed_cell() -> None:
    result = replace(
        BARE,
        verdict="diverged",
        detail="the resumed run ended RUNNING",
        findings=[
            Finding(
                "status-differs", "run 1 ends RUNNING in the resumed run, COMPLETED in the baseline"
            ).to_json(),
            Finding("effect-repeated", "a call in flight ran again", expected=True).to_json(),
            Finding("effect-duplicated", "charge_card ran twice more").to_json(),
        ],
        duplicates=3,
        bound=1,
        kept="/tmp/kept/00001",
        stderr_tail="\nstarting\nTraceback (most recent call last)\n\n",
    )

    assert [
        f"killpoint: {CELL}",
        "  verdict:          diverged (unexpected for tool-batch at after-checkpoint:2)",
        "  detail:           the resumed run ended RUNNING",
        "  findings:",
        "    status-differs: run 1 ends RUNNING in the resumed run, COMPLETED in the baseline",
        "    effect-duplicated: charge_card ran twice more",
        "  duplicates:       3 (bound 1)",
        f"  replay:           {REPLAY}",
        "  seed:             5 (--crash-seed 5)",
        "  kept:             /tmp/kept/00001 (store, ledger, worker logs)",
        "  worker stderr (tail):",
        "    starting",
        "    Traceback (most recent call last)",
    ] == cell_failure(result, 5).splitlines()


def test_a_bare_cell_says_dash_and_leaves_out_what_it_lacks() -> None:
    lines = cell_failure(replace(BARE, schedule=["after-checkpoint:1", "after-checkpoint:2"]), 9)

    assert (
        "  verdict:          missed (unexpected for tool-batch at after-checkpoint:1+after-checkpoint:2)"
        in lines.splitlines()
    )
    assert "  detail:           -" in lines.splitlines()
    assert "  findings:" in lines.splitlines()
    assert "  seed:             9 (--crash-seed 9)" == lines.splitlines()[-1]


def test_only_the_last_twenty_stderr_lines_are_shown() -> None:
    tail = "\n".join(f"line {n}" for n in range(1, 26))

    lines = cell_failure(replace(BARE, stderr_tail=tail), 1).splitlines()

    assert "    line 6" == lines[lines.index("  worker stderr (tail):") + 1]
    assert "    line 25" == lines[-1]
    assert 20 == sum(1 for line in lines if line.startswith("    line "))


def test_findings_allowed_here_are_left_out_and_many_are_cut() -> None:
    """Only what is wrong is listed (an allowed repeat is not); past the limit, a count."""
    many = [Finding("messages-differ", f"difference {n}").to_json() for n in range(10)]
    allowed = Finding("effect-repeated", "allowed", expected=True).to_json()

    lines = finding_lines(replace(BARE, findings=[allowed, *many]), limit=3)

    assert [
        "  messages-differ: difference 0",
        "  messages-differ: difference 1",
        "  messages-differ: difference 2",
        "  ... and 7 more findings in the JSON",
    ] == lines


def test_the_last_fifteen_timeline_events_are_shown() -> None:
    events = [Event(n / 100, f"event {n}", "other", "harness") for n in range(1, 21)]

    lines = cell_failure(replace(BARE, timeline=events), 1).splitlines()

    shown = lines[lines.index("  timeline:") + 1 :]
    assert "        +60 ms  event 6" == shown[0]
    assert "       +200 ms  event 20" == shown[14]
    assert 15 == sum(1 for line in shown if "s  event " in line)
