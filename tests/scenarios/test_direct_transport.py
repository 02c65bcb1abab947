"""The scripted model served straight from httpx2's transports: no respx router in the way,
the transports their own again once no model is installed, and the last model installed
serving."""

# ruff: noqa: SIM300
from __future__ import annotations

from pathlib import Path

import httpx
import httpx2
import pytest
import respx
from httpx2._transports.default import AsyncHTTPTransport, HTTPTransport

from killpoint.scenarios import direct_transport
from killpoint.scenarios.builtin import research
from killpoint.scenarios.model import ScriptedModel

ORIGINALS = (HTTPTransport.handle_request, AsyncHTTPTransport.handle_async_request)


def ask() -> httpx2.Response:
    return httpx2.post(
        "https://api.openai.com/v1/responses",
        json={"model": "m", "input": "Find it."},
        headers={"authorization": "Bearer sk-test"},
    )


def test_a_request_reaches_the_model_without_a_respx_router(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A respx router that would answer every request is never asked: the model answers."""
    routed: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        routed.append(request)
        return httpx.Response(599)

    monkeypatch.setattr(respx.MockRouter, "resolve", lambda self, request: refuse(request))
    with ScriptedModel(research.script, tmp_path):
        reply = ask()
    assert (200, []) == (reply.status_code, routed)
    assert "function_call" == reply.json()["output"][0]["type"]


def test_the_transports_are_their_own_again_once_no_model_is_installed(tmp_path: Path) -> None:
    outer = ScriptedModel(research.script, tmp_path / "outer")
    inner = ScriptedModel(research.script, tmp_path / "inner")
    with outer:
        with inner:
            ask()
            assert (tmp_path / "inner" / "requests.log").exists()
            assert not (tmp_path / "outer" / "requests.log").exists()
        ask()  # the outer model serves again
        assert (tmp_path / "outer" / "requests.log").exists()
        assert direct_transport.installed()
    assert not direct_transport.installed()
    assert ORIGINALS == (HTTPTransport.handle_request, AsyncHTTPTransport.handle_async_request)
