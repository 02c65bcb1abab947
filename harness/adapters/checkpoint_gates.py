"""Gates around a runtime's durable writes: the part of an adapter that tells the engine
where each checkpoint begins, commits and lands.

A worker gets one `CheckpointGates` and hands it to `RuntimeAdapter.instrument`. The
adapter marks the function that makes a checkpoint durable (`wrap`, or the `write`
context managers), and connects the database driver's commits (`watch_sqlalchemy`,
`watch_sqlite3`, `watch_aiosqlite`). For every checkpoint n (counted from the worker's
offset + 1) the gates are then:

  checkpoint:{n}:writing     before the write begins (nothing of it is in the store)
  checkpoint:{n}:committing  inside each of its transactions, right before COMMIT
  checkpoint:{n}:landed      after the write returned: it is durable

A write that raises never hits `landed`. Each write is also an event of the run's history
(scenarios.history: `write`, then `committed` or `write-failed`), with the facts the
adapter gives (the run, the status written, the calls of the replies it holds); so are the
other durable writes the adapter marks (`durable`: a journaled reply), the leases it
stamps and the claims it decides (`lease`, `claim`), and the store's durability settings
as the runtime's own connection reads them (`settings`). The history's rules
(killpoint.judge.history) read those facts; an adapter that gives none is judged on less.

Which checkpoint a COMMIT belongs to is known
from the thread or asyncio task that opened it: a COMMIT of another thread (a lease
renewal, say) is not one of its transactions. A driver that commits from a thread of its
own (aiosqlite) is the exception: its COMMITs go to the one checkpoint open in the
process, and to none when several are open at once (a runtime that overlaps its writes
gets no `committing` gate rather than a wrong one).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import itertools
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, TypeVar

from killpoint.scenarios import gates, history

F = TypeVar("F", bound=Callable[..., Any])


class Written:
    """What became of a write marked with `CheckpointGates.durable`."""

    landed = True


class CheckpointGates:
    """Numbers one worker's checkpoints and hits their gates."""

    def __init__(self, offset: int = 0) -> None:
        self._numbers = itertools.count(offset + 1)
        self._lock = threading.Lock()
        self._open: list[int] = []
        self._current: contextvars.ContextVar[int | None] = contextvars.ContextVar(
            "killpoint_checkpoint", default=None
        )
        self._began: dict[int, float] = {}  # checkpoint -> when its write began (true clock)

    # -- opening and closing ----------------------------------------------------------------

    def begin(self, **facts: Any) -> int:
        """A checkpoint's write begins: its number, after its `writing` gate. `facts`: what
        it writes, for the history (run_id, status, calls: [[name, arguments]] of the
        replies it makes durable, lease_expires_at)."""
        with self._lock:
            n = next(self._numbers)
            self._open.append(n)
            self._began[n] = history.true_time()
        self._current.set(n)
        history.record("write", what="checkpoint", number=n, **facts)
        gates.hit(gates.checkpoint_gate(n, "writing"))
        return n

    def end(self, n: int, *, landed: bool, **facts: Any) -> None:
        """The write of checkpoint n returned (landed) or raised (not landed)."""
        with self._lock:
            if n in self._open:
                self._open.remove(n)
            began = self._began.pop(n, None)
        if self._current.get() == n:
            self._current.set(None)
        history.record(
            "committed" if landed else "write-failed", what="checkpoint", number=n, **facts
        )
        if landed:
            lease = facts.get("lease_expires_at")
            if lease is not None:
                self.lease(str(facts.get("run_id")), lease, by="checkpoint", since=began)
            gates.hit(gates.checkpoint_gate(n, "landed"))

    def current(self, *, any_thread: bool = False) -> int | None:
        """The checkpoint being written by this thread or task; with `any_thread`, else
        the only one open in the process (for a driver's own thread); else None."""
        n = self._current.get()
        if n is not None or not any_thread:
            return n
        with self._lock:
            return self._open[0] if len(self._open) == 1 else None

    def committing(self, *, any_thread: bool = False) -> None:
        """Called by a commit hook right before COMMIT: the current checkpoint's gate."""
        n = self.current(any_thread=any_thread)
        if n is not None:
            gates.hit(gates.checkpoint_gate(n, "committing"))

    @contextlib.contextmanager
    def write(self, **facts: Any) -> Iterator[int]:
        """`with checkpoints.write(): ...` around a durable write (`facts`: see begin)."""
        n = self.begin(**facts)
        try:
            yield n
        except BaseException:
            self.end(n, landed=False, **facts)
            raise
        self.end(n, landed=True, **facts)

    @contextlib.asynccontextmanager
    async def awrite(self, **facts: Any) -> AsyncIterator[int]:
        """`async with checkpoints.awrite(): ...` around a durable write."""
        n = self.begin(**facts)
        try:
            yield n
        except BaseException:
            self.end(n, landed=False, **facts)
            raise
        self.end(n, landed=True, **facts)

    def wrap(self, fn: F, facts: Callable[..., Mapping[str, Any]] | None = None) -> F:
        """`fn` (a function or coroutine function) made one checkpoint per call; `facts`,
        called with the same arguments, says what each call writes (see begin)."""

        def said(args: Any, kwargs: Any) -> dict[str, Any]:
            return dict(facts(*args, **kwargs)) if facts is not None else {}

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                async with self.awrite(**said(args, kwargs)):
                    return await fn(*args, **kwargs)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.write(**said(args, kwargs)):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    # -- the history's other facts ------------------------------------------------------------

    @contextlib.contextmanager
    def durable(self, what: str, **facts: Any) -> Iterator[Written]:
        """`with checkpoints.durable("reply", run_id=..., calls=[[name, arguments]]) as w:`
        around a durable write that is no checkpoint (a reply journaled before its tools
        run): no gate, no number, its `write` and `committed` events only. A write that
        fails without raising says so (`w.landed = False`)."""
        history.record("write", what=what, **facts)
        written = Written()
        try:
            yield written
        except BaseException:
            history.record("write-failed", what=what, **facts)
            raise
        history.record("committed" if written.landed else "write-failed", what=what, **facts)

    def lease(self, run_id: str, expires_at: float, *, by: str, since: float | None = None) -> None:
        """The runtime stamped a lease of `run_id` to expire at `expires_at` (its clock's
        time.time()); `by`: what stamped it (claim, renewal, checkpoint); `since`: when
        the operation that stamped it began (history.true_time(); default: now). A lease
        that runs out before `since` was stamped already expired."""
        history.record(
            "lease",
            run_id=run_id,
            expires_at=float(expires_at),
            by=by,
            since=history.true_time() if since is None else since,
        )

    def claim(self, run_id: str, *, granted: bool, why: str | None = None) -> None:
        """A claim of `run_id` by this worker was decided."""
        history.record("claim", run_id=run_id, granted=granted, why=why)

    def settings(self, values: Mapping[str, Any]) -> None:
        """The store's durability settings, as the runtime's own connection reads them
        (killpoint.stores.durability.read_settings)."""
        history.record("settings", **{str(k): v for k, v in values.items()})

    # -- commit hooks -----------------------------------------------------------------------

    def watch_sqlalchemy(self, target: Any = None) -> None:
        """Hit `committing` on every SQLAlchemy COMMIT (of `target`, an Engine or the Engine
        class; default: every engine of the process). SQLAlchemy's "commit" event fires
        inside the transaction, before COMMIT is sent."""
        from sqlalchemy import Engine, event

        event.listen(Engine if target is None else target, "commit", lambda conn: self.committing())

    def watch_sqlite3(self, connection: Any) -> None:
        """Hit `committing` before every COMMIT of a sqlite3 connection. Its trace callback
        sees each statement as it starts, the COMMIT that `commit()` runs included."""
        connection.set_trace_callback(self._on_statement)

    async def watch_aiosqlite(self, connection: Any) -> None:
        """Hit `committing` before every COMMIT of an aiosqlite connection (the callback
        runs on aiosqlite's own thread: see the module's note on which checkpoint)."""
        await connection.set_trace_callback(self._on_driver_thread_statement)

    def _on_statement(self, statement: str) -> None:
        if statement.lstrip()[:6].upper() == "COMMIT":
            self.committing()

    def _on_driver_thread_statement(self, statement: str) -> None:
        if statement.lstrip()[:6].upper() == "COMMIT":
            self.committing(any_thread=True)


__all__ = ["CheckpointGates", "Written"]
