"""Recording a user's agent once against its real provider, into a cassette that the crash
matrix replays (`killpoint record`, the pytest plugin's record modes)."""
