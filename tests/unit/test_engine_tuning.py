"""Per-machine thread tuning: doctor times the candidate thread counts (here a fake measurer, no
timing), remembers the fastest per machine and model file, and the llama.cpp backend uses it only
where ``llamacpp.n_threads`` is unset and the entry is this machine's, this file's and as many CPUs'."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rotscope._util.cpus import physical_cores, thread_candidates, usable_cpus
from rotscope.backends import extra_buffers
from rotscope.backends.engine_speed import Speed, remember_speed, remembered_speed
from rotscope.backends.extra_buffers import probe_key
from rotscope.config import LlamaCppOptions
from rotscope.execution.doctor import Measured, measure_speed
from rotscope.report.terminal import engine_note
from rotscope.tokenizers.gguf import file_digest

# Two cores with two hyper-threads each: CPUs 0 and 2 share core 0, CPUs 1 and 3 core 1.
SMT_CPUINFO = "\n\n".join(
    f"processor\t: {cpu}\nmodel name\t: Some CPU\nphysical id\t: 0\ncore id\t\t: {cpu % 2}"
    for cpu in range(4)
)


def test_candidates_are_the_usable_cpus_and_the_physical_cores_they_span() -> None:
    everything = frozenset(range(4))
    assert physical_cores(everything, SMT_CPUINFO) == 2
    assert thread_candidates(everything, SMT_CPUINFO) == (4, 2)
    # an affinity of two siblings of one core: two CPUs, one core
    assert thread_candidates(frozenset({0, 2}), SMT_CPUINFO) == (2, 1)
    assert thread_candidates(frozenset({0, 1}), SMT_CPUINFO) == (2,)  # no SMT left: one candidate
    assert thread_candidates(frozenset({0, 1, 2}), "") == (3,)  # cpuinfo that says nothing


def test_usable_cpus_follow_the_affinity_not_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert usable_cpus() == frozenset({3})


def fake_measurer(prefill_by_threads: dict[int, float], seen: list[int]):  # type: ignore[no-untyped-def]
    def measure(path: Path, threads: int) -> Measured:
        seen.append(threads)
        return Measured(prefill_by_threads[threads], 40.0 + threads, "extra_buffers=on")

    return measure


def test_doctor_remembers_the_fastest_measured_thread_count() -> None:
    seen: list[int] = []
    measure = fake_measurer({4: 180.0, 2: 240.0}, seen)
    speed = measure_speed(Path("model.gguf"), "key-a", measure, frozenset(range(4)), SMT_CPUINFO)
    assert seen == [4, 2]
    assert (speed.threads, speed.prefill_tps, speed.decode_tps, speed.cpus) == (2, 240.0, 42.0, 4)
    assert remembered_speed("key-a") == speed
    assert speed.tuned_threads(4) == 2
    assert speed.tuned_threads(2) is None  # measured with 4 usable CPUs: another machine's now


def test_a_tie_goes_to_fewer_threads() -> None:
    speed = measure_speed(
        Path("model.gguf"), "key-b", fake_measurer({4: 200.0, 2: 200.0}, []), frozenset(range(4)), SMT_CPUINFO
    )
    assert speed.threads == 2


def _remember_tuned(digest: str, threads: int, cpus: int) -> None:
    remember_speed(
        probe_key(digest),
        Speed(300.0, 50.0, threads, "extra_buffers=on", cpus, {cpus: 200.0, threads: 300.0}),
    )


def test_the_backend_runs_with_the_tuned_threads_unless_the_config_sets_them(
    bundled_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rotscope.backends.llamacpp import LlamaCppBackend

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    _remember_tuned(file_digest(bundled_path), threads=3, cpus=4)
    tuned = LlamaCppBackend(bundled_path, LlamaCppOptions())
    assert tuned.resolve_threads() == (3, "tuned by doctor")
    assert tuned.engine_settings == {"threads": 3, "threads_from": "tuned by doctor", "n_batch": 256}
    speed = tuned.measured_speed()
    assert speed is not None and (speed.prefill_tps, speed.threads) == (300.0, 3)  # the tuned speed
    assert LlamaCppBackend(bundled_path, LlamaCppOptions(n_threads=1)).resolve_threads() == (1, "set")
    forced = LlamaCppBackend(bundled_path, LlamaCppOptions(n_threads=4)).measured_speed()
    assert forced is not None and (forced.prefill_tps, forced.threads) == (200.0, 4)  # its own speed


def test_an_entry_of_another_model_file_machine_or_cpu_count_is_ignored(
    bundled_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rotscope.backends.llamacpp import LlamaCppBackend

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    fallback = (4, "one per usable CPU")
    _remember_tuned("another-model-file", threads=3, cpus=4)
    assert LlamaCppBackend(bundled_path, LlamaCppOptions()).resolve_threads() == fallback
    with monkeypatch.context() as other_machine:
        other_machine.setattr(extra_buffers, "cpu_flags", lambda: "another cpu's flags")
        _remember_tuned(file_digest(bundled_path), threads=3, cpus=4)
    assert LlamaCppBackend(bundled_path, LlamaCppOptions()).resolve_threads() == fallback
    _remember_tuned(file_digest(bundled_path), threads=3, cpus=8)  # measured with more CPUs usable
    assert LlamaCppBackend(bundled_path, LlamaCppOptions()).resolve_threads() == fallback
    remember_speed(probe_key(file_digest(bundled_path)), Speed(300.0, 50.0, 3, "extra_buffers=on"))
    assert LlamaCppBackend(bundled_path, LlamaCppOptions()).resolve_threads() == fallback  # untuned entry


def test_the_affinity_bounds_the_fallback(bundled_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rotscope.backends.llamacpp import LlamaCppBackend

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert LlamaCppBackend(bundled_path, LlamaCppOptions()).resolve_threads() == (1, "one per usable CPU")


def test_the_engine_line_shows_threads_their_source_and_the_batch() -> None:
    execution = {
        "engine": {
            "mode": "extra_buffers=on",
            "settings": {"threads": 2, "threads_from": "tuned by doctor", "n_batch": 256},
            "worker_process": True,
            "crashes": 0,
            "verdict": None,
        }
    }
    assert engine_note(execution) == (
        "; engine extra_buffers=on, 2 threads (tuned by doctor), n_batch 256, in a worker process"
    )
    del execution["engine"]["settings"]  # a run from before tuning
    assert engine_note(execution) == "; engine extra_buffers=on, in a worker process"
