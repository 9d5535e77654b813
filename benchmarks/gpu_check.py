"""The GPU check: rotscope's ``hf/`` backend (and ``vllm/`` where vLLM imports) on a random-weight
llama with a 32K window, through a 32K-token grid. Run by ``benchmarks/gpu_check.sh``, or by hand:

    python benchmarks/gpu_check.py [--device cuda|cpu] [--length 32768] [--backends hf,vllm]
        [--depths 0.0,0.5,1.0] [--limit 2] [--keep DIR]

Nothing is downloaded and nothing large travels: the tokenizer is a byte-level BPE trained here on
the Python standard library's sources (``tokenizers``), the model is a small ``LlamaConfig`` with
random weights made by transformers and saved into a temporary folder with the tokenizer, its chat
template and ``max_position_embeddings`` = the window. A model with random weights answers nonsense
(its rows score ``incorrect``); the check is about the engine: it must take the verified ids
exactly, reuse prefixes, and fit the window.

``serve`` runs the same grid through ``serve/NAME``: rotscope starts ``vllm serve`` on the model
folder (prefix caching, ``--enable-prompt-tokens-details``) and sends it the verified token ids on
``/v1/completions``; it ran nowhere yet (no GPU machine lent to the session that added it).

Each run also reads the gold answer's likelihood (``--score both``, the default; ``--score
accuracy`` times the replies alone): every row must have its ``answer_logprob``, and a closing
``likelihood`` line gives, per backend, the rows read and the largest |Δ| of a row's answer
log-probability against the first backend's on the same cell (hf's float32 or bfloat16 against
vLLM's kernels: not the same arithmetic, reported, not asserted).

Printed per backend (one JSON line each, then a table): calls, wall time of the calls, prompt
tokens sent, evaluated (sent minus cached), the trie's lower bound and evaluated / bound,
evaluated tokens per second,
the cached-token share and peak GPU memory (``torch.cuda.max_memory_allocated``; the engine runs
in this process: ``executor: inprocess`` for ``hf/``, ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` for vLLM).

``--device cpu --length 2048`` is the smoke mode that runs on a laptop in about a minute.

Written against the ``hf/`` backend of the branch that adds it (its ``hf: {device, dtype}``
section); the smoke mode ran on a trial merge of both branches, 2026-12-01, 2 cores under a load
average of 17: 8 calls, 0 errors, 2,048-token prompts, 16,384 sent, 8,493 evaluated = the trie
bound (48.2% cached), 333 evaluated tokens/s on the CPU; vllm skipped (not installed). No GPU
machine was lent to this task, so the CUDA figures are still to be measured: check the script
again after the merge.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
for _name, _value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                      "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}.items():  # fmt: skip
    os.environ.setdefault(_name, _value)

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def stdlib_texts(limit_chars: int = 4_000_000) -> list[str]:
    """Source text of the standard library (the default filler's own corpus), up to ``limit_chars``."""
    texts: list[str] = []
    total = 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        texts.append(text)
        total += len(text)
        if total >= limit_chars:
            break
    return texts


def write_tokenizer(folder: Path, vocab_size: int) -> int:
    """A byte-level BPE ``tokenizer.json`` with a ChatML template; its vocabulary size."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(stdlib_texts(), trainer)
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "chat_template": CHAT_TEMPLATE,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "model_max_length": 1 << 30,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    return int(tokenizer.get_vocab_size())


def write_model(folder: Path, window: int, vocab_size: int, layers: int, hidden: int) -> int:
    """A random-weight llama of ``window`` positions saved as safetensors; its parameter count."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=hidden * 8 // 3 // 64 * 64 or 64,
        num_hidden_layers=layers,
        num_attention_heads=max(hidden // 64, 1),
        num_key_value_heads=max(hidden // 128, 1),
        max_position_embeddings=window,
        rope_theta=1_000_000.0,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=SPECIAL.index("<|im_end|>"),
        pad_token_id=SPECIAL.index("<|endoftext|>"),
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(str(folder))
    return sum(parameter.numel() for parameter in model.parameters())


def model_folder(folder: Path, window: int, vocab_size: int, layers: int, hidden: int) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    vocab = write_tokenizer(folder, vocab_size)
    parameters = write_model(folder, window, vocab, layers, hidden)
    return {"folder": str(folder), "vocab": vocab, "parameters": parameters,
            "made_s": round(time.perf_counter() - started, 1)}  # fmt: skip


class Timing:
    """A reporter that notes when the calls began and ended."""

    def __init__(self) -> None:
        self.started_at = self.finished_at = 0.0

    def start(self, items: int, prompt_tokens: int) -> None:
        self.started_at = time.perf_counter()

    def advance(self, item: Any, completion: Any) -> None:
        return None

    def finish(self) -> None:
        self.finished_at = time.perf_counter()

    def notice(self, message: str) -> None:
        print(f"  {message}", file=sys.stderr)


def experiment(backend: str, folder: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """The run's config: ``hf/`` in this process on ``args.device``, or ``vllm/`` on the GPU."""
    config: dict[str, Any] = {
        "name": f"gpu-check-{backend}",
        "model": f"{backend}/{folder}",
        "tasks": ["niah"],
        "lengths": [args.length],
        "depths": [float(depth) for depth in args.depths.split(",")],
        "limit": args.limit,
        "generation": {"max_tokens": args.max_tokens},
        "filler": {"kind": "code", "variants": 1},
        "executor": {"kind": "inprocess"},
        "score": args.score,
        "out": str(out),
    }
    if backend == "hf":
        config["hf"] = {"device": args.device, "dtype": args.dtype}
    elif backend == "serve":
        config["model"] = f"serve/{SERVED_NAME}"
        config["serve"] = {
            "tokenizer": str(folder / "tokenizer.json"),
            "base_url": args.serve_url,
            "kind": "vllm",
        }
        del config["executor"]
    else:
        config["vllm"] = {"gpu_memory_utilization": args.gpu_memory_utilization, "dtype": args.dtype}
    return config


SERVED_NAME = "gpu-check"


@contextmanager
def vllm_server(folder: Path, args: argparse.Namespace, log: Path) -> Iterator[str]:
    """``vllm serve`` on the model folder (prefix caching and prompt-token details on, so the
    cached tokens are reported), on a free local port; yields its base URL once ``GET /v1/models``
    answers (it may take minutes: the engine compiles its graphs). It gets 0.8 of
    ``--gpu-memory-utilization``: the in-process vLLM run before it may still hold its share."""
    import httpx

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder),
        "--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port),
        "--enable-prefix-caching", "--enable-prompt-tokens-details", "--seed", "0",
        "--dtype", args.dtype, "--max-model-len", str(args.window or args.length + 1024),
        "--gpu-memory-utilization", str(round(args.gpu_memory_utilization * 0.8, 2)),
    ]  # fmt: skip
    env = {**os.environ, "VLLM_ENABLE_V1_MULTIPROCESSING": "1"}
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 900
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"vllm serve exited: {log.read_text(errors='replace')[-1500:]}")
                try:
                    if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("vllm serve not ready within 900 s")
                time.sleep(1)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()


def run_backend(backend: str, folder: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    import torch

    from rotscope.config.experiment import build_config
    from rotscope.execution.workflows.runner import run_experiment
    from rotscope.store import RunStore

    cuda = torch.cuda.is_available() and args.device == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    timing = Timing()
    began = time.perf_counter()
    run_dir = run_experiment(build_config(experiment(backend, folder, args, out / backend)), reporter=timing)
    wall = time.perf_counter() - began
    with RunStore.read(run_dir) as store:
        rows = store.rows()
        meta = store.meta()
    sent = sum(row["prompt_tokens"] for row in rows)
    cached = sum(row["cached_tokens"] or 0 for row in rows)
    calls_s = max(timing.finished_at - timing.started_at, 1e-9)
    errors = [row["error"] for row in rows if row["status"] == "error"]
    readings = {
        (row["case_id"], row["length_target"], row["depth"], row["control"]): row["answer_logprob"]
        for row in rows
        if row["status"] == "ok"
    }
    if args.score != "accuracy" and any(value is None for value in readings.values()):
        errors.append("a row without its answer_logprob")
    return {
        "readings": readings,
        "backend": backend,
        "device": args.device,
        "calls": len(rows),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "longest_prompt": max((row["prompt_tokens"] for row in rows), default=0),
        "calls_s": round(calls_s, 2),
        "wall_s": round(wall, 1),
        "sent_tokens": sent,
        "evaluated_tokens": sent - cached,
        "lower_bound": meta.get("tokens", {}).get("lower_bound"),
        "x_bound": round((sent - cached) / meta["tokens"]["lower_bound"], 3)
        if meta.get("tokens", {}).get("lower_bound")
        else None,
        "tokens_per_s": round((sent - cached) / calls_s),
        "cached_share": round(cached / sent, 3) if sent else 0.0,
        "peak_gpu_mib": round(torch.cuda.max_memory_allocated() / 2**20) if cuda else None,
        "run_dir": str(run_dir),
    }


COLUMNS = (
    ("backend", "backend", "{}"),
    ("calls", "calls", "{}"),
    ("errors", "errors", "{}"),
    ("longest", "longest_prompt", "{:,}"),
    ("calls s", "calls_s", "{}"),
    ("tok/s", "tokens_per_s", "{:,}"),
    ("cached", "cached_share", "{:.1%}"),
    ("evaluated", "evaluated_tokens", "{:,}"),
    ("bound", "lower_bound", "{:,}"),
    ("x bound", "x_bound", "{}"),
    ("peak GPU MiB", "peak_gpu_mib", "{}"),
)


def print_table(results: list[dict[str, Any]]) -> None:
    print("\n" + "  ".join(f"{title:>12}" for title, _, _ in COLUMNS))
    for result in results:
        cells = ("-" if result[key] is None else form.format(result[key]) for _, key, form in COLUMNS)
        print("  ".join(f"{cell:>12}" for cell in cells))


def likelihood_agreement(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per backend, the rows read and the largest |Δ| of a row's answer log-probability against
    the first backend's on the same cell."""
    first = results[0]["readings"]
    agreement = []
    for result in results:
        shared = [cell for cell in result["readings"] if cell in first and first[cell] is not None]
        deltas = [
            abs(result["readings"][cell] - first[cell])
            for cell in shared
            if result["readings"][cell] is not None
        ]
        agreement.append(
            {
                "backend": result["backend"],
                "against": results[0]["backend"],
                "rows_read": sum(value is not None for value in result["readings"].values()),
                "max_row_delta": round(max(deltas), 6) if deltas else None,
            }
        )
    return agreement


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--length", type=int, default=32_768, help="prompt length of the grid, in tokens")
    parser.add_argument("--window", type=int, help="the model's window (default: length + 1024)")
    parser.add_argument(
        "--backends", default="hf,vllm,serve", help="vllm and serve (vllm serve) run only where vLLM imports"
    )
    parser.add_argument("--depths", default="0.0,0.5,1.0")
    parser.add_argument("--limit", type=int, default=2, help="cases of the niah family")
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--score", choices=["accuracy", "likelihood", "both"], default="both")
    parser.add_argument("--dtype", default=None, help="default: bfloat16 on cuda, float32 on cpu")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.5)
    parser.add_argument("--keep", type=Path, help="make the model folder and run folders here and keep them")
    args = parser.parse_args()
    args.dtype = args.dtype or ("bfloat16" if args.device == "cuda" else "float32")

    import torch
    import transformers

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    print(json.dumps({"torch": torch.__version__, "transformers": transformers.__version__, "gpu": gpu}))
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_check: --device cuda but torch sees no CUDA device", file=sys.stderr)
        return 2
    root = args.keep or Path(tempfile.mkdtemp(prefix="rotscope-gpu-check-"))
    made = model_folder(
        root / "model", args.window or args.length + 1024, args.vocab, args.layers, args.hidden
    )
    print(json.dumps({"model": made}))
    results = []
    for backend in [name.strip() for name in args.backends.split(",") if name.strip()]:
        if backend in ("vllm", "serve") and (
            importlib.util.find_spec("vllm") is None or args.device != "cuda"
        ):
            print(json.dumps({"backend": backend, "skipped": "vllm is not installed (or --device cpu)"}))
            continue
        if backend == "serve":  # the same grid through serve/NAME, token ids to `vllm serve`
            with vllm_server(Path(made["folder"]), args, root / "vllm-serve.log") as url:
                args.serve_url = url
                result = run_backend(backend, Path(made["folder"]), args, root / "runs")
        else:
            result = run_backend(backend, Path(made["folder"]), args, root / "runs")
        results.append(result)
        print(json.dumps({key: value for key, value in result.items() if key != "readings"}))
    print_table(results)
    if args.score != "accuracy" and results:
        print(json.dumps({"likelihood": likelihood_agreement(results)}))
    return 1 if any(r["errors"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
