"""hostile-content: tool results and arguments full of markup, escapes and odd characters.

Everything a store, a normaliser or an HTML report must carry through unchanged (and
escape when shown): HTML with <script>, event handlers and javascript: URLs, ANSI
escapes, NUL bytes, RTL overrides, zero-width characters, emoji (ZWJ sequences),
combining marks, and JSON text with escaped lone surrogates.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from ..conversation import Conversation
from ..scenario import Expected, Scenario
from ..script import Reply, ToolRequest
from ..tooling import ToolEnv

PAYLOADS: dict[str, str] = {
    "html": (
        "<html><head><style>body{display:none}</style></head><body>"
        '<h1 title="x">Report</h1><script>alert("pwned")</script>'
        '<img src=x onerror="alert(1)"><svg onload=alert(2)></svg>'
        '<a href="javascript:alert(3)">click</a><iframe srcdoc="<b>x</b>"></iframe>'
        "<!-- comment --> </textarea></pre>{{ jinja }} {% raw %} &amp; &lt;"
        "</body></html>"
    ),
    "ansi": "\x1b[31mRED\x1b[0m \x1b[1;4mbold\x1b[0m \x1b[2J\x1b[H\x1b]0;title\x07\r\n\tbell\x07 bs\x08",
    "nul": "before\x00after\x00\x00end\x7f\x1f",
    "unicode": (
        "RTL:\u202egnp.exe\u202c zero\u200bwidth\u200c\u200d joiner \ufeffBOM "
        "\U0001f469\u200d\U0001f4bb \U0001f3f3\ufe0f\u200d\U0001f308 e\u0301 \U0001f600 "
        "\ufdfd \u0000\u2028line\u2029para \uffff"
    ),
    "json": '{"lone": "\\ud800", "pair": "\\ud83d\\ude00", "low": "\\udfff", '
    '"quote": "\\"", "nul": "\\u0000", "slash": "<\\/script>"}',
}
KINDS = tuple(PAYLOADS)


def tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def fetch_page(kind: str) -> str:
        """Fetch a page of untrusted content."""
        return PAYLOADS.get(kind, f"no page {kind!r}")

    def save_note(text: str) -> str:
        """Save a note; returns its length and checksum."""
        return f"saved {len(text)} chars, sha256 {_digest(text)}"

    return [fetch_page, save_note]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def note(outputs: list[str | None]) -> str:
    return "\n---\n".join(o if o is not None else "(missing)" for o in outputs)


def final_text(saved: str | None, html: str | None) -> str:
    return f"Noted the pages ({saved}). The HTML page was: {html}"


def script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    if not turns:
        return Reply.batch(*(ToolRequest("fetch_page", {"kind": k}) for k in KINDS))
    pages = {str(c.arguments.get("kind")): turns[0].output_of(c) for c in turns[0].calls}
    if len(turns) == 1:
        # The hostile text goes back to a tool as an argument, too.
        return Reply.call("save_note", text=note([pages.get(k) for k in KINDS]))
    saved = turns[1].output_of(turns[1].calls[0]) if turns[1].calls else None
    return Reply.final(final_text(saved, pages.get("html")))


SCENARIO = Scenario(
    name="hostile-content",
    description="tool results and arguments with HTML/<script>/onerror, ANSI escapes, NUL "
    "bytes, RTL and zero-width characters, emoji, escaped lone surrogates",
    script=script,
    tools=tools,
    inputs=("Read these pages <b>carefully</b> \u202eand note them\u202c.",),
    instructions="Never render <script>alert('instructions')</script> content.",
    expected=(
        Expected(
            content=final_text(
                f"saved {len(note(list(PAYLOADS.values())))} chars, "
                f"sha256 {_digest(note(list(PAYLOADS.values())))}",
                PAYLOADS["html"],
            ),
            calls=(*("fetch_page" for _ in KINDS), "save_note"),
        ),
    ),
)
