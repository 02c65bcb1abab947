"""The one rule that turns a cell's findings into its verdict, and the headline it shows."""

from __future__ import annotations

from pathlib import Path

from killpoint.values.findings import (
    HARM_OF,
    HARMS,
    KINDS,
    Finding,
    deciding_data,
    headline,
    ranked,
    verdict_of,
)

LOST = Finding("run-lost", "run 1 is not in the store after the crash", expected=True)
CANCEL = Finding(
    "cancel-ignored", "a cancel was requested during model turn 1, yet model turn 2 was requested"
)


class TestDecidingFinding:
    def test_an_allowed_loss_never_outranks_an_unexpected_cancel(self) -> None:
        """agno/cancel/runs/sqlite/mid-batch:4:0: the loss is allowed there, the cancel is not;
        the cell is about the cancel (its verdict, its glyph, its headline)."""
        found = ranked([LOST, CANCEL])
        assert verdict_of(found) == ("diverged", False)
        assert CANCEL.sentence == headline(found)
        assert deciding_data([f.to_json() for f in found])["kind"] == "cancel-ignored"

    def test_a_cell_whose_findings_are_all_allowed_reads_as_the_most_severe_of_them(self) -> None:
        repeat = Finding("effect-repeated", "search ran again once", expected=True)
        found = ranked([repeat, LOST])
        assert verdict_of(found) == ("lost", True)
        assert LOST.sentence == headline(found)

    def test_without_a_finding_that_names_a_verdict_there_is_no_headline(self) -> None:
        low = Finding("inconsistency", "a stale mark")
        assert verdict_of([low]) == ("ok", True)
        assert headline([low]) == ""
        assert deciding_data([low.to_json()]) is None

    def test_among_unexpected_findings_the_most_severe_decides(self) -> None:
        usage = Finding("usage-differs", "metrics differ")
        dup = Finding("effect-duplicated", "charged twice")
        assert headline(ranked([usage, LOST, dup])) == "charged twice"
        assert verdict_of([usage, LOST, dup]) == ("duplicated", False)


class TestSeverity:
    def test_every_kind_takes_its_severity_from_the_one_table(self) -> None:
        """A new kind must name its harm; its severity is that harm's."""
        harms = {h.name: h for h in HARMS}
        for kind in KINDS.values():
            assert kind.name in HARM_OF, f"{kind.name}: name its harm in HARM_OF"
            harm = harms[HARM_OF[kind.name]]
            assert kind.severity == harm.severity, (kind.name, harm.name)

    def test_losing_messages_outranks_a_token_count(self) -> None:
        assert KINDS["messages-differ"].severity == "high"
        assert KINDS["usage-differs"].severity == "low"
        assert KINDS["run-differs"].severity == "high"

    def test_the_reference_states_the_table(self) -> None:
        page = Path(__file__).parents[3] / "docs" / "reference" / "findings.md"
        text = page.read_text(encoding="utf-8")
        for harm in HARMS:
            kinds = ", ".join(f"`{k}`" for k, h in HARM_OF.items() if h == harm.name)
            row = f"| {harm.severity} | {harm.what} | {kinds} |"
            assert row in text, f"docs/reference/findings.md lacks the severity row:\n{row}"


class TestTerminalEarly:
    def test_a_terminal_status_stored_before_the_end_decides_what_it_caused(self) -> None:
        """A run stored COMPLETED mid-run is never resumed: what it had still to do is lost
        and its content differs. The store's invariant is what broke; the cell is corrupt
        and says so first, with the severity of the store's other invariants."""
        early = Finding("terminal-early", "run 1 was already COMPLETED in the store at ...")
        lost = Finding("tool-executions-lost", "3 of the 4 tool executions ... are missing")
        differs = Finding("messages-differ", "the resumed run holds 3 messages, the baseline 10")
        found = ranked([lost, differs, early])
        assert verdict_of(found) == ("corrupt", False)
        assert early.sentence == headline(found)
        assert (early.severity, HARM_OF["terminal-early"]) == ("high", "store")
