"""The traffic app (see README.md)."""
