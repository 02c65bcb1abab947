"""`killpoint check-adapter --runtime package.module:adapter`: an adapter's assumptions
checked on one row, one line per check, before the matrix is run on it.

Exit 0 when every check passed (or was skipped because the scenario cannot show it), 1
when one failed, 2 on bad input (nothing ran).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from killpoint.adapters.registry import RUNTIME_HELP
from killpoint.cli import output as cli_output
from killpoint.cli import verbosity
from killpoint.cli.exit_codes import EXIT_OK, EXIT_UNEXPECTED
from killpoint.engine.option_table import option
from killpoint.engine.options import CampaignConfig
from killpoint.errors import ConfigError, OptionError
from killpoint.values.sentences import count

LABELS = {"scenarios": "--scenario", "modes": "--mode"}
DEFAULT_SCENARIO = "research"


def run(args: argparse.Namespace) -> int:
    from killpoint.engine.adapter_check import FAIL, default_mode, engine_for, find, run_checks
    from killpoint.engine.campaign import skip_reason
    from killpoint.engine.options import runtime_adapter, scenario_ref

    try:
        config = CampaignConfig.from_options(
            runtime=args.runtime,
            scenarios=(args.scenario,),
            modes=(args.mode,) if args.mode else None,
            store=args.store,
            timeout=args.timeout,
            work_dir=args.work_dir,
        )
        config.check()
        adapter = runtime_adapter(config.runtime)
        scenario = scenario_ref(args.scenario)
    except OptionError as exc:
        return cli_output.usage_error(exc.text(LABELS.get(exc.option)))
    except ConfigError as exc:
        return cli_output.usage_error(str(exc))
    mode = find(adapter.modes, args.mode) if args.mode else default_mode(adapter.modes)
    if mode is None:  # check_declarations guarantees a runnable mode; kept for type checkers
        return cli_output.usage_error(
            f"killpoint: runtime {config.runtime!r} declares no mode it can run"
        )
    why = skip_reason(config.runtime, adapter, scenario, mode.name)
    if why is not None:
        return cli_output.usage_error(
            f"killpoint: --scenario={args.scenario!r} --mode={mode.name!r}: {why}; "
            "choose a scenario and mode the runtime can run"
        )
    engine = engine_for(config.store, config.timeout, config.work_parent)
    row = (config.runtime, args.scenario, mode.name, engine.stores.kind)
    out = cli_output.stdout()
    if not verbosity.quiet():
        cli_output.plain(out, f"checking {'/'.join(row)}")
    checks = run_checks(engine, row, scenario, mode)
    width = max(len(c.name) for c in checks)
    for c in checks:
        if verbosity.quiet() and c.status != FAIL:
            continue  # quiet: the failures and the last line
        cli_output.plain(
            out,
            f"{c.status.upper():4}  {c.name:<{width}}  {cli_output.cut(c.detail, 400)}",
            style="red" if c.status == FAIL else None,
        )
        if c.hint:
            cli_output.plain(out, f"      {'':<{width}}  hint: {c.hint}")
    failed = sum(c.status == FAIL for c in checks)
    cli_output.plain(
        out,
        f"{count(failed, 'check')} failed"
        if failed
        else f"every check passed: run `{next_command(config.runtime, config.store)}`"
        + store_note(config.store),
    )
    return EXIT_UNEXPECTED if failed else EXIT_OK


def next_command(runtime: str, store: str) -> str:
    """The matrix of the runtime just checked (a bare `killpoint matrix` would test the
    reference runtime), on the same store, runnable as pasted: a URL with a password is
    named as the matrix's replay lines name it (the masked URL the terminal shows would
    send the password `***`); one without is written out, as given."""
    import shlex

    from killpoint.stores import shown
    from killpoint.values.cell import store_words

    words = ["killpoint", "matrix", "--runtime", runtime]
    if store == "sqlite" or shown(store) != store:
        return shlex.join(words) + store_words(store)
    return shlex.join([*words, "--store", store])


def store_note(store: str) -> str:
    """Where a command that names the store by its variable finds the URL, unless the
    variable holds it already (the URL was given as `--store "$KILLPOINT_STORE"`)."""
    import os

    from killpoint.stores import shown
    from killpoint.values.cell import STORE_VARIABLE

    if store == "sqlite" or shown(store) == store or os.environ.get(STORE_VARIABLE) == store:
        return ""
    return f", with {STORE_VARIABLE} set to the store's URL"


def add_parser(sub: Any, work_dir_help: str) -> None:
    p = sub.add_parser(
        "check-adapter",
        help="check a runtime adapter on one scenario before running the matrix on it",
    )
    p.add_argument("--runtime", required=True, help=RUNTIME_HELP)
    p.add_argument("--scenario", default=DEFAULT_SCENARIO, help="default: research")
    p.add_argument(
        "--mode", help="a mode of the runtime (default: its first that persists mid-run)"
    )
    p.add_argument("--store", default="sqlite", help="sqlite, or a postgresql+psycopg:// URL")
    p.add_argument("--timeout", help=option("timeout").described())
    p.add_argument("--work-dir", type=Path, help=work_dir_help)
    p.set_defaults(func=run)


__all__ = ["add_parser", "next_command", "run", "store_note"]
