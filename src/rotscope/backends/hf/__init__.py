"""The Hugging Face transformers backend (``backend``) and its options section (``options``)."""
