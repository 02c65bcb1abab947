"""No secret in pytest's own outputs: a test's report (its failure text, its captured
output) is masked before the terminal or `--junitxml` sees it, whichever test made it;
and each of its lines made safe to show (killpoint.values.shown.lines: no escape
sequence, no workflow command), as every line killpoint's summary writes is."""

from __future__ import annotations

from typing import Any

from killpoint.redaction import masker


def mask_report(report: Any) -> None:
    """Mask, in place, what a test report carries as text."""
    from killpoint.values.shown import lines

    secrets = masker()

    def mask(text: str) -> str:
        return lines(secrets(text))  # no escape sequence nor command reaches the log either

    longrepr = getattr(report, "longrepr", None)
    if longrepr is not None:
        text = str(longrepr)
        masked = mask(text)
        if masked != text:
            report.longrepr = masked  # pytest and junitxml print a str longrepr as it is
    sections = getattr(report, "sections", None)
    if sections:
        report.sections = [(title, mask(content)) for title, content in sections]


class MaskedTerminal:
    """A terminal reporter whose lines are masked and each kept one line
    (killpoint.values.shown.line: what killpoint's own summary writes holds run content)."""

    def __init__(self, reporter: Any) -> None:
        from killpoint.values.shown import line

        self._reporter = reporter
        self._mask = masker()
        self._line = line

    def write_line(self, line: str, **markup: bool) -> None:
        self._reporter.write_line(self._line(self._mask(line)), **markup)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reporter, name)


__all__ = ["MaskedTerminal", "mask_report"]
