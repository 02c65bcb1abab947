"""Tests of the reference runtime (issue 2)."""
