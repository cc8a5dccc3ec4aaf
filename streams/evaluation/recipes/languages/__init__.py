"""The language registry."""
