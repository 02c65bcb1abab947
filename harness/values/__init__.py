"""Plain values every layer shares: crash points and schedules, modes, the normal form, cells and their results, findings, timelines, scenario references. Imports nothing of killpoint above it."""
