"""What a cut did to each file: the evidence a power-loss cell carries."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# What the image holds at a path, compared with the live folder at the cut.
DURABLE = "durable"  # the same file, named here both before and after the cut
NOT_DURABLE = "not durable"  # created (or renamed here) since its directory's last sync: gone
RESTORED = "restored"  # removed (or renamed away) since its directory's last sync: back
REPLACED = "replaced"  # the name now holds another file than at its directory's last sync


@dataclass(frozen=True)
class FileReport:
    """One path of the store folder at the cut.

    `live_bytes` is the file's size as the kernel had it (None: no such name now),
    `synced_bytes` its size in the image (None: not in the image), `lost_bytes` how many
    bytes of the live file the image does not hold as they were (changed since the last
    sync, or the whole file when its name is not durable), `torn_bytes` the prefix of the
    newest unsynced write kept in torn mode, `syncs` how many times it was synced.
    """

    path: str
    entry: str
    live_bytes: int | None
    synced_bytes: int | None
    lost_bytes: int
    syncs: int
    torn_bytes: int = 0


@dataclass(frozen=True)
class CutReport:
    """The durable image written at a cut, and what each file kept and lost."""

    image: Path
    tear: int | None  # None: nothing unsynced survives; N: N bytes of each newest unsynced write
    files: dict[str, FileReport] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()  # durable names left out (a directory reached inside itself)

    @property
    def lost_bytes(self) -> int:
        return sum(f.lost_bytes for f in self.files.values())

    @property
    def synced_bytes(self) -> int:
        return sum(f.synced_bytes or 0 for f in self.files.values())

    def summary(self) -> str:
        """One line per file, for a cell's timeline and its evidence."""
        lines = []
        for f in sorted(self.files.values(), key=lambda f: f.path):
            sizes = f"synced {f.synced_bytes}, lost {f.lost_bytes}, live {f.live_bytes}"
            torn = f", torn prefix {f.torn_bytes}" if f.torn_bytes else ""
            lines.append(f"{f.path}: {f.entry} ({sizes}{torn}; {f.syncs} sync(s))")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "image": str(self.image),
            "tear": self.tear,
            "synced_bytes": self.synced_bytes,
            "lost_bytes": self.lost_bytes,
            "files": {path: asdict(f) for path, f in sorted(self.files.items())},
            "skipped": list(self.skipped),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CutReport:
        files = {path: FileReport(**f) for path, f in data["files"].items()}
        return cls(Path(data["image"]), data["tear"], files, tuple(data["skipped"]))
