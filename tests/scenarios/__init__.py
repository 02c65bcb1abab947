"""Tests of the scenarios package: scripted model, faults, ledger, gates, built-ins."""
