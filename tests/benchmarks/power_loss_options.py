"""The options both power-loss benchmarks take, and their skip where FUSE is missing."""

from __future__ import annotations

import argparse

from killpoint.powerloss import available


def parse(description: str) -> argparse.Namespace | None:
    """The benchmark's options; None (with the reason printed) where no mount can run."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--scenarios", default="research,long-chain,large-output")
    parser.add_argument("--mode", default="tool-batch")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    reason = available()
    if reason is not None:
        print(f"skipped: {reason}")
        return None
    return args
