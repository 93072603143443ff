"""Eval: the episode loop against any OpenAI-compatible endpoint, with a pass@1 table."""
