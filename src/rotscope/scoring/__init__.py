"""Scoring replies: deterministic scorers and the optional judge."""
