"""Views of a run: the terminal heatmap and progress bar."""
