"""`python -m killpoint`: the `killpoint` command, exit status included."""

from __future__ import annotations

from killpoint.cli.entry import entry

if __name__ == "__main__":
    entry()
