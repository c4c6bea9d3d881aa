"""The queryopt app (see README.md)."""
