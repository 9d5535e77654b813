"""Views of a run: the terminal heatmap and progress bar, the HTML report, exports, the gate's record."""

__all__ = ["cells", "export", "html", "progress", "terminal", "verdict"]
