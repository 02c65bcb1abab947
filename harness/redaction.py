"""The one registry of secrets, and the masking every output goes through.

A secret is registered once: a store URL's password when the store option is read (every
spelling: `postgresql+psycopg://`, `postgres://`, `mysql://`, `sqlite://u:p@`, a
`?password=` parameter), and the value of every environment variable whose name looks
secret (`*_API_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, …). Text is masked while it is
still plain, before it is escaped or encoded (a JSON document string by string, then
dumped; the HTML from a masked document), so `\\u00e9`, `\\"` or `&amp;` forms of a secret
never exist to be missed; the escaped forms are masked too, for text that arrives escaped.

A module at the top of the package, importing nothing of killpoint's: the engine (kept
worker logs), the report, the CLI and the pytest plugin all mask with it.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

MASK = "***"
MIN_SECRET = 6  # shorter values are too common to replace anywhere they appear
# scheme://user:password@host: the password runs to the last '@' of the word (a password
# with an unescaped '@' or '/' in it is masked whole).
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][\w+.-]*://[^/\s:@]*:)(?P<password>\S*)(?=@)")
_QUERY_PASSWORD = re.compile(
    r"(?P<head>[?&;](?:password|passwd|pwd|sslpassword|secret|token)=)(?P<password>[^&\s'\"#]*)",
    re.IGNORECASE,
)
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|CREDENTIAL|AUTH)", re.IGNORECASE)
_NOT_SECRET_NAME = re.compile(r"^(PWD|OLDPWD|XAUTHORITY|SSH_AUTH_SOCK|KEYTIMEOUT)$")

# Text is often cut before it is masked (a finding's preview of a tool's arguments, a
# report's shortened line), and a cut through a secret leaves a piece no whole-secret match
# finds. A piece this long of a secret's start just before a cut mark, or of its end just
# after one, is masked; at the text's very start or end, where no mark says it was cut, a
# longer piece is needed (ordinary words share a short start with a secret).
CUT_MARKS = re.compile(r"…|\.\.\.")
PIECE_AT_MARK = MIN_SECRET
PIECE_AT_EDGE = 12

_registered: set[str] = set()
_lock = threading.Lock()
_cache: dict[tuple[frozenset[str], frozenset[str]], _Secrets] = {}


def remember(secret: str | None) -> None:
    """A value to be masked wherever it appears (a store URL's password, say)."""
    if not secret or len(secret) < MIN_SECRET:
        return
    with _lock:
        _registered.add(secret)
        decoded = unquote(secret)  # a URL carries it percent-encoded; a runtime may print it plain
        if len(decoded) >= MIN_SECRET:
            _registered.add(decoded)


def passwords(text: str) -> list[str]:
    """The passwords of the URLs in `text` (user:password@ and ?password=)."""
    found = [m.group("password") for m in _URL_PASSWORD.finditer(text)]
    found += [m.group("password") for m in _QUERY_PASSWORD.finditer(text)]
    return [p for p in found if p]


def remember_url(url: str | None) -> None:
    """Register the passwords a store option carries, in any spelling."""
    for password in passwords(str(url or "")):
        remember(password)


def secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name)) and not _NOT_SECRET_NAME.match(name)


def environment_secrets(environ: dict[str, str] | None = None) -> set[str]:
    env = os.environ if environ is None else environ
    return {value for name, value in env.items() if secret_name(name) and len(value) >= MIN_SECRET}


def forms(secret: str) -> set[str]:
    """A secret as it may appear once escaped or encoded: JSON (ASCII or not), HTML or XML
    (each way of writing a quote), a URL."""
    found = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        quote(secret, safe=""),
    }
    markup = secret.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for text in (secret, markup):
        for double, single in (("&quot;", "&#x27;"), ("&#34;", "&#39;"), ("&#x22;", "&apos;")):
            found.add(text.replace('"', double).replace("'", single))
            found.add(text.replace('"', double))
    return found


class _Secrets:
    """The known secrets in every form: one pattern for them whole, and an index of their
    pieces (every PIECE_AT_MARK-long run of characters, and where in which form it is)
    for the pieces a cut left."""

    def __init__(self, every: set[str]) -> None:
        self.pattern = (
            re.compile("|".join(re.escape(s) for s in sorted(every, key=len, reverse=True)))
            if every
            else None
        )
        self.runs: dict[str, list[tuple[str, int]]] = {}
        for form in every:
            for at in range(len(form) - PIECE_AT_MARK + 1):
                self.runs.setdefault(form[at : at + PIECE_AT_MARK], []).append((form, at))

    def start_before(self, text: str, end: int, least: int) -> int | None:
        """Where the longest piece of a secret's start that ends at `end` begins."""
        best = None
        for form, at in self.runs.get(text[max(0, end - PIECE_AT_MARK) : end], ()):
            size = at + PIECE_AT_MARK  # the piece is form[:size]
            if least <= size <= end and size < len(form) and text[end - size : end] == form[:size]:
                best = min(best, end - size) if best is not None else end - size
        return best

    def end_after(self, text: str, start: int, least: int) -> int | None:
        """Where the longest piece of a secret's end that begins at `start` ends."""
        best = None
        for form, at in self.runs.get(text[start : start + PIECE_AT_MARK], ()):
            size = len(form) - at  # the piece is form[at:]
            if size >= least and at > 0 and text[start : start + size] == form[at:]:
                best = max(best or 0, start + size)
        return best

    def cut_pieces(self, text: str) -> str:
        spans: list[tuple[int, int]] = []
        for mark in CUT_MARKS.finditer(text) if ("…" in text or "..." in text) else ():
            begin = self.start_before(text, mark.start(), PIECE_AT_MARK)
            if begin is not None:
                spans.append((begin, mark.start()))
            end = self.end_after(text, mark.end(), PIECE_AT_MARK)
            if end is not None:
                spans.append((mark.end(), end))
        begin = self.start_before(text, len(text), PIECE_AT_EDGE)
        if begin is not None:
            spans.append((begin, len(text)))
        end = self.end_after(text, 0, PIECE_AT_EDGE)
        if end is not None:
            spans.append((0, end))
        for begin, end in sorted(spans, reverse=True):
            text = text[:begin] + MASK + text[end:]
        return text


def _secrets(extra: Iterable[str] = ()) -> _Secrets:
    key = (frozenset(_registered | set(extra)), frozenset(environment_secrets()))
    found = _cache.get(key)
    if found is not None:
        return found
    found = _Secrets(
        {form for s in key[0] | key[1] for form in forms(s) if len(form) >= MIN_SECRET}
    )
    if len(_cache) > 32:
        _cache.clear()
    _cache[key] = found
    return found


def masker(extra: Iterable[str] = ()) -> Callable[[str], str]:
    """A function that masks text with the secrets known now (cheap to call many times)."""
    secrets = _secrets(extra)

    def mask(text: str) -> str:
        if "://" in text:
            text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
        if "=" in text:
            text = _QUERY_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
        if secrets.pattern is not None:
            text = secrets.pattern.sub(MASK, text)
            text = secrets.cut_pieces(text)
        return text

    return mask


def secret_forms(secrets: Iterable[str] = ()) -> list[str]:
    """Every form of `secrets` and of the environment's secrets, longest first (so that a
    secret inside a longer one is not replaced first)."""
    return sorted(
        {f for s in {*secrets, *environment_secrets()} if len(s) >= MIN_SECRET for f in forms(s)},
        key=len,
        reverse=True,
    )


def replacer(secrets: Iterable[str], mask: str) -> Callable[[str], str]:
    """Every form of `secrets` and of the environment's secrets replaced by `mask`, and
    nothing else: what a cassette holds instead of a secret, so that a replay that sees the
    secret again reads the same text the recording wrote."""
    every = secret_forms(secrets)

    def replace(text: str) -> str:
        for secret in every:
            if secret in text:
                text = text.replace(secret, mask)
        return text

    return replace


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with URL passwords and every known secret masked."""
    return masker(secrets)(text)


def redact_argv(argv: Iterable[str]) -> list[str]:
    mask = masker()
    return [mask(arg) for arg in argv]


def redact_tree(
    value: Any, mask: Callable[[str], str] | None = None, limit: int | None = None
) -> Any:
    """A JSON-shaped value with every string in it (keys too) masked, then cut to `limit`
    characters with a marker (None: whole); the rest as it is."""
    mask = mask or masker()
    if isinstance(value, str):
        text = mask(value)
        if limit is not None and len(text) > limit:
            # The end says most (a traceback's last line); a 4 MiB field does not fit.
            text = f"[{len(text) - limit} characters cut] …" + text[-limit:]
        return text
    if isinstance(value, dict):
        return {
            (mask(k) if isinstance(k, str) else k): redact_tree(v, mask, limit)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact_tree(v, mask, limit) for v in value]
    return value


def cut_file(path: Path, limit: int) -> None:
    """A kept log over `limit` bytes is cut to its head and its tail, with a marker that
    says how much was dropped."""
    try:
        size = path.stat().st_size
        if size <= limit:
            return
        room = limit - 100  # the marker's
        head_size, tail_size = room // 4, room - room // 4
        with open(path, "rb") as f:
            head = f.read(head_size)
            f.seek(size - tail_size)
            tail = f.read(tail_size)
        marker = f"\n[killpoint: {size - head_size - tail_size} bytes cut here]\n".encode()
        path.write_bytes(head + marker + tail)
    except OSError:
        return


def redact_file(path: Path, limit: int) -> None:
    """Mask a kept text file in place (a log over `limit` bytes is cut first; a binary
    file, a store, is left as it is)."""
    try:
        if not path.is_file() or path.is_symlink():
            return
        if path.suffix == ".log":
            cut_file(path, limit)
        if path.stat().st_size > limit:
            return
        data = path.read_bytes()
    except OSError:
        return
    if b"\0" in data:
        return
    text = data.decode("utf-8", "replace")
    masked = redact(text)
    if masked != text:
        try:
            path.write_text(masked, encoding="utf-8")
        except OSError:
            return


def redact_folder(folder: Path, limit: int) -> None:
    """Every text file of a kept folder masked (worker logs, ledgers, notes)."""
    try:
        files = [p for p in folder.rglob("*") if p.is_file()]
    except OSError:
        return
    for path in files:
        redact_file(path, limit)


__all__ = [
    "MASK",
    "environment_secrets",
    "forms",
    "masker",
    "passwords",
    "redact",
    "redact_argv",
    "redact_file",
    "redact_folder",
    "redact_tree",
    "remember",
    "remember_url",
    "secret_forms",
    "secret_name",
]
