"""No secret in pytest's own outputs: a test's report (its failure text, its captured
output) is masked before the terminal or `--junitxml` sees it, whichever test made it."""

from __future__ import annotations

from typing import Any

from killpoint.redaction import masker


def mask_report(report: Any) -> None:
    """Mask, in place, what a test report carries as text."""
    mask = masker()
    longrepr = getattr(report, "longrepr", None)
    if longrepr is not None:
        text = str(longrepr)
        masked = mask(text)
        if masked != text:
            report.longrepr = masked  # pytest and junitxml print a str longrepr as it is
    sections = getattr(report, "sections", None)
    if sections:
        report.sections = [(title, mask(content)) for title, content in sections]


__all__ = ["mask_report"]
