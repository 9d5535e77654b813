"""``rotscope import``: per-item results from other harnesses as a run folder. ``table`` reads a
CSV or JSON Lines file of the documented columns, ``items`` turns its items into the run store's
rows and metadata, ``folder`` writes the folder; an Inspect AI log is read by
``integrations.inspect.log_import`` into the same items. Imported results enter the flow at the
run store: no prompts, no spans, no verification, and every view says so."""
