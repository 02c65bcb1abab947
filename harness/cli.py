"""The `killpoint` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _cmd_scenarios(args: argparse.Namespace) -> int:
    import scenarios

    width = max(len(name) for name, _ in scenarios.describe())
    for name, description in scenarios.describe():
        print(f"{name:<{width}}  {description}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="killpoint",
        description="Crash-consistency harness for durable agent runtimes.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("scenarios", help="list the built-in scenarios, one line each")
    p.set_defaults(func=_cmd_scenarios)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
