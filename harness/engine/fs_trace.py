"""A baseline run with its store on the power-loss mount, every store-file operation
recorded with the checkpoint it belongs to (the trace fs-op points are planned from).

The worker's `checkpoint:N:landed` gates are armed to wait for a release: at each, the
engine marks checkpoint N+1 on the server, then releases the worker. Every operation the
worker's thread made before the gate is then counted in checkpoint N, every one after it
in N+1, exactly; the fs-op cell marks its checkpoint the same way (kinds/fs_ops.py).
"""

from __future__ import annotations

from pathlib import Path

from killpoint.kinds.power_loss import BACKING, MOUNTPOINT
from killpoint.powerloss import PowerLossFS
from killpoint.scenarios import gates
from killpoint.stores import per_url
from killpoint.stores.sqlite import FILE, path_of
from killpoint.workers.processes import Outcome, Worker

# Gates armed in a traced baseline: more checkpoints than any scenario's run lands.
MAX_CHECKPOINTS = 1000


def landed_gates() -> tuple[str, ...]:
    return tuple(gates.checkpoint_gate(n, "landed") for n in range(1, MAX_CHECKPOINTS + 1))


def mount(url: str) -> tuple[PowerLossFS, str]:
    """The store's folder mounted (the store moves into it); the URL the worker writes."""
    folder = Path(path_of(url)).parent
    fs = PowerLossFS(folder / BACKING, folder / MOUNTPOINT)
    fs.mark(1)
    return fs, f"sqlite:///{folder / MOUNTPOINT / FILE}"


def follow(worker: Worker, fs: PowerLossFS, deadline: float) -> Outcome:
    """Mark each checkpoint as the worker lands the one before, until it ends."""
    n = 1
    while True:
        gate = gates.checkpoint_gate(n, "landed")
        out = worker.wait(frozenset({gate}), deadline)
        if out.kind != "gates":
            return worker.join(deadline)  # its end (or a kill past the deadline)
        fs.mark(n + 1)
        worker.release(gate)
        n += 1


def unmount(fs: PowerLossFS, url: str) -> str:
    """Unmount; the URL of the store in the backing folder, where it now is."""
    per_url.release(url)
    fs.unmount()
    folder = Path(path_of(url)).parent.parent
    return f"sqlite:///{folder / BACKING / FILE}"
