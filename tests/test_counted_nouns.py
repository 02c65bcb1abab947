"""Nouns counted everywhere (issue 56: "1 cells", "cell(s)" remained in terminal lines):
no text of killpoint's leaves a plural to the reader, and no number stands before a
plural noun unless the noun agrees with it (killpoint.values.sentences.count)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "harness"
TEMPLATES = HARNESS / "report" / "templates"
NOUNS = (
    "cells|groups|rows|shards|states|findings|checks|duplicates|repeats|events|lines|"
    "causes|points|runs|calls|checkpoints|folders|workers|more groups|more cells"
)
# A number in braces, then a plural noun: "{n} cells", "{len(rows)} rows". Not a unit
# ("cells/s"); a name in braces ("{kind} points": the mid-model points) is no number.
BARE = re.compile(
    r"\{[^{}]*(?:len\(|total|count|\bn\b|repeat|number|checkpoints|calls)[^{}]*\}\s+"
    r"(?:" + NOUNS + r")\b(?!/s)"
)
EXPRESSION = re.compile(r"\{[^{}]*\}")  # an f-string's expression: code, not text
QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")  # a script's string literals


def strings(path: Path) -> list[tuple[int, str]]:
    """The string literals of a Python file, with their line numbers."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [(t.start[0], t.string) for t in tokens if t.type == tokenize.STRING]


def test_no_text_leaves_a_plural_to_the_reader() -> None:
    found = []
    for path in sorted(HARNESS.rglob("*.py")):
        if path.name == "sentences.py":  # it names "(s)" to refuse it
            continue
        found += [
            f"{path.name}:{n}: {text}"
            for n, text in strings(path)
            if "(s)" in EXPRESSION.sub("", text)
        ]
    for path in sorted(TEMPLATES.glob("*.*")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            texts = QUOTED.findall(line) if path.suffix == ".js" else [line]
            found += [f"{path.name}:{n}: {t[:80]}" for t in texts if "(s)" in t]
    assert not found, "\n".join(found)


def test_a_number_before_a_plural_noun_is_counted() -> None:
    found = []
    for path in sorted(HARNESS.rglob("*.py")):
        for n, text in strings(path):
            if text.startswith(("f'", 'f"', "rf", "fr")) or text[:4].lower().startswith(
                ('f"""', "f'''")
            ):
                found += [f"{path.name}:{n}: {m.group()}" for m in BARE.finditer(text)]
    assert not found, "\n".join(found)


def test_the_pages_count_their_nouns() -> None:
    """In the templates, a number before a plural noun is followed by the agreement."""
    found = []
    for path in sorted(TEMPLATES.glob("*.j2")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            found += [
                f"{path.name}:{n}: {m.group()}"
                for m in re.finditer(r"\{\{[^}\"']*\}\}\s+(?:" + NOUNS + r")\b", line)
            ]
    assert not found, "\n".join(found)
