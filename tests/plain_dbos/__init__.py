"""Plain DBOS scripts (no killpoint, no pydantic-ai) that check the facts docs/pydantic-ai.md
states about DBOS: `python -m tests.plain_dbos.NAME`. Not tests: they print what they find."""
