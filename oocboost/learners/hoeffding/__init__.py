"""Hoeffding trees (VFDT, EFDT) learning from streamed blocks through the engine."""
