"""LlamaIndex adapter for crag."""
