"""The hierarchy app (see README.md)."""
