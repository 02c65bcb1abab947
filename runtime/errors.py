"""Typed errors of the reference runtime; each message says what happened and what to do."""

from __future__ import annotations


class RuntimeErrorBase(Exception):
    """Base class of every error the reference runtime raises on purpose."""


class RunNotFound(RuntimeErrorBase, LookupError):
    """The store holds no run with this id in this session."""


class RunNotContinuable(RuntimeErrorBase, ValueError):
    """The run exists but its status cannot be continued (COMPLETED, CANCELLED, ...)."""


class RunOwnedElsewhere(RuntimeErrorBase):
    """Another worker holds the run, or took it over from this one (stale writer)."""


class CheckpointFailed(RuntimeErrorBase):
    """A durable write did not land; nothing the run did since the last checkpoint is acknowledged."""


class ConfigurationError(RuntimeErrorBase, ValueError):
    """A bad argument to Agent, a store URL, or a tool definition."""
