"""No secret in any output: the report's face of killpoint.redaction, the one registry of
secrets (it lives at the top of the package so that the engine masks kept worker logs with
it too)."""

from __future__ import annotations

from killpoint.redaction import (
    MASK,
    environment_secrets,
    masker,
    redact,
    redact_argv,
    redact_tree,
    remember,
    remember_url,
)

__all__ = [
    "MASK",
    "environment_secrets",
    "masker",
    "redact",
    "redact_argv",
    "redact_tree",
    "remember",
    "remember_url",
]
