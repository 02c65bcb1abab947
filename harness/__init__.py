"""killpoint's harness: crash engine, oracle, CLI, pytest plugin and report."""
