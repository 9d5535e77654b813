"""The llama.cpp backend: the in-process engine (``backend``), its options section (``options``),
the machine check (``doctor``), the AMX extra-buffer probe (``extra_buffers``), the measured engine
speed (``engine_speed``), and llama.cpp's own server: started (``server``) and built from the
vendored sources (``server_build``). The entry point ``llamacpp`` names ``backend``."""
