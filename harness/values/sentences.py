"""Every finding's sentence, from one template per kind.

A finding is made from facts (numbers, names, the two sides compared); its kind's template
turns them into the one plain sentence the terminal, `replay` and the report show. Counts
agree with their nouns ("1 cell", "2 cells"), ranges collapse ("call 0", "calls 0..2"), and
the sides are named for what they are ("the baseline", "the store after the takeover"). A
kind without a template of its own (a new one, or one whose finding is a message from a
worker) says its `detail`.

`problems(sentence)` is the check every template is held to: no "(s)", no "1 cells", no
"0..0", no word doubled.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from typing import Any

from killpoint.values.durations import duration

Facts = Mapping[str, Any]

# Nouns whose plural is not the singular plus "s".
_PLURAL = {
    "reply": "replies",
    "time": "times",
    "key": "keys",
    "repeat": "repeats",
    "difference": "differences",
    "boundary": "boundaries",
}


def plural(noun: str) -> str:
    if noun in _PLURAL:
        return _PLURAL[noun]
    head, _, last = noun.rpartition(" ")
    last = last + ("es" if last.endswith(("s", "x", "ch", "sh")) else "s")
    return f"{head} {last}" if head else last


def count(n: int, noun: str) -> str:
    """`count(1, "cell")` is "1 cell"; `count(3, "tool execution")` is "3 tool executions"."""
    return f"{n} {noun if n == 1 else plural(noun)}"


def plural_of(noun: str, items: Sized) -> str:
    """The noun as many `items` take it: "shard" for one, "shards" for two."""
    return noun if len(items) == 1 else plural(noun)


def times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def verb(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def numbers(noun: str, values: Sequence[int]) -> str:
    """`numbers("turn", [4])` is "turn 4"; [4, 5, 6] is "turns 4..6"; [2, 5] is "turns 2, 5"."""
    items = sorted(dict.fromkeys(values))
    if not items:
        return f"no {plural(noun)}"
    if len(items) == 1:
        return f"{noun} {items[0]}"
    if items == list(range(items[0], items[-1] + 1)):
        return f"{plural(noun)} {items[0]}..{items[-1]}"
    return f"{plural(noun)} {', '.join(map(str, items))}"


def value(x: Any, limit: int = 80) -> str:
    text = repr(x)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def listed(items: Iterable[str], shown: int = 4) -> str:
    items = list(items)
    return ", ".join(items[:shown]) + (", ..." if len(items) > shown else "")


def both(f: Facts) -> str:
    """`{expected} in the E, {actual} in the A`."""
    return (
        f"{value(f['expected_value'])} in the {f['expected_side']}, "
        f"{value(f['actual_value'])} in the {f['actual_side']}"
    )


def _more(n: int) -> str:
    return f" (and {count(n, 'more difference')})" if n > 0 else ""


# -- the templates ----------------------------------------------------------------------------


def _run_lost(f: Facts) -> str:
    if f["landed"] <= 0:
        return (
            f"run {f['run']} is not in the store after the crash (no checkpoint of it had landed)"
        )
    return (
        f"run {f['run']} is not in the store after the crash although "
        f"{count(f['landed'], 'checkpoint')} of it had landed"
    )


def _checkpoint_count(f: Facts) -> str:
    held = f"at {f['point']} the store held {count(f['held'], 'checkpoint')}"
    if f.get("begun") is not None:
        return f"{held}; the worker had begun {f['begun']} and announced {f['landed']} landed"
    return f"{held}; the baseline held {f['wanted']} there"


def _acknowledged_lost(f: Facts) -> str:
    who = f.get("who")
    said = (
        f"{who} returned {f['status']} for run {f['run_id']}"
        if who
        else (f"run {f['run_id']} returned {f['status']}")
    )
    if f.get("stored") is None:
        return f"{said} but {'the run is' if who else 'is'} not in the store"
    return f"{said} but the store says {f['stored']}"


def _stale_acknowledged(f: Facts) -> str:
    return (
        f"{f.get('who') or 'the stale worker'} returned {f['status']} for run {f['run_id']} "
        f"after the takeover, but the store holds {f['stored']}, the takeover's"
    )


def _status_regressed(f: Facts) -> str:
    return f"run {f['run_id']} was durably {f['status']}; {f['when']} the store says {f['now']}"


def _terminal_early(f: Facts) -> str:
    return (
        f"run {f['run']} was already {f['status']} in the store at {f['point']}, with "
        f"{count(f['held'], 'checkpoint')} landed; the uninterrupted run was not over there: "
        f"it went on to ask for model {numbers('turn', list(f['turns']))} and ended at "
        f"checkpoint {f['ended_at']}"
    )


def _cancel(f: Facts) -> str:
    beyond = list(f["beyond"])
    later = f"model {numbers('turn', beyond)} {verb(len(beyond), 'was', 'were')} requested"
    ended = f.get("ended")
    if ended is None:
        end = "before the run stopped (its end was not reached)"
    elif "CANCELLED" in ended:
        end = "before the run ended CANCELLED"
    else:
        end = f"and the run ended {', '.join(ended) or 'absent'}"
    joint = "yet" if ended is not None and "CANCELLED" not in ended else "and"
    return f"a cancel was requested during model turn {f['at']}, {joint} {later} {end}"


def _confirmation_dropped(f: Facts) -> str:
    if f["how"] == "refused":
        return (
            f"run {f['run_id']} ran {f['tool']} of turn {f['turn']} although the confirmation "
            "refused it"
        )
    return (
        f"run {f['run_id']} completed {f['how']} the confirmed call {f['tool']} of turn {f['turn']}"
    )


def _idempotency(f: Facts) -> str:
    return (
        f"{f['call']} had its effect {times(f['effects'])} under "
        f"{count(f['keys'], 'different idempotency key')}"
    )


# How the resumed model re-issued a call, by behaviour (scenarios.behaviours).
_REISSUED = {
    "regenerate-ids": "re-issued it under a new call id",
    "reorder": "re-issued it at another place in its batch",
    "respell": "re-issued it with its arguments spelled otherwise",
    "replan": "re-planned it in other words",
}


def _effect_reissued(f: Facts) -> str:
    how = _REISSUED.get(str(f["behaviour"]), f"re-issued it ({f['behaviour']})")
    return (
        f"{f['call']} ran {times(f['n'])}: the resumed model {how} "
        f"({f['before']} before the crash, {f['after']} after)"
    )


def _effect_duplicated(f: Facts) -> str:
    within, beyond = f["within"], f["extra"] - f["within"]
    why = (
        f"{beyond} beyond the {count(within, 'repeat')} allowed for a call in flight at a crash"
        if within
        else "it was not in flight at any crash, so no repeat is allowed"
    )
    if f.get("left_out") is not None and not within:
        why = (
            f"it had returned, with every call of its batch, before checkpoint "
            f"{f['left_out']} began, which landed without its result: the mode makes a "
            "batch's results durable with it, so no repeat is allowed"
        )
    return f"{f['call']} ran {times(f['extra'])} more than in the baseline; {why}"


def _effect_repeated(f: Facts) -> str:
    return (
        f"{f['call']} ran again ({times(f['within'])}): its effect was done and its result "
        "not durable at a crash"
    )


def _effect_lost(f: Facts) -> str:
    return f"{f['call']} ran {count(f['fewer'], 'time')} fewer than in the baseline"


def _effect_foreign(f: Facts) -> str:
    return f"{f['call']} ran {times(f['n'])}; the baseline never ran it"


def _runs_differ(f: Facts) -> str:
    if f.get("absent"):
        return f"the session is absent from the {f['absent']}"
    return (
        f"the {f['expected_side']} holds {count(f['expected_runs'], 'run')}, "
        f"the {f['actual_side']} {f['actual_runs']}"
    )


def _status_differs(f: Facts) -> str:
    return (
        f"run {f['run']} ends {f['actual_value']} in the {f['actual_side']}, "
        f"{f['expected_value']} in the {f['expected_side']}"
    )


def _executions_lost(f: Facts) -> str:
    return (
        f"{f['n']} of the {count(f['of'], 'tool execution')} in the {f['expected_side']} "
        f"{verb(f['n'], 'is', 'are')} missing from the {f['actual_side']}: {listed(f['calls'])}"
    )


def _executions_extra(f: Facts) -> str:
    return (
        f"the {f['actual_side']} holds {count(f['n'], 'tool execution')} that the "
        f"{f['expected_side']} does not: {listed(f['calls'])}"
    )


def _executions_reordered(f: Facts) -> str:
    return (
        f"the {f['actual_side']} holds the same {count(f['n'], 'tool execution')} as the "
        f"{f['expected_side']}, in another order"
    )


def _executions_differ(f: Facts) -> str:
    return f"{f['call']}, {f['field']}: {both(f)}"


def _messages_differ(f: Facts) -> str:
    if f.get("at") is None:  # the same shape; fields differ
        return (
            f"{count(f['fields'], 'field')} of the messages differ, first {f['where']}: {both(f)}"
        )
    return (
        f"the {f['actual_side']} holds {count(f['actual_n'], 'message')}, the "
        f"{f['expected_side']} {f['expected_n']}; from message {f['at']}: the "
        f"{f['expected_side']} has [{listed(f['expected_roles'])}], the {f['actual_side']} "
        f"[{listed(f['actual_roles'])}]"
    )


def _field_differs(f: Facts) -> str:
    return f"{f['where']}: {both(f)}{_more(f.get('more', 0))}"


def _takeover_refused(f: Facts) -> str:
    return (
        f"two drivers: the woken worker wrote checkpoint {f['k']} while the takeover was held "
        f"before its first write (no run ownership) and landed {count(f['woken'], 'checkpoint')} "
        "in all; the store refused the takeover's write (the later writer) and kept one "
        f"history, the woken worker's; the takeover failed: {f['detail']}"
    )


def _failures_differ(f: Facts) -> str:
    def kept(kinds: Sequence[str]) -> str:
        if not kinds:
            return "none"
        return f"{count(len(kinds), 'failure record')} ({', '.join(kinds)})"

    kinds = f"keeps {kept(f['actual_kinds'])} where the {f['expected_side']} keeps "
    if f["actual_kinds"] == f["expected_kinds"]:
        kinds = f"keeps the {f['expected_side']}'s kinds of failure record "
        return (
            f"run {f['run']} of the {f['actual_side']} {kinds}({', '.join(f['actual_kinds'])}), "
            f"not the same records: {f['where']}: {both(f)}; records of attempts, compared "
            "apart from the conversation"
        )
    return (
        f"run {f['run']} of the {f['actual_side']} {kinds}{kept(f['expected_kinds'])}: "
        "records of attempts, compared apart from the conversation"
    )


def _usage_overcounted(f: Facts) -> str:
    return (
        f"the session's runs count {count(f['stored'], 'model call')}; the model served "
        f"{count(f['served'], 'reply')} over the whole cell"
    )


def _usage_undercounted(f: Facts) -> str:
    if f.get("held") is not None:
        return (
            f"run {f['run_id']} counts {count(f['stored'], 'model call')} but holds "
            f"{count(f['held'], 'reply')} of the model"
        )
    return (
        f"run {f['run_id']} counts {count(f['stored'], 'model call')}; the model served it "
        f"{count(f['consumed'], 'reply')}{_across(f['drives'])}"
    )


def _across(drives: int) -> str:
    """Where a run's replies came from: its start and each continue."""
    return f" across its start and {count(drives - 1, 'continue')}" if drives > 1 else ""


def _turn_reanswered(f: Facts) -> str:
    turns = list(f["turns"])
    return (
        f"model {numbers('turn', turns)} {verb(len(turns), 'was', 'were')} answered again "
        "otherwise after the crash took the first answer before any of it was durable: the "
        f"run from there is another run, and its {count(f['differences'], 'difference')} "
        "from the baseline are allowed"
    )


def _effect_before_record(f: Facts) -> str:
    record = (
        f"its record committed only after, at #{f['committed']}"
        if f.get("committed") is not None
        else "no record of it was committed"
    )
    return (
        f"the effect of {f['call']} began (#{f['effect']}) before the reply of model turn "
        f"{f['turn']} that asked for it (#{f['reply']}) was durable: {record}"
    )


def _acknowledged_early(f: Facts) -> str:
    return (
        f"run {f['run_id']} returned {f['status']} (#{f['ack']}) before the commit that "
        f"holds it had landed" + (f" (#{f['committed']})" if f.get("committed") else "")
    )


def _acknowledged_unsynced(f: Facts) -> str:
    return (
        f"run {f['run_id']} returned {f['status']} (#{f['ack']}) before its commit (#"
        f"{f['committed']}) was synced: {f['file']} was written at #{f['write']} and not "
        "synced before the return"
    )


def _durability_weaker(f: Facts) -> str:
    return f"the store's {f['setting']} is {f['value']} on the runtime's own connection: {f['why']}"


def _store_not_durable(f: Facts) -> str:
    return (
        f"the store server runs with {f['setting']}={f['value']}: {f['why']}; a setting of "
        "the server, not of the runtime"
    )


def _lease_stamped_expired(f: Facts) -> str:
    return (
        f"a lease of run {f['run_id']} was stamped ({f['by']}) already expired: it ran out "
        f"{duration(f['ago'])} before it was stamped, by the true clock"
    )


def _stale_write(f: Facts) -> str:
    if f.get("inner"):
        inner = str(f["inner"])
        # The comparison's own sentence may open with the field already: say it once.
        inner = inner.removeprefix(f"{f['field']}: ")
        if inner.startswith((f"{f['field']}.", f"{f['field']}[")):
            return f"the stale worker wrote after the takeover, at {inner}"  # a deeper path
        return f"the stale worker wrote after the takeover, at {f['field']}: {inner}"
    return str(f["detail"])


def _names(calls: Sequence[str], shown: int = 6) -> str:
    return f"({listed(calls, shown)})" if calls else "(none)"


def _outcome(f: Facts) -> str:
    """What the store holds of a run against what its scenario says it ends with. The
    calls are the stored tool executions: a store that drops some says so, not the run."""
    what = f["what"]
    if what == "runs":
        return (
            f"the session holds {count(f['runs'], 'run')}; scenario {f['scenario']!r} "
            f"runs {f['expected_runs']}"
        )
    if what == "status":
        return f"run {f['run']} ended {f['status']}; the scenario expects {f['expected_status']}"
    if what == "calls":
        calls, wanted = list(f["calls"]), list(f["expected_calls"])
        return (
            f"the store holds {count(len(calls), 'tool execution')} of run {f['run']} "
            f"{_names(calls)}; the scenario expects {count(len(wanted), 'call')} "
            f"{_names(wanted)}"
        )
    return (
        f"run {f['run']} answered {value(f['answer'])}; the scenario expects "
        f"{value(f['expected_answer'])}"
    )


AHEAD = 24  # characters shown before the first that differs, when two lines share more


def _from_the_difference(asked: str, recorded: str) -> tuple[str, str]:
    """Both lines from a little before where they first differ: cut from their start, as
    value() cuts, a long shared start would leave only it to see."""
    same = next(
        (i for i, (a, b) in enumerate(zip(asked, recorded, strict=False)) if a != b),
        min(len(asked), len(recorded)),
    )
    if same <= AHEAD:
        return asked, recorded
    return "…" + asked[same - AHEAD :], "…" + recorded[same - AHEAD :]


def _departure(f: Facts) -> str:
    """Where a history asked departs from the nearest recorded one."""
    asked, recorded = f.get("asked"), f.get("recorded")
    if isinstance(asked, str) and isinstance(recorded, str):
        asked, recorded = _from_the_difference(asked, recorded)
    if recorded is None:
        return f"the request reads {value(asked)}, and the recording has no more there"
    if asked is None:
        return f"the request ends where the recording goes on with {value(recorded)}"
    return f"the request reads {value(asked)} where the recording has {value(recorded)}"


def _history_unrecorded(f: Facts) -> str:
    more = int(f.get("more", 0))
    after = f" ({count(more, 'more request')} unrecorded after it)" if more else ""
    return (
        f"model turn {f['turn']} asked what the recording never saw: {_departure(f)} "
        f"(line {f['line']} of the history){after}"
    )


def _cassette_stale(f: Facts) -> str:
    if f.get("first"):
        return (
            f"the cassette is stale: the agent's first request no longer matches the "
            f"recording: {_departure(f)} (line {f['line']} of the history); record it again"
        )
    return (
        f"the uninterrupted run's model turn {f['turn']} is not in the cassette: "
        f"{_departure(f)} (line {f['line']} of the history); the agent changed after its "
        "first request, or is not deterministic; record it again"
    )


def _generic(f: Facts) -> str:
    return str(f["detail"])


TEMPLATES: dict[str, Callable[[Facts], str]] = {
    "run-lost": _run_lost,
    "checkpoint-count": _checkpoint_count,
    "acknowledged-lost": _acknowledged_lost,
    "stale-acknowledged": _stale_acknowledged,
    "status-regressed": _status_regressed,
    "terminal-early": _terminal_early,
    "cancel-ignored": _cancel,
    "cancel-late": _cancel,
    "confirmation-dropped": _confirmation_dropped,
    "idempotency-key-changed": _idempotency,
    "effect-reissued": _effect_reissued,
    "effect-duplicated": _effect_duplicated,
    "effect-repeated": _effect_repeated,
    "effect-lost": _effect_lost,
    "effect-foreign": _effect_foreign,
    "runs-differ": _runs_differ,
    "status-differs": _status_differs,
    "tool-executions-lost": _executions_lost,
    "tool-executions-extra": _executions_extra,
    "tool-executions-reordered": _executions_reordered,
    "tool-executions-differ": _executions_differ,
    "messages-differ": _messages_differ,
    "state-differs": _field_differs,
    "usage-differs": _field_differs,
    "run-differs": _field_differs,
    "stale-write": _stale_write,
    "usage-overcounted": _usage_overcounted,
    "usage-undercounted": _usage_undercounted,
    "effect-before-record": _effect_before_record,
    "turn-reanswered": _turn_reanswered,
    "acknowledged-early": _acknowledged_early,
    "acknowledged-unsynced": _acknowledged_unsynced,
    "durability-weaker": _durability_weaker,
    "store-not-durable": _store_not_durable,
    "lease-stamped-expired": _lease_stamped_expired,
    "outcome-unexpected": _outcome,
    "failures-differ": _failures_differ,
    "takeover-refused": _takeover_refused,
    "history-unrecorded": _history_unrecorded,
    "cassette-stale": _cassette_stale,
}


def say(kind: str, facts: Facts) -> str:
    """The sentence of a finding of `kind` with these facts."""
    return TEMPLATES.get(kind, _generic)(facts)


# -- the check --------------------------------------------------------------------------------

_ONE_PLURAL = re.compile(r"\b1 (\w+ )?(\w+s)\b(?! (?:of|in)\b)")
_SINGULAR_OK = {"was", "is", "has", "does", "holds", "ends", "says", "differs"}
_RANGE = re.compile(r"\b(\d+)\.\.(\d+)\b")
_DOUBLED = re.compile(r"\b(\w+) \1\b", re.IGNORECASE)


def problems(sentence: str) -> list[str]:
    """What does not read in a sentence: "(s)", "1 cells", "0..0" or "3..1", a word twice."""
    found = []
    if "(s)" in sentence:
        found.append("a plural left to the reader: '(s)'")
    for m in _ONE_PLURAL.finditer(sentence):
        if m.group(2) not in _SINGULAR_OK and not m.group(2).endswith("ss"):
            found.append(f"one, in the plural: {m.group(0)!r}")
    for m in _RANGE.finditer(sentence):
        if int(m.group(1)) >= int(m.group(2)):
            found.append(f"a range of one or none: {m.group(0)!r}")
    for m in _DOUBLED.finditer(sentence):
        if not m.group(1).isdigit():
            found.append(f"a word twice: {m.group(0)!r}")
    if not sentence.strip():
        found.append("no sentence")
    return found


__all__ = [
    "TEMPLATES",
    "count",
    "numbers",
    "plural",
    "plural_of",
    "problems",
    "say",
    "times",
]
