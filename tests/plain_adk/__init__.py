"""Plain ADK programs (no killpoint) that show, as google-adk 2.13 itself behaves, each class
of finding docs/adk.md reports: pytest tests, a crash in them a real process killed with
SIGKILL, the store a real SQLite file (or the test session's PostgreSQL)."""
