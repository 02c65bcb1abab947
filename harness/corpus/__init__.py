"""Crash-state corpora: the states a resumer finds after each crash, kept under one
version of the code and resumed under another (`killpoint corpus record|check`,
`killpoint upgrade`)."""
