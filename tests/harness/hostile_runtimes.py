"""A runtime whose every word killpoint shows is hostile
(`tests.harness.hostile_runtimes:Hostile`): its inspect() finds the store broken with
tests.harness.runner_commands.HOSTILE, which then stands in findings, timelines, groups,
reports and failure texts, for the tests that print it through every face."""

from __future__ import annotations

from collections.abc import Sequence

from killpoint.adapters.reference import ReferenceAdapter
from killpoint.values.findings import Finding
from tests.harness.runner_commands import HOSTILE


class Hostile(ReferenceAdapter):
    """The reference runtime, whose inspection of a store after a crash says HOSTILE."""

    def inspect(self, store_url: str, session_id: str) -> Sequence[str | Finding]:
        return [HOSTILE]


__all__ = ["Hostile"]
