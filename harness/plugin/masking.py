"""No secret in pytest's own outputs: a test's report (its failure text, its captured
output) is masked before the terminal or `--junitxml` sees it, whichever test made it."""

from __future__ import annotations

from typing import Any

from killpoint.redaction import masker


def mask_report(report: Any) -> None:
    """Mask, in place, what a test report carries as text."""
    from killpoint.report.text import visible

    secrets = masker()

    def mask(text: str) -> str:
        return visible(secrets(text))  # no escape sequence reaches the terminal raw either

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
    """A terminal reporter whose lines are masked and made visible (what killpoint's own
    summary writes holds run content)."""

    def __init__(self, reporter: Any) -> None:
        from killpoint.report.text import visible

        self._reporter = reporter
        self._mask = masker()
        self._visible = visible

    def write_line(self, line: str, **markup: bool) -> None:
        self._reporter.write_line(self._visible(self._mask(line)), **markup)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reporter, name)


__all__ = ["MaskedTerminal", "mask_report"]
