"""Benchmarks: print figures, never fail on timing."""
