"""The in-process vLLM backend (``backend``) and its options section (``options``)."""
