"""Asking an OpenAI-compatible language model."""
