#!/usr/bin/env python3
"""Claude Code in print mode as a rotscope subject that reports its usage (examples/agent-cli.yaml).

Runs ``claude -p --output-format json ARGS...`` with the prompt on stdin, prints the reply and writes
the usage rotscope reads to ``$ROTSCOPE_USAGE_FILE``: every input token the model was sent (fresh,
cache writes and cache reads: the harness's system prompt and tools included), the output tokens,
and the cost Claude Code reports. A failed call exits non-zero, which rotscope records as an error
row (retried on ``--resume``), never as a wrong answer.
"""

import json
import os
import subprocess
import sys

done = subprocess.run(
    ["claude", "-p", "--output-format", "json", *sys.argv[1:]],
    stdin=sys.stdin,
    capture_output=True,
    text=True,
    check=False,
)
try:
    answer = json.loads(done.stdout)
except ValueError:
    answer = None
if done.returncode != 0 or not isinstance(answer, dict) or answer.get("is_error"):
    sys.stderr.write(done.stderr or done.stdout)
    sys.exit(done.returncode or 1)
usage = answer.get("usage") or {}
cache_reads = usage.get("cache_read_input_tokens") or 0
prompt_tokens = (usage.get("input_tokens") or 0) + (usage.get("cache_creation_input_tokens") or 0) + cache_reads
report = {
    "prompt_tokens": prompt_tokens,
    "completion_tokens": usage.get("output_tokens") or 0,
    "cached_tokens": cache_reads,
    "cost": answer.get("total_cost_usd"),
}
print(answer.get("result") or "")
usage_file = os.environ.get("ROTSCOPE_USAGE_FILE")
if usage_file:
    with open(usage_file, "w", encoding="utf-8") as handle:
        json.dump(report, handle)
