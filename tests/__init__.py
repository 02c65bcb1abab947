"""killpoint test suite."""
