"""killpoint's own writes in a worker (the ledger, the scripted model's state): a write
the disk refuses is killpoint's failure, and the engine hears of it whoever catches it.

A ledger line that meets ENOSPC raises inside the tool, and the runtime records a tool
that failed; a model-state write that meets it fails the HTTP call, which the SDK
retries and the runtime records as a failed run. Either read as the runtime's verdict
(a divergence, an unexpected outcome, a row called nondeterministic) unless the engine's
sampling of the free space happened to see the disk full in that moment. So each such
write goes through `own_write`, which hands the error to the hook the worker installed
(`on_refused`: a message to the engine over its pipe) before the error goes on.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Callable, Iterator

REFUSED = (errno.ENOSPC, errno.EDQUOT)
_hook: Callable[[str], None] | None = None


def on_refused(hook: Callable[[str], None] | None) -> None:
    """`hook(text)` is called with each own write the disk refuses in this process."""
    global _hook
    _hook = hook


@contextlib.contextmanager
def own_write(what: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        if exc.errno in REFUSED and _hook is not None:
            # Telling must not replace the error the caller is owed.
            with contextlib.suppress(Exception):
                _hook(f"killpoint's own write to {what} failed: {exc}")
        raise


__all__ = ["on_refused", "own_write"]
