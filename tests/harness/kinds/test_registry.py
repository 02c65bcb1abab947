"""The registry of kinds: what the engine, the corpus and the planner know of a kind is
read from the kind (its traits), and no layer outside kinds/ spells a kind's name."""

# ruff: noqa: SIM300
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from killpoint import kinds
from killpoint.engine.row_trace import copyable
from killpoint.judge.baseline import Baseline
from killpoint.values.cell import Cell
from killpoint.values.points import CrashPoint

HARNESS = Path(__file__).resolve().parents[3] / "harness"
# Modules outside kinds/ where a literal that is a kind's name names something else.
ELSEWHERE = {
    # An adapter declines kinds by name (RuntimeAdapter.declined_kinds): the Protocol's
    # way, as a user's own adapter does it.
    "adapters/pydantic_ai/__init__.py": "declined kinds",
    # The model behaviours (regenerate-ids, reorder, ...) share their names with the
    # kinds that crash before them; here they name the behaviour.
    "values/sentences.py": "model behaviours",
    # `reorder` is also a cut model.
    "powerloss/cut_models.py": "a cut model",
}


def kind_literals(path: Path) -> list[str]:
    """The string literals in `path` that are a registered kind's name, or a point of
    one (`after-checkpoint:2`)."""
    names = set(kinds.REGISTRY)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        kind, colon, _ = node.value.partition(":")
        if node.value in names or (colon and kind in names):
            found.append(node.value)
    return found


def test_no_layer_outside_kinds_spells_a_kind_name() -> None:
    spelled = {
        str(path.relative_to(HARNESS)): kind_literals(path)
        for path in sorted(HARNESS.rglob("*.py"))
        if path.relative_to(HARNESS).parts[0] != "kinds"
        and str(path.relative_to(HARNESS)) not in ELSEWHERE
    }
    assert {} == {module: names for module, names in spelled.items() if names}


def test_the_scan_finds_the_names_kinds_spell() -> None:
    """The same scan over kinds/ finds the names there (it can see one)."""
    found = {n for p in (HARNESS / "kinds").rglob("*.py") for n in kind_literals(p)}
    assert {"after-checkpoint", "mid-model", "power-loss", "sigstop"} <= found


class TestTraits:
    def test_copyable_kinds_are_kills_that_need_no_live_process(self) -> None:
        copied = {k.name for k in kinds.REGISTRY.values() if k.copyable}
        assert {"after-checkpoint", "mid-batch", "double-resume", "provider-forgot"} <= copied
        assert not copied & {"sigstop", "lock-held", "model-500", "store-restart", "power-loss"}
        assert all(kinds.get(name).kills for name in copied)

    def test_a_corpus_keeps_the_kills_of_one_crash(self) -> None:
        kept = {k.name for k in kinds.REGISTRY.values() if k.kept}
        assert {"after-checkpoint", "mid-batch", "mid-model", "mid-commit"} == kept

    def test_only_a_power_cut_cuts(self) -> None:
        cut = {k.name for k in kinds.REGISTRY.values() if k.cuts}
        assert {"power-loss", "power-loss-mid-commit"} == cut
        assert not any(kinds.get(name).copyable for name in cut)

    @pytest.mark.parametrize("name", list(kinds.REGISTRY))
    def test_the_fast_path_reads_the_trait(self, name: str) -> None:
        """row_trace.copyable asks the kind (a copy needs a file store, and a row whose
        writes do not lag)."""
        base = Baseline("reference", "research", "tool-batch", "sqlite")
        cell = Cell(
            "reference",
            "research",
            "tool-batch",
            "sqlite",
            schedule=(CrashPoint(name, 1, 0 if kinds.get(name).arity == 2 else None),),
        )
        assert kinds.get(name).copyable == copyable(cell, base)


def test_the_points_the_engine_names_come_from_the_registry() -> None:
    assert "after-checkpoint:3" == str(kinds.boundary(3))
    assert "mid-model:1" == str(kinds.stand_in())
    assert kinds.get(kinds.boundary(1).kind).follows
