"""Deterministic workloads and a scripted model served at the HTTP layer."""

from __future__ import annotations

from . import http_mock  # registers respx's "httpx2" mocker
from .catalog import BUILTINS, UnknownScenario, describe, get
from .conversation import Call, Conversation, Turn
from .drive import Driver, RunResult, drive, run_id_for, settle
from .faults import Fault
from .ledger import Entry, Ledger
from .model import ScriptedModel
from .scenario import Expected, Scenario
from .script import Reply, Script, ToolRequest
from .tooling import ToolEnv, idempotent, intent

__all__ = [
    "BUILTINS",
    "Call",
    "Conversation",
    "Driver",
    "Entry",
    "Expected",
    "Fault",
    "Ledger",
    "Reply",
    "RunResult",
    "Scenario",
    "Script",
    "ScriptedModel",
    "ToolEnv",
    "ToolRequest",
    "Turn",
    "UnknownScenario",
    "describe",
    "drive",
    "get",
    "http_mock",
    "idempotent",
    "intent",
    "run_id_for",
    "settle",
]
