"""Judging a cell: the baseline a crash is compared with, the oracle that compares, the scenario's contract, and the grouping of findings by cause."""
