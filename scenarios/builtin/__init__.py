"""The built-in scenarios."""
