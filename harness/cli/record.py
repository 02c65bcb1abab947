"""`killpoint record`: run your agent once against its real provider and write a cassette,
then crash-test it offline with `killpoint matrix --scenarios cassette:PATH`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from killpoint.adapters.registry import RUNTIME_HELP
from killpoint.cli import output as cli_output
from killpoint.cli import verbosity
from killpoint.values.durations import duration
from killpoint.values.sentences import count


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "record",
        help="run your agent once against its real provider and write a cassette to "
        "crash-test it from (`--scenarios cassette:PATH`)",
        description="Run the agent once through a recording proxy at a local address (its "
        "model clients are pointed there by OPENAI_BASE_URL and ANTHROPIC_BASE_URL; its "
        "API keys stay your environment's) and write every request's history and the "
        "provider's reply as a cassette. Credentials are never written.",
    )
    p.add_argument("--runtime", required=True, help=RUNTIME_HELP)
    p.add_argument("--out", required=True, metavar="PATH", help="where the cassette goes (.json)")
    p.add_argument(
        "--scenario",
        metavar="NAME",
        help="run a scenario's tools and inputs (a built-in name or package.module:SCENARIO); "
        "its script is not used: the provider answers",
    )
    p.add_argument(
        "--input",
        dest="inputs",
        action="append",
        default=[],
        metavar="TEXT",
        help="what the agent is asked, once per run in one session (repeat for more runs)",
    )
    p.add_argument("--mode", help="a checkpoint mode of the runtime (default: its first)")
    p.add_argument(
        "--name",
        help="the scenario's name in the cassette (default: the scenario's, or the file's)",
    )
    p.add_argument(
        "--provider",
        metavar="URL",
        help="the real provider's OpenAI-compatible base URL (default: $OPENAI_BASE_URL, else "
        "https://api.openai.com/v1)",
    )
    p.add_argument(
        "--anthropic-provider",
        metavar="URL",
        help="the Anthropic API's base URL (default: $ANTHROPIC_BASE_URL, else "
        "https://api.anthropic.com)",
    )
    p.add_argument(
        "--redact-header",
        action="append",
        default=[],
        metavar="NAME",
        help="a header never written (credential headers never are); repeatable",
    )
    p.add_argument(
        "--redact-path",
        action="append",
        default=[],
        metavar="JSONPATH",
        help="a field of every request and reply replaced by [redacted] before anything "
        "reads or writes it, e.g. '$.metadata.user_id' or '$.input[*].content'; repeatable",
    )
    p.add_argument(
        "--agent-version",
        metavar="TEXT",
        help="a label for the agent's version, kept in the cassette",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds the whole recording may take (default: 600)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from killpoint.errors import AdapterError, RecordError, ScenarioRefError
    from killpoint.recording.record import Plan, record

    plan = Plan(
        runtime=args.runtime,
        out=Path(args.out),
        scenario=args.scenario,
        inputs=tuple(args.inputs),
        mode=args.mode,
        name=args.name,
        provider=args.provider,
        anthropic=args.anthropic_provider,
        redact_headers=tuple(args.redact_header),
        redact_paths=tuple(args.redact_path),
        timeout=args.timeout,
        agent_version=args.agent_version,
    )
    if plan.timeout <= 0:
        return cli_output.usage_error(
            f"killpoint: --timeout {args.timeout:g}: give a number of seconds above 0"
        )
    out = cli_output.stdout()
    if not verbosity.quiet():
        cli_output.plain(cli_output.stderr(), f"recording {plan.runtime} ...")
    try:
        made = record(plan)
    except (AdapterError, ScenarioRefError) as exc:
        return cli_output.usage_error(str(exc))
    except RecordError as exc:
        # Bad input is a usage error; a run or provider that failed is the recording's.
        cli_output.plain(cli_output.stderr(), str(exc))
        return 1
    cassette = made.cassette
    served = sum(1 for i in cassette.interactions if i.said is not None)
    ends = ", ".join(o.status for o in cassette.outcomes)
    cli_output.plain(
        out,
        f"recorded {count(len(cassette.interactions), 'model request')} ({served} answered) in "
        f"{count(len(cassette.outcomes), 'run')} ({ends}) in {duration(made.seconds)}",
    )
    for what in made.unrecordable:
        cli_output.plain(out, f"  not replayable: {what} (a replay answers only the model APIs)")
    cli_output.plain(out, f"written: {made.path}")
    if not verbosity.quiet():
        cli_output.plain(
            out,
            f"crash-test it: killpoint matrix --runtime {plan.runtime} "
            f"--scenarios cassette:{made.path}",
        )
    return 0


__all__ = ["add_parser", "run"]
