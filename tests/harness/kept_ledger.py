"""What a kept cell's ledger says was repeated, beside what the cell's findings name."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from killpoint.scenarios import ledger as ledger_mod


def repeated_in_ledger(result: Any) -> dict[str, int]:
    """Tool -> how many more times it started than once (every scenario these tests run
    calls each effect once in its baseline). Needs the cell's folder kept."""
    assert result.kept is not None, "the cell's folder was not kept"
    started = Counter(
        e.tool for e in ledger_mod.read(Path(result.kept) / "ledger.jsonl") if e.phase == "started"
    )
    return {tool: n - 1 for tool, n in started.items() if n > 1}


def repeats_named(result: Any) -> dict[str, int]:
    """Tool -> the repeats the cell's `effect-duplicated` findings count."""
    return {
        f["tool"]: f["actual_value"] for f in result.findings if f["kind"] == "effect-duplicated"
    }


__all__ = ["repeated_in_ledger", "repeats_named"]
