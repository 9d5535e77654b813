"""A tiny stand-in for an agent CLI in print mode, run by the ``cmd/PATH`` backend's tests.

It answers as ``fake/lexical`` does (rotscope's own matcher) and, with ``--usage``, reports usage as
an agent would: the prompt it received counted on rotscope's estimate plus a fixed ``--overhead``
(the system prompt and tool definitions a real harness adds). The prompt comes on stdin, or from
``--prompt-file``; with ``--system``/``--system-file`` the system prompt comes apart. Faults for
the tests: ``--fail-once MARKER`` exits 1 unless MARKER exists (and creates it); ``--hang PIDFILE``
writes its pid and a child's, then hangs with the child, ignoring SIGTERM. ``--log FILE`` appends
when it started and ended a second of work.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompt-file")
    parser.add_argument("--system")
    parser.add_argument("--system-file")
    parser.add_argument("--usage", choices=("file", "fd"))
    parser.add_argument("--overhead", type=int, default=0)
    parser.add_argument("--fail-once")
    parser.add_argument("--hang")
    parser.add_argument("--require-env")
    parser.add_argument("--log")
    return parser.parse_args()


def _hang(pidfile: str) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    Path(pidfile).write_text(f"{os.getpid()} {child.pid}\n", encoding="utf-8")
    time.sleep(600)


def main() -> int:
    args = _arguments()
    if args.hang:
        _hang(args.hang)
    if args.fail_once and not Path(args.fail_once).exists():
        Path(args.fail_once).touch()
        print("agent: first call fails", file=sys.stderr)
        return 1
    if args.require_env and args.require_env not in os.environ:
        print(f"agent: {args.require_env} missing", file=sys.stderr)
        return 3
    if args.log:  # when this call ran, for the concurrency tests
        started = time.time()
        time.sleep(1.0)
        with open(args.log, "a", encoding="utf-8") as log:
            log.write(f"{started} {time.time()}\n")
    # rotscope is imported only now, so the faults above act at once even on a loaded machine.
    from rotscope.backends.fake import lexical_responder
    from rotscope.tokenizers.remote import ApproximateTokenizer, render_plain
    from rotscope.types import GenerateRequest, GenerationParams

    prompt = Path(args.prompt_file).read_text("utf-8") if args.prompt_file else sys.stdin.read()
    system = Path(args.system_file).read_text("utf-8") if args.system_file else args.system
    messages = [{"role": "user", "content": prompt}]
    if system:
        messages.insert(0, {"role": "system", "content": system})
    request = GenerateRequest(tuple(messages), (), GenerationParams())
    reply = lexical_responder()(request)
    print(reply)
    if args.usage:
        tokenizer = ApproximateTokenizer()
        usage = {
            "prompt_tokens": tokenizer.count(render_plain(messages)) + args.overhead,
            "completion_tokens": tokenizer.count(reply),
            "cost": 0.001,
        }
        if args.usage == "file":
            Path(os.environ["ROTSCOPE_USAGE_FILE"]).write_text(json.dumps(usage), encoding="utf-8")
        else:
            os.write(int(os.environ["ROTSCOPE_USAGE_FD"]), json.dumps(usage).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
