"""`killpoint corpus record|check` and `killpoint upgrade`: crash under one version,
resume under another (killpoint.corpus)."""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from killpoint.adapters.registry import RUNTIME_HELP
from killpoint.cli import output as cli_output
from killpoint.values.durations import duration
from killpoint.values.sentences import count

SCENARIO_VERSION_HELP = (
    "resume each state under this version of its scenario (e.g. tool-renamed: see "
    "killpoint.scenarios.versions); default: the version it was recorded with"
)


REPORT_HELP = (
    "also write an HTML page here: the recording and checking versions side by side, the "
    "groups, one row per state"
)
STORE_HELP = (
    "sqlite (default), or a postgresql+psycopg:// URL: a PostgreSQL corpus keeps each state "
    "as the data of its schema's tables and is checked on a server given here"
)


def _config(args: argparse.Namespace, runtime: str, scenarios: str | None) -> Any:
    from killpoint.engine.options import CampaignConfig

    config = CampaignConfig.from_options(
        runtime=runtime,
        scenarios=scenarios,
        modes=args.modes,
        points=args.points,
        seed=args.seed,
        workers=args.workers,
        timeout=args.timeout,
        work_dir=args.work_dir,
        keep="none",
        store=args.store or "sqlite",
    )
    config.check()
    return config


def _empty_target(out: Path) -> str | None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        return (
            f"killpoint: --out {str(out)!r} exists and is not an empty folder; give a new "
            "folder (a corpus is never written over)"
        )
    return None


def _record(args: argparse.Namespace, runtime: str, scenarios: str | None, out: Path) -> Any:
    from killpoint.corpus.record import record

    config = _config(args, runtime, scenarios)
    return record(config, out)


def _say_recorded(recorded: Any) -> None:
    out = cli_output.stdout()
    n = len(recorded.states)
    per = recorded.bytes // n if n else 0
    cli_output.plain(
        out,
        f"kept {count(n, 'state')} in {recorded.folder} ({recorded.bytes:,} bytes, {per:,} per "
        "state)",
    )
    if recorded.nothing_to_resume:
        cli_output.plain(
            out,
            f"{count(len(recorded.nothing_to_resume), 'kill')} left nothing to resume (no "
            "checkpoint of the run had landed): not kept",
        )
    if recorded.not_kept:
        cli_output.plain(
            out, f"{count(len(recorded.not_kept), 'cell')} of other point kinds: not kept"
        )
    if recorded.refused:
        err = cli_output.stderr()
        reasons = list(dict.fromkeys(why for _, why in recorded.refused))
        cli_output.plain(
            err,
            f"killpoint: {count(len(recorded.refused), 'state')} could not be kept, for "
            f"{count(len(reasons), 'reason')}:",
        )
        for why in reasons[:5]:
            cli_output.plain(err, f"  {why}")


def cmd_record(args: argparse.Namespace) -> int:
    from killpoint.errors import ConfigError, OptionError

    out = Path(args.out)
    problem = _empty_target(out)
    if problem:
        return cli_output.usage_error(problem)
    try:
        recorded = _record(args, args.runtime, args.scenarios, out)
    except OptionError as exc:
        return cli_output.usage_error(exc.text())
    except ConfigError as exc:
        return cli_output.usage_error(str(exc))
    _say_recorded(recorded)
    return 1 if recorded.refused else 0


def _versions_table(result: Any) -> list[str]:
    rows = result.version_rows()
    width = max(len(r[0]) for r in rows)
    left = max(len(r[1]) for r in [("", "recorded"), *rows])
    lines = [f"{'':<{width}}  {'recorded':<{left}}  checked"]
    for name, a, b, changed in rows:
        lines.append(f"{name:<{width}}  {a:<{left}}  {b}{'  (changed)' if changed else ''}")
    return lines


def _targets(args: argparse.Namespace) -> list[Any]:
    """The --json and --report targets, checked before any work (TargetError otherwise)."""
    from killpoint.errors import TargetError
    from killpoint.report.targets import Target, same_file

    paths = [Path(p) for p in (args.json, args.report) if p]
    if len(paths) == 2 and same_file(*paths):
        raise TargetError(f"--json and --report both name {str(paths[0])!r}; give two paths")
    found = [Target(p) for p in paths]
    for target in found:
        target.check()
    for target in found:
        target.lock()  # a second check writing the same page is refused, not interleaved
    return found


def _write(result: Any, args: argparse.Namespace, found: list[Any]) -> None:
    from killpoint.report.corpus_html import render
    from killpoint.report.redact import redact

    texts = []
    if args.json:
        texts.append(redact(json.dumps(result.to_json(), indent=2) + "\n"))
    if args.report:
        texts.append(redact(render(result)))
    for target, text in zip(found, texts, strict=True):
        target.write(text)
    if found:
        cli_output.plain(cli_output.stdout(), f"written: {', '.join(str(t.path) for t in found)}")


def _report(result: Any, args: argparse.Namespace, found: list[Any]) -> int:
    from killpoint.corpus import groups

    out = cli_output.stdout()
    for line in _versions_table(result):
        cli_output.plain(out, line)
    for s in result.states:
        scenario = (
            s.checked_as
            if s.checked_as == s.recorded_as.split(" ")[0]
            else (f"{s.recorded_as} -> {s.checked_as}")
        )
        text = f"{s.group:<30} {s.id}  [{scenario}]"
        if s.sentence:
            text += f": {cli_output.cut(s.sentence)}"
        if s.failed_before:
            text += f" (recorded cell: {s.recorded_verdict})"
        cli_output.plain(out, text)
    counts = ", ".join(f"{n} {g}" for g, n in result.counts().items()) or "no states"
    per = result.seconds / len(result.states) if result.states else 0.0
    control = " (a control: checked with the versions that recorded it)" if result.control else ""
    cli_output.plain(
        out,
        f"{count(len(result.states), 'state')} in {duration(result.seconds)} "
        f"({duration(per)} per state){control}: {counts}",
    )
    before = [s for s in result.failing if s.failed_before]
    if before:
        cli_output.plain(
            out,
            f"{len(before)} of the {count(len(result.failing), 'failing state')} "
            f"{'was' if len(before) == 1 else 'were'} not ok under the recording version either (its own cell there): check the corpus with the "
            "recording code to tell what the upgrade changed",
        )
    _write(result, args, found)
    failing = [g for g in result.counts() if groups.BY_NAME[g].failing]
    return 1 if failing else 0


def cmd_check(args: argparse.Namespace) -> int:
    from killpoint.corpus.check import check
    from killpoint.engine.options import runtime_adapter
    from killpoint.errors import ConfigError, CorpusError, ScenarioRefError, StoreError, TargetError

    try:
        runtime_adapter(args.runtime)
        found = _targets(args)
    except (ConfigError, TargetError) as exc:
        return cli_output.usage_error(str(exc))
    leftovers: list[Any] = []
    try:
        try:
            result = check(
                Path(args.corpus),
                args.runtime,
                scenario_version=args.scenario_version,
                timeout=float(args.timeout),
                workers=int(args.workers),
                work_parent=Path(args.work_dir) if args.work_dir else None,
                store=args.store or "sqlite",
                leftovers=leftovers,
            )
        except (CorpusError, ConfigError, ScenarioRefError, StoreError) as exc:
            return cli_output.usage_error(str(exc))
        return _report(result, args, found)
    finally:
        _say_leftovers(leftovers)
        for each in found:
            each.close()


def _say_leftovers(leftovers: list[Any]) -> None:
    """The stores made for states that could not be removed (the server gone), however
    the check ended: each named with the statement that drops it."""
    err = cli_output.stderr()
    for left in leftovers:
        cli_output.plain(err, f"killpoint: {left}")


def _is_scenario(value: str) -> bool:
    from killpoint import scenarios
    from killpoint.scenarios import versions

    return versions.split(value)[1] is not None or value in scenarios.BUILTINS


def cmd_upgrade(args: argparse.Namespace) -> int:
    from killpoint.corpus.check import check
    from killpoint.engine.options import runtime_adapter
    from killpoint.errors import ConfigError, CorpusError, OptionError, ScenarioRefError
    from killpoint.scenarios import versions
    from killpoint.values.scenario_refs import resolve_scenario

    a, b = args.from_, args.to
    if _is_scenario(a) != _is_scenario(b):
        return cli_output.usage_error(
            f"killpoint: --from {a!r} and --to {b!r} must both be runtimes or both scenario "
            "versions (SCENARIO@VERSION)"
        )
    by_scenario = _is_scenario(a)
    try:
        if by_scenario:
            if args.scenarios:
                return cli_output.usage_error(
                    "killpoint: --scenarios is for an upgrade between runtimes; --from and --to "
                    "name the scenario here"
                )
            old, new = resolve_scenario(a), resolve_scenario(b)
            if versions.split(a)[0] != versions.split(b)[0]:
                return cli_output.usage_error(
                    f"killpoint: --from {a!r} and --to {b!r} are versions of different scenarios"
                )
            runtime_from = runtime_to = args.runtime
            scenarios: str | None = a
            target: str | None = new.version
            del old
        else:
            runtime_adapter(b)
            runtime_from, runtime_to, scenarios, target = a, b, args.scenarios, None
    except ScenarioRefError as exc:
        return cli_output.usage_error(str(exc))
    except ConfigError as exc:
        return cli_output.usage_error(str(exc))
    from killpoint.errors import TargetError

    kept = Path(args.keep_corpus) if args.keep_corpus else None
    if kept is not None:
        problem = _empty_target(kept)
        if problem:
            return cli_output.usage_error(problem.replace("--out", "--keep-corpus"))
    try:
        found = _targets(args)
    except TargetError as exc:
        return cli_output.usage_error(str(exc))
    leftovers: list[Any] = []
    scratch = Path(tempfile.mkdtemp(prefix="killpoint-upgrade-"))
    folder = kept or scratch / "corpus"
    try:
        try:
            recorded = _record(args, runtime_from, scenarios, folder)
        except OptionError as exc:
            return cli_output.usage_error(exc.text())
        except ConfigError as exc:
            return cli_output.usage_error(str(exc))
        _say_recorded(recorded)
        try:
            result = check(
                folder,
                runtime_to,
                scenario_version=target,
                timeout=float(args.timeout),
                workers=int(args.workers),
                work_parent=Path(args.work_dir) if args.work_dir else None,
                store=args.store or "sqlite",
                leftovers=leftovers,
            )
        except CorpusError as exc:
            return cli_output.usage_error(str(exc))
        return _report(result, args, found)
    finally:
        _say_leftovers(leftovers)
        for each in found:
            each.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _selection(p: argparse.ArgumentParser, work_dir_help: str) -> None:
    from killpoint.engine.options import default_workers

    p.add_argument("--modes", help="comma-separated checkpoint modes (default: every mode)")
    p.add_argument(
        "--points",
        default="kills",
        help="the kills to keep states at: kills (default), boundaries, or points, comma-separated",
    )
    p.add_argument("--seed", help="seed for random sampling")
    p.add_argument("--workers", default=str(default_workers()), help="cells at once")
    p.add_argument("--timeout", default="30", help="seconds per worker before 'hung'")
    p.add_argument("--work-dir", help=work_dir_help)
    p.add_argument("--store", help=STORE_HELP)


def add_parser(sub: Any, work_dir_help: str) -> None:
    p = sub.add_parser("corpus", help="record crash states, or check them under other code")
    inner = p.add_subparsers(dest="corpus_command", required=True, metavar="ACTION")
    r = inner.add_parser("record", help="run cells and keep the state each kill leaves")
    r.add_argument("--runtime", default="reference", help=RUNTIME_HELP)
    r.add_argument("--scenarios", help="comma-separated scenario names (default: all built-ins)")
    r.add_argument("--out", required=True, help="a new (or empty) folder for the corpus")
    _selection(r, work_dir_help)
    r.set_defaults(func=cmd_record)
    c = inner.add_parser("check", help="resume every state of a corpus with the code here")
    c.add_argument("corpus", help="a folder made by `killpoint corpus record`")
    c.add_argument("--runtime", default="reference", help=RUNTIME_HELP)
    c.add_argument("--scenario-version", help=SCENARIO_VERSION_HELP)
    c.add_argument("--workers", default="2", help="states at once")
    c.add_argument("--timeout", default="30", help="seconds per resumer before 'hung'")
    c.add_argument("--work-dir", help=work_dir_help)
    c.add_argument("--store", help=STORE_HELP)
    c.add_argument("--json", help="also write the results as JSON here")
    c.add_argument("--report", help=REPORT_HELP)
    c.set_defaults(func=cmd_check)

    u = sub.add_parser(
        "upgrade", help="record under one runtime or scenario version, check under another"
    )
    u.add_argument("--from", dest="from_", required=True, help="a runtime, or SCENARIO@VERSION")
    u.add_argument("--to", required=True, help="a runtime, or SCENARIO@VERSION")
    u.add_argument("--runtime", default="reference", help="for scenario versions: " + RUNTIME_HELP)
    u.add_argument("--scenarios", help="for runtimes: comma-separated scenarios (default: all)")
    u.add_argument("--keep-corpus", help="keep the recorded corpus in this new folder")
    u.add_argument("--json", help="also write the check's results as JSON here")
    u.add_argument("--report", help=REPORT_HELP)
    _selection(u, work_dir_help)
    u.set_defaults(func=cmd_upgrade)


__all__ = ["add_parser"]
