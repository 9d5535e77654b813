"""Tokenizers: the target model's own vocabulary (GGUF), remote models' tokenizers, GGUF checks."""
