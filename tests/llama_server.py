"""``python -m llama_cpp.server`` with llama.cpp's extra buffers set by the first argument (``on`` or
``off``): the server takes no option for them, and on CPUs with AMX they crash its first prompt."""

from __future__ import annotations

import runpy
import sys

from rotscope.backends.extra_buffers import extra_buffers_set

if __name__ == "__main__":
    mode, *arguments = sys.argv[1:]
    sys.argv = ["llama_cpp.server", *arguments]
    with extra_buffers_set(mode == "on"):
        runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
