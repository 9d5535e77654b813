"""The extra-buffer probe: a child killed by a signal means unsafe, verdicts are remembered per machine."""

from __future__ import annotations

import sys
from pathlib import Path

from rotscope.backends.llamacpp import extra_buffers
from rotscope.backends.llamacpp.extra_buffers import (
    Verdict,
    probe_key,
    remember,
    remembered,
    run_probe,
    signal_name,
)

SEGFAULT = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]


def test_a_probe_that_segfaults_gives_an_unsafe_verdict_naming_the_signal() -> None:
    verdict = run_probe(SEGFAULT)
    assert not verdict.safe
    assert "SIGSEGV" in verdict.reason


def test_a_probe_that_runs_gives_a_safe_verdict_with_the_buffer_types_it_saw() -> None:
    log = "load_tensors: CPU_REPACK model buffer size = 12 MiB\\nload_tensors: CPU_Mapped model buffer size"
    verdict = run_probe([sys.executable, "-c", f"import sys; sys.stderr.write('{log}')"])
    assert verdict.safe
    assert verdict.buffer_types == ("CPU_REPACK",)


def test_a_probe_that_fails_says_its_last_line() -> None:
    verdict = run_probe([sys.executable, "-c", "import sys; sys.exit('no AMX tiles for you')"])
    assert not verdict.safe
    assert "exit 1" in verdict.reason and "no AMX tiles for you" in verdict.reason


def test_signal_names() -> None:
    assert signal_name(-11) == "SIGSEGV"
    assert signal_name(-9) == "SIGKILL"
    assert signal_name(3) == "exit 3"


def test_verdicts_are_remembered_per_version_cpu_and_model(tmp_path: Path) -> None:
    key = probe_key("model-a")
    assert "llama-cpp-python" in key and "model-a" in key
    assert probe_key("model-b") != key
    assert remembered(key) is None
    remember(key, Verdict(False, "the probe crashed with SIGSEGV", ("AMX",), "now"))
    assert remembered(key) == Verdict(False, "the probe crashed with SIGSEGV", ("AMX",), "now")
    assert remembered(probe_key("model-b")) is None


def test_an_unreadable_cache_only_means_probing_again() -> None:
    path = extra_buffers.probe_cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json", encoding="utf-8")
    assert remembered(probe_key("model-a")) is None
    remember(probe_key("model-a"), Verdict(True, "ran"))
    assert remembered(probe_key("model-a")) == Verdict(True, "ran")


def test_the_verdict_decides_the_mode_and_a_crash_turns_extra_buffers_off(bundled_path: Path) -> None:
    from rotscope.backends.llamacpp.backend import LlamaCppBackend
    from rotscope.backends.llamacpp.options import LlamaCppOptions
    from rotscope.tokenizers.gguf import file_digest

    remember(probe_key(file_digest(bundled_path)), Verdict(True, "ran"))
    backend = LlamaCppBackend(bundled_path, LlamaCppOptions())
    assert backend.engine_mode == "extra_buffers=on"
    assert "extra_buffers=off" in (backend.fallback("crashed with SIGSEGV") or "")
    assert backend.engine_mode == "extra_buffers=off"
    assert backend.fallback("crashed with SIGSEGV") is None  # nothing safer left
    later = LlamaCppBackend(bundled_path, LlamaCppOptions())  # the next run starts in safe mode
    assert later.engine_mode == "extra_buffers=off"
    assert later.verdict is not None and "SIGSEGV" in later.verdict.reason
    forced = LlamaCppBackend(bundled_path, LlamaCppOptions(extra_buffers="on"))
    assert forced.engine_mode == "extra_buffers=on" and forced.verdict is None
