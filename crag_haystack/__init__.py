"""Haystack adapter for crag."""
