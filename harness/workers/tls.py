"""One TLS context per process for every openai client the workers build.

Each openai client builds a TLS context, loading the system CA bundle (about 25 ms of
CPU). Workers never open a socket (the scripted model answers in-process), so one
shared context, built once in the forkserver, is as good as a fresh one each time.
"""

from __future__ import annotations

import functools

import httpcore2


def share_tls_context() -> None:
    """From now on every client in this process gets the same TLS context (idempotent)."""
    if not hasattr(httpcore2.default_ssl_context, "cache_info"):
        httpcore2.default_ssl_context = functools.cache(httpcore2.default_ssl_context)
