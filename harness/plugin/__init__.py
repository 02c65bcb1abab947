"""The pytest face: the crash-matrix items, the `crash` fixture, and their settings."""
