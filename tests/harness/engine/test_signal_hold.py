"""The hold on the stopping signals while a campaign winds down and writes its reports."""

# ruff: noqa: SIM300
from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from killpoint.engine.signal_hold import STOPPING, SignalHold


@pytest.fixture
def handlers() -> Iterator[None]:
    """Whatever a test sets, pytest's own handlers are back after it."""
    before = {signum: signal.getsignal(signum) for signum in STOPPING}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


@pytest.mark.usefixtures("handlers")
def test_a_signal_ignored_before_the_hold_stays_ignored_the_others_are_held() -> None:
    """A shell's background job starts with SIGINT ignored: the hold leaves it ignored (a
    SIGINT while the reports were written ended such a campaign with 130, one at any
    other moment did nothing), and still records SIGTERM; released, each is as before."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with SignalHold() as hold:
        assert hold.engaged
        assert signal.SIG_IGN is signal.getsignal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGTERM)
        assert [signal.SIGTERM] == hold.received
    assert not hold.engaged
    assert signal.SIG_IGN is signal.getsignal(signal.SIGINT)
    assert signal.SIG_DFL is signal.getsignal(signal.SIGTERM)


@pytest.mark.usefixtures("handlers")
def test_a_hold_of_signals_all_ignored_is_still_engaged_once() -> None:
    """Nothing to hold (every stopping signal ignored): none is recorded, the hold is
    engaged all the same, so that engaging it again from the campaign's end changes
    nothing, and it is released cleanly."""
    for signum in STOPPING:
        signal.signal(signum, signal.SIG_IGN)
    hold = SignalHold()
    hold.engage()
    assert hold.engaged
    hold.engage()
    for signum in STOPPING:
        signal.raise_signal(signum)
    assert [] == hold.received
    hold.release()
    assert not hold.engaged
    assert [signal.SIG_IGN] * len(STOPPING) == [signal.getsignal(s) for s in STOPPING]
