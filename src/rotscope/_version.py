"""The package version, kept apart so that no module imports the package face back."""

__version__ = "0.1.0"
