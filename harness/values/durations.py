"""Time as every output of killpoint shows it, in one format: "54 ms", "1.2 s", "12 min 3 s",
"2 h 5 min"; an instant on a cell's clock is the same with a sign ("+1.2 s").

The report's script formats time the same way (templates/report.js, `duration`); a test
holds the two to the same answers.
"""

from __future__ import annotations


def duration(seconds: float) -> str:
    """A length of time: whole milliseconds under a second, tenths of a second under a
    minute, then minutes and seconds, then hours and minutes."""
    seconds = max(float(seconds), 0.0)
    if round(seconds * 1000) < 1000:
        return f"{round(seconds * 1000)} ms"
    tenths = round(seconds, 1)
    if tenths < 60:
        return str(tenths) + " s"
    whole = round(seconds)
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def offset(seconds: float) -> str:
    """An instant on a clock whose zero is known (a cell's start): "+1.2 s", "-40 ms"
    (before the zero: what a row's traced worker did before the cell began)."""
    return ("-" if seconds < 0 else "+") + duration(abs(seconds))


__all__ = ["duration", "offset"]
