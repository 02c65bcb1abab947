"""Deterministic workloads and a scripted model served at the HTTP layer."""

from __future__ import annotations

from . import http_mock  # registers respx's "httpx2" mocker

__all__ = ["http_mock"]
