"""``serve/NAME``: exact token ids to served engines (vLLM, SGLang, llama-server) over HTTP
(``backend``), and its options section (``options``)."""
