"""Runtime adapters: how killpoint builds, drives and reads back each runtime under test."""
