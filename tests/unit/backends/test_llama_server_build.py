"""The cached ``llama-server`` build: its key from the version and the CPU's flags (the first cached
build's key, recorded in its build.json, reproduced), a build found by its record under another
key, and the command line that turns the AMX buffer off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rotscope.backends.llamacpp.server_build import build_key, cached_server, key_flags, server_command

RECORDED = (
    "amx_bf16 amx_int8 amx_tile avx avx2 avx512_bitalg avx512_vnni avx512_vpopcntdq avx512bw avx512cd "
    "avx512dq avx512f avx512ifma avx512vbmi avx512vl f16c fma sse4_2 "
)
"""The flags of the first cached build's build.json (a Xeon with AMX), under key 06ec957e2976."""
KERNEL = "fpu avx512_fp16 " + " ".join(reversed(RECORDED.split())) + " avx_vnni sse2 avx512_bf16"


def test_the_key_is_the_version_and_the_cpu_flags_it_tracks() -> None:
    assert key_flags(KERNEL) == RECORDED  # only the tracked flags, sorted, each with a space
    assert build_key("0.3.36", RECORDED) == "0.3.36-06ec957e2976"
    assert build_key("0.3.37", RECORDED) != build_key("0.3.36", RECORDED)
    assert build_key("0.3.36", key_flags("avx avx2 fma f16c sse4_2")) != "0.3.36-06ec957e2976"


def _cache(root: Path, key: str, record: dict[str, object]) -> Path:
    binary = root / "rotscope" / "llama-server" / key / "bin" / "llama-server"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    (binary.parent.parent / "build.json").write_text(json.dumps(record))
    return binary


def test_a_build_is_found_by_its_key_or_by_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cached_server("0.3.36", KERNEL) is None
    elsewhere = _cache(tmp_path, "0.3.36-handmade", {"version": "0.3.36", "cpu_flags": RECORDED})
    assert cached_server("0.3.36", KERNEL) == elsewhere
    assert cached_server("0.3.35", KERNEL) is None  # another version's build is not this one's
    assert cached_server("0.3.36", "avx avx2") is None  # nor one for another CPU
    keyed = _cache(tmp_path, "0.3.36-06ec957e2976", {"version": "0.3.36", "cpu_flags": RECORDED})
    assert cached_server("0.3.36", KERNEL) == keyed


def test_the_server_runs_fixed_threads_and_batch_with_the_amx_buffer_off_on_amx() -> None:
    command = server_command(
        Path("llama-server"), Path("m.gguf"), port=8080, threads=2, n_batch=256, n_ctx=512, amx=True
    )
    joined = " ".join(command)
    assert "-t 2 -tb 2 -b 256 -ub 256" in joined and "-c 512 -np 1" in joined and "-fa off" in joined
    assert command[-1] == "--no-repack"
    plain = server_command(
        Path("s"), Path("m"), port=1, threads=1, n_batch=8, n_ctx=64, parallel=2, amx=False
    )
    assert "--no-repack" not in plain and "-c 128 -np 2" in " ".join(plain)
