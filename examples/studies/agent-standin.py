#!/usr/bin/env python3
"""A scripted stand-in for an agent CLI in print mode (``claude -p``), for latent-join.yaml's agent arm.

It reads the prompt on stdin, answers as rotscope's ``fake/lexical`` model does, and writes usage
as the real CLI's JSON would report it: the prompt counted on rotscope's estimate plus a fixed
``--overhead`` (the system prompt and tool definitions a harness sends with every request), to
``$ROTSCOPE_USAGE_FILE`` (``cmd.usage: file``). Run it with the Python that has rotscope installed
first on ``$PATH`` (an activated virtual environment).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--overhead", type=int, default=0)
    args = parser.parse_args()
    from rotscope.backends.fake import lexical_responder
    from rotscope.tokenizers.remote import ApproximateTokenizer, render_plain
    from rotscope.types import GenerateRequest, GenerationParams

    messages = [{"role": "user", "content": sys.stdin.read()}]
    reply = lexical_responder()(GenerateRequest(tuple(messages), (), GenerationParams()))
    print(reply)
    usage_file = os.environ.get("ROTSCOPE_USAGE_FILE")
    if usage_file:
        tokenizer = ApproximateTokenizer()
        usage = {
            "prompt_tokens": tokenizer.count(render_plain(messages)) + args.overhead,
            "completion_tokens": tokenizer.count(reply),
        }
        Path(usage_file).write_text(json.dumps(usage), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
