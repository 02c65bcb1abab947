"""What a cut did to each file and to each unsynced operation: the evidence a power-loss
cell carries."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from killpoint.values.sentences import count

# What the image holds at a path, compared with the live folder at the cut.
DURABLE = "durable"  # the same file, named here both before and after the cut
NOT_DURABLE = "not durable"  # created (or renamed here) since its directory's last sync: gone
RESTORED = "restored"  # removed (or renamed away) since its directory's last sync: back
REPLACED = "replaced"  # the name now holds another file than at its directory's last sync

# What became of an operation made since its file's (or directory's) last sync.
KEPT = "kept"  # in the image whole
TORN = "torn"  # a prefix of the write is in the image (`kept` bytes)
DROPPED = "dropped"  # not in the image (the model dropped it, or its file is not there)
FATE_ORDER = {TORN: 0, KEPT: 1, DROPPED: 2}

# The operations a report's JSON lists, at most: torn ones first, then kept, then dropped
# (a session's unsynced log runs to thousands, and the report crosses a socket whose
# messages are bounded; the per-file counts stay whole). The summary names fewer.
MAX_OPS = 300
SUMMARY_OPS = 20


@dataclass(frozen=True)
class FileReport:
    """One path of the store folder at the cut.

    `live_bytes` is the file's size as the kernel had it (None: no such name now),
    `synced_bytes` its size in the image (None: not in the image), `lost_bytes` how many
    bytes of the live file the image does not hold as they were (changed since the last
    sync and not kept by the cut model, or the whole file when its name is not in the
    image), `torn_bytes` the bytes of torn writes kept, `syncs` how many times it was
    synced; `kept_ops`, `torn_ops`, `dropped_ops` count its unsynced content operations
    by fate.
    """

    path: str
    entry: str
    live_bytes: int | None
    synced_bytes: int | None
    lost_bytes: int
    syncs: int
    torn_bytes: int = 0
    kept_ops: int = 0
    torn_ops: int = 0
    dropped_ops: int = 0


@dataclass(frozen=True)
class OpReport:
    """One operation made since its last sync, and its fate at the cut.

    `op`: write, truncate, allocate (content), or create, mkdir, symlink, link, unlink,
    rmdir, rename (entry changes); `path` the file, or the entry (`old -> new` for a
    rename arriving); `offset`/`length` a write's range (a truncation's new length in
    `length`); `kept` the bytes of a write in the image."""

    seq: int
    op: str
    path: str
    offset: int
    length: int
    fate: str
    kept: int = 0

    def __str__(self) -> str:
        where = f"{self.path} @{self.offset}+{self.length}" if self.op == "write" else self.path
        if self.op == "truncate":
            where = f"{self.path} to {self.length}"
        kept = f" (first {self.kept} bytes)" if self.fate == TORN else ""
        return f"#{self.seq} {self.op} {where}: {self.fate}{kept}"


@dataclass(frozen=True)
class CutReport:
    """The image written at a cut, the cut model, what each file kept and lost, and the
    fate of each unsynced operation."""

    image: Path
    model: dict[str, Any] = field(default_factory=lambda: {"name": "synced", "seed": 0})
    files: dict[str, FileReport] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()  # durable names left out (a directory reached inside itself)
    ops: tuple[OpReport, ...] = ()
    ops_left_off: int = 0  # operations not listed in `ops` (past MAX_OPS, all dropped)

    @property
    def lost_bytes(self) -> int:
        return sum(f.lost_bytes for f in self.files.values())

    @property
    def synced_bytes(self) -> int:
        return sum(f.synced_bytes or 0 for f in self.files.values())

    @property
    def cut(self) -> str:
        """The model in a few words: `synced`, `torn-op:byte, seed 7`."""
        name = str(self.model.get("name"))
        unit = self.model.get("unit")
        if name == "torn-op" and unit not in (None, 512):
            name += ":byte" if unit == 1 else f":{unit}"
        return name if name == "synced" else f"{name}, seed {self.model.get('seed')}"

    def fates(self, fate: str) -> list[OpReport]:
        return [op for op in self.ops if op.fate == fate]

    def summary(self) -> str:
        """One line per file, then one per operation kept or torn, for a cell's timeline
        and its evidence."""
        lines = []
        for f in sorted(self.files.values(), key=lambda f: f.path):
            sizes = f"synced {f.synced_bytes}, lost {f.lost_bytes}, live {f.live_bytes}"
            torn = f", torn prefix {f.torn_bytes}" if f.torn_bytes else ""
            ops = ""
            if f.kept_ops or f.torn_ops:
                ops = (
                    f"; unsynced ops kept {f.kept_ops}, torn {f.torn_ops}, dropped {f.dropped_ops}"
                )
            lines.append(f"{f.path}: {f.entry} ({sizes}{torn}; {count(f.syncs, 'sync')}{ops})")
        dropped = len(self.fates(DROPPED)) + self.ops_left_off
        if self.model.get("name") != "synced":
            lines.append(
                f"cut {self.cut}: {count(len(self.fates(KEPT)), 'unsynced op')} kept, "
                f"{len(self.fates(TORN))} torn, {dropped} dropped"
            )
            landed = [op for op in self.ops if op.fate != DROPPED]
            lines += [str(op) for op in landed[:SUMMARY_OPS]]
            if len(landed) > SUMMARY_OPS:
                lines.append(f"... and {len(landed) - SUMMARY_OPS} more kept or torn")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        listed = sorted(self.ops, key=lambda op: (FATE_ORDER[op.fate], op.seq))[:MAX_OPS]
        listed.sort(key=lambda op: op.seq)
        return {
            "image": str(self.image),
            "cut": self.cut,
            "model": dict(self.model),
            "synced_bytes": self.synced_bytes,
            "lost_bytes": self.lost_bytes,
            "files": {path: asdict(f) for path, f in sorted(self.files.items())},
            "skipped": list(self.skipped),
            "ops": [asdict(op) for op in listed],
            "ops_left_off": self.ops_left_off + len(self.ops) - len(listed),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CutReport:
        files = {path: FileReport(**f) for path, f in data["files"].items()}
        # Reports written before cut models carry `tear` (None then: the synced cut).
        model = data.get("model") or {"name": "synced", "seed": 0}
        ops = tuple(OpReport(**op) for op in data.get("ops", ()))
        return cls(
            Path(data["image"]),
            model,
            files,
            tuple(data["skipped"]),
            ops,
            int(data.get("ops_left_off", 0)),
        )
