"""Per-machine engine tuning: doctor times the candidate threads and batch sizes (here a fake
measurer, no timing), remembers them per machine and model file, and the llama.cpp backend takes
the fastest thread count at its own batch only where ``llamacpp.n_threads`` is unset and the entry
is this machine's, this file's and as many usable CPUs'. The batch is never tuned (it is part of
the experiment's identity); doctor says when another is faster."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rotscope._util.cpus import physical_cores, thread_candidates, usable_cpus
from rotscope.backends.llamacpp import extra_buffers
from rotscope.backends.llamacpp.doctor import Measured, measure_speed
from rotscope.backends.llamacpp.engine_speed import (
    BATCH_CANDIDATES,
    Setting,
    Speed,
    remember_speed,
    remembered_speed,
)
from rotscope.backends.llamacpp.extra_buffers import probe_key
from rotscope.backends.llamacpp.options import LlamaCppOptions
from rotscope.records.run import Execution
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


def fake_measurer(prefill: dict[Setting, float], seen: list[Setting]):  # type: ignore[no-untyped-def]
    def measure(path: Path, setting: Setting) -> Measured:
        seen.append(setting)
        return Measured(prefill.get(setting, 100.0), 40.0 + setting[0], "extra_buffers=on")

    return measure


def test_doctor_remembers_the_fastest_measured_setting() -> None:
    seen: list[Setting] = []
    measure = fake_measurer({(4, 256): 180.0, (2, 512): 240.0, (2, 128): 230.0}, seen)
    speed = measure_speed(Path("model.gguf"), "key-a", measure, frozenset(range(4)), SMT_CPUINFO).speed
    assert seen == [(threads, batch) for threads in (4, 2) for batch in BATCH_CANDIDATES]
    assert (speed.threads, speed.n_batch, speed.prefill_tps, speed.decode_tps, speed.cpus) == (
        2,
        512,
        240.0,
        42.0,
        4,
    )
    assert remembered_speed("key-a") == speed
    assert speed.tuned(4) == (2, 512)
    assert speed.tuned(4, n_batch=128) == (2, 128)  # the best measured with the batch the user set
    assert speed.tuned(4, threads=4) == (4, 256)
    assert speed.tuned(4, threads=3) == (3, 512)  # an unmeasured count set: the tuned batch beside it
    assert speed.tuned(2) is None  # measured with 4 usable CPUs: another machine's now


def test_a_tie_goes_to_fewer_threads_then_the_smaller_batch() -> None:
    speed = measure_speed(
        Path("model.gguf"), "key-b", fake_measurer({}, []), frozenset(range(4)), SMT_CPUINFO
    ).speed
    assert (speed.threads, speed.n_batch) == (2, 128)


def test_noisy_or_busy_timings_are_reported_and_nothing_is_saved() -> None:
    from rotscope.backends.llamacpp.doctor import noisy_text, spread

    assert spread((100.0, 100.0, 100.0)) == 0.0 and spread((90.0,)) == 0.0
    assert spread((80.0, 100.0, 120.0)) == pytest.approx(0.4)

    def repeats(values: tuple[float, ...]):  # type: ignore[no-untyped-def]
        def measure(path: Path, setting: Setting) -> Measured:
            return Measured(sorted(values)[1], 40.0, "extra_buffers=on", values)

        return measure

    steady = measure_speed(
        Path("m.gguf"), "steady", repeats((200.0, 210.0, 205.0)), frozenset({0, 1}), "", 0.4
    )
    assert steady.steady and remembered_speed("steady") == steady.speed
    noisy = measure_speed(Path("m.gguf"), "noisy", repeats((120.0, 200.0, 260.0)), frozenset({0, 1}), "", 0.4)
    assert not noisy.steady and not noisy.busy and remembered_speed("noisy") is None
    assert "varied 70% between repeats" in noisy_text(noisy) and "nothing saved" in noisy_text(noisy)
    # steady repeats, but a load of 4 on 2 CPUs: another job's speed, not this machine's
    busy = measure_speed(Path("m.gguf"), "busy", repeats((200.0, 201.0, 202.0)), frozenset({0, 1}), "", 4.0)
    assert busy.busy and not busy.steady and remembered_speed("busy") is None
    assert "another job holds the CPUs (load average 4.0 on 2 CPUs" in noisy_text(busy)


def _remember_tuned(digest: str, setting: Setting, cpus: int) -> None:
    measured = {(cpus, 256): 200.0, (cpus, 128): 150.0, setting: 300.0}
    remember_speed(
        probe_key(digest), Speed(300.0, 50.0, setting[0], "extra_buffers=on", cpus, setting[1], measured)
    )


def test_the_backend_runs_with_the_tuned_threads_at_its_own_batch_unless_the_config_sets_them(
    bundled_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rotscope.backends.llamacpp.backend import LlamaCppBackend

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    # fastest: 3 threads at batch 512
    measured = {(4, 256): 200.0, (4, 128): 150.0, (3, 512): 300.0, (3, 256): 250.0}
    remember_speed(
        probe_key(file_digest(bundled_path)), Speed(300.0, 50.0, 3, "extra_buffers=on", 4, 512, measured)
    )
    tuned = LlamaCppBackend(bundled_path, LlamaCppOptions())
    assert tuned.engine_settings == {
        "threads": 3,
        "threads_from": "tuned by doctor",
        "n_batch": 256,
        "n_batch_from": "default",
    }  # fmt: skip  (the batch stays the identity's 256 although 512 was faster)
    speed = tuned.measured_speed()
    assert speed is not None and speed.prefill_at((3, 256)) == 250.0
    both_set = LlamaCppBackend(bundled_path, LlamaCppOptions(n_threads=1, n_batch=64)).resolve_settings()
    assert (both_set.threads, both_set.threads_from, both_set.n_batch, both_set.n_batch_from) == (
        1,
        "set",
        64,
        "set",
    )
    batch_set = LlamaCppBackend(bundled_path, LlamaCppOptions(n_batch=128))
    assert (batch_set.resolve_settings().threads, batch_set.resolve_settings().n_batch) == (4, 128)
    estimate = batch_set.measured_speed()
    assert estimate is not None and estimate.prefill_tps == 150.0  # the set batch's own measurement


def test_doctor_keeps_the_thread_count_and_suggests_a_faster_batch_only_beyond_five_percent() -> None:
    from rotscope.backends.llamacpp.doctor import prefill_text

    faster = Speed(
        240.0, 42.0, 2, "extra_buffers=on", 4, 512, {(2, 256): 200.0, (4, 256): 180.0, (2, 512): 240.0}
    )
    text = prefill_text(faster)
    assert text.startswith("200 prompt tokens/s, 42 generated tokens/s with 2 threads at n_batch 256")
    assert "n_batch 512 prefills 20% faster here: set llamacpp.n_batch" in text
    close = Speed(204.0, 42.0, 2, "extra_buffers=on", 4, 512, {(2, 256): 200.0, (2, 512): 204.0})
    assert "set llamacpp.n_batch" not in prefill_text(close)


def test_an_entry_of_another_model_file_machine_or_cpu_count_is_ignored(
    bundled_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rotscope.backends.llamacpp.backend import LlamaCppBackend

    def used() -> tuple[int, str, int, str]:
        found = LlamaCppBackend(bundled_path, LlamaCppOptions()).resolve_settings()
        return (found.threads, found.threads_from, found.n_batch, found.n_batch_from)

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    fallback = (4, "one per usable CPU", 256, "default")
    _remember_tuned("another-model-file", (3, 512), cpus=4)
    assert used() == fallback
    with monkeypatch.context() as other_machine:
        other_machine.setattr(extra_buffers, "cpu_flags", lambda: "another cpu's flags")
        _remember_tuned(file_digest(bundled_path), (3, 512), cpus=4)
    assert used() == fallback
    _remember_tuned(file_digest(bundled_path), (3, 512), cpus=8)  # measured with more CPUs usable
    assert used() == fallback
    remember_speed(probe_key(file_digest(bundled_path)), Speed(300.0, 50.0, 3, "extra_buffers=on"))
    assert used() == fallback  # an entry from before tuning


def test_the_affinity_bounds_the_fallback(bundled_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rotscope.backends.llamacpp.backend import LlamaCppBackend

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    settings = LlamaCppBackend(bundled_path, LlamaCppOptions()).resolve_settings()
    assert (settings.threads, settings.threads_from) == (1, "one per usable CPU")


def test_the_engine_line_shows_threads_their_source_and_the_batch() -> None:
    engine = {
        "mode": "extra_buffers=on",
        "settings": {
            "threads": 2,
            "threads_from": "tuned by doctor",
            "n_batch": 256,
            "n_batch_from": "set",
        },
        "worker_process": True,
        "crashes": 0,
        "verdict": None,
    }
    assert engine_note(Execution(order="prefix trie", engine=engine)) == (
        "; engine extra_buffers=on, 2 threads (tuned by doctor), n_batch 256 (set), in a worker process"
    )
    del engine["settings"]  # a run from before tuning
    assert (
        engine_note(Execution(order="prefix trie", engine=engine))
        == "; engine extra_buffers=on, in a worker process"
    )


def test_the_dry_run_estimate_names_the_threads_it_assumes() -> None:
    from types import SimpleNamespace

    from rotscope.execution.workflows.dry_run import LocalEstimate
    from rotscope.report.dry_run import local_estimate_line

    planned = SimpleNamespace(
        local=LocalEstimate(200 << 20, 300.0, 51.0, 3), plan=SimpleNamespace(lower_bound=15_299)
    )
    line = local_estimate_line(planned)  # type: ignore[arg-type]
    assert "15,299 prompt tokens at 300 tokens/s measured by rotscope doctor with 3 threads" in line


def test_a_ray_replica_resolves_the_threads_left_unset_on_its_own_machine(
    bundled_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pickle

    from rotscope.backends.llamacpp.backend import LlamaCppBackend
    from rotscope.execution.executors.ray_executor import ReplicaActor

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    driver = LlamaCppBackend(bundled_path, LlamaCppOptions(extra_buffers="off"))
    shipped = pickle.loads(pickle.dumps(driver))  # as Ray sends it: settings resolved by the driver
    assert driver.resolve_settings().threads == 4 == shipped.resolve_settings().threads
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)  # the node's CPUs
    replica = ReplicaActor(shipped)
    assert replica.engine.resolve_settings().threads == 1  # type: ignore[attr-defined]
    pinned = ReplicaActor(
        pickle.loads(
            pickle.dumps(LlamaCppBackend(bundled_path, LlamaCppOptions(n_threads=3, extra_buffers="off")))
        )
    )
    assert pinned.engine.resolve_settings().threads == 3  # type: ignore[attr-defined]  # a set value wins
