#!/usr/bin/env bash
# The GPU check (see benchmarks/gpu_check.py): rotscope's hf/ backend on CUDA with a random-weight
# 32K-window llama through a 32K-token grid, and vllm/ too where vLLM is installed, and the same grid
# through serve/NAME against `vllm serve` (token ids on /v1/completions). Prints tokens/s, the
# cached-token share, evaluated/bound and peak GPU memory, and how far each backend's answer
# log-probabilities (read on every row: --score both) lie from the first backend's. Needs torch
# and transformers; no network, no model download, nothing beyond this checkout (a few hundred KiB).
#
#   benchmarks/gpu_check.sh                         # CUDA, 32K tokens, hf and (if installed) vllm, serve
#   benchmarks/gpu_check.sh --device cpu --length 2048   # the CPU smoke mode
#
# rotscope runs from this checkout's src/ (not installed). Its own dependencies (pydantic, typer,
# rich, numpy, scipy, statsmodels, jinja2, plotly, httpx, tenacity, aiolimiter, tiktoken,
# tokenizers, libcst, pyyaml) must import; on a machine without a network, put their wheels in
# benchmarks/wheelhouse/ (pip download -d benchmarks/wheelhouse ... on a machine with one) and this
# script installs them from there with --no-index.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
python="${PYTHON:-python3}"
export PYTHONPATH="$repo/src${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

"$python" - <<'PY'
import torch, transformers
print(f"torch {torch.__version__}, transformers {transformers.__version__}, cuda {torch.cuda.is_available()}")
PY

if ! "$python" -c "import rotscope.cli, rotscope.execution.workflows.runner" 2>/tmp/rotscope-import.err; then
    if [ -d "$here/wheelhouse" ]; then
        "$python" -m pip install --no-index --find-links "$here/wheelhouse" \
            pydantic pyyaml typer rich numpy scipy statsmodels jinja2 plotly httpx tenacity aiolimiter \
            tiktoken tokenizers libcst
    else
        echo "gpu_check: rotscope's dependencies do not import here: $(tail -n 1 /tmp/rotscope-import.err)" >&2
        echo "gpu_check: put their wheels in $here/wheelhouse (see this script's header)" >&2
        exit 2
    fi
fi

exec "$python" "$here/gpu_check.py" "$@"
