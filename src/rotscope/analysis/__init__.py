"""Reading a run back: the summary JSON (cells, per-task analysis, per-case results, cache checks)."""

from rotscope.analysis.summary import build_summary, load_summary

__all__ = ["build_summary", "load_summary"]
