"""Reading a run back: typed rows from the store, the summary JSON, per-case results."""
