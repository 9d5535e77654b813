"""Shared fixtures (the real tokenizer of the bundled GGUF, the fake tokenizer, corpus helpers) and the
tiers: every test is marked with the folder it lives in (``unit``, ``flows``, ``integration``)."""

from __future__ import annotations

import functools
import os
import random
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rotscope._util.cpus import usable_cpus
from rotscope.backends.llamacpp.extra_buffers import Verdict, probe_command, probe_key, remember, run_probe
from rotscope.filler import Document
from rotscope.filler.corpus import TokenizedCorpus, tokenize_corpus
from rotscope.tokenizers.local import FakeTokenizer, LlamaCppTokenizer
from rotscope.types import Tokenizer
from tests.support.entry_points import current_rotscope_metadata

CorpusFactory = Callable[..., TokenizedCorpus]

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "flows", "integration")
INTEGRATION_TIMEOUT_S = 900
"""An integration test's module fixture may run a real model for minutes on 2 idle cores; the limit
is scaled by how busy the machine is when the tests start (``integration_timeout_s``)."""
MAX_WORKERS = 4
"""``-n auto``'s ceiling: each worker's engines take a thread per usable CPU, so more workers only
oversubscribe the CPUs (and each starts its own Ray for the Ray tests)."""


_METADATA = Path(tempfile.mkdtemp(prefix="rotscope-metadata-"))


def pytest_configure(config: pytest.Config) -> None:
    """When the installed rotscope metadata lacks this tree's component entry points (an editable
    install made from an older checkout), put current metadata ahead of it, in this process and in
    the command lines the tests start (``tests/support/entry_points.py``); an xdist worker is pinned
    to its share of the CPUs (``_pin_worker``)."""
    if current_rotscope_metadata(_METADATA):
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(_METADATA), os.environ.get("PYTHONPATH")])
        )
    _pin_worker()


def _build_cli_once() -> None:
    """typer's test runner builds the whole command tree from the functions' signatures on every
    ``invoke`` (about 40 ms, thousands of times in the suite); the app is the same object each time,
    so its command is built once per process, as the ``rotscope`` executable does."""
    import typer.testing

    build = typer.testing._get_command
    if not isinstance(build, functools._lru_cache_wrapper):
        typer.testing._get_command = functools.lru_cache(maxsize=8)(build)  # type: ignore[assignment]


_build_cli_once()


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_METADATA, ignore_errors=True)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One pytest-xdist worker per CPU this process may use (its affinity, not the machine's count that
    xdist's own ``auto`` reads through psutil), at most ``MAX_WORKERS``."""
    return max(1, min(MAX_WORKERS, len(usable_cpus())))


_MACHINE_CPUS = usable_cpus()
"""The CPUs this process could use before its xdist worker was pinned (``_pin_worker``)."""


def _pin_worker() -> None:
    """Pin an xdist worker to its share of the usable CPUs (one each on 2 cores), so the engines it
    starts take one thread per CPU it has (``usable_cpus``: its affinity) instead of every worker's
    engine spinning a thread per CPU of the machine: llama.cpp's threads busy-wait, and two workers'
    engines oversubscribing two cores cost several times the CPU time. Subprocesses inherit it."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not worker.startswith("gw") or count is None or int(count) < 2:
        return
    cpus, index = sorted(_MACHINE_CPUS), int(worker[2:])
    share = set(cpus[index :: int(count)]) or {cpus[index % len(cpus)]}
    os.sched_setaffinity(0, share)


@pytest.fixture(scope="module")
def whole_machine() -> Iterator[None]:
    """The machine's CPUs for a module that starts its own scheduler over them (Ray), then the
    worker's share again."""
    pinned = os.sched_getaffinity(0)
    os.sched_setaffinity(0, _MACHINE_CPUS)
    yield
    os.sched_setaffinity(0, pinned)


SLOWEST_FIRST = (
    "integration/test_quick_v1.py",
    "integration/test_gate_bundled.py",
    "integration/test_engine_worker_bundled.py",
    "integration/test_openai_server.py",
    "integration/test_probes_bundled.py",
    "integration/test_bundled_model.py",
)
"""The longest files of CI's ``--durations`` table, sent to the workers first once the fast tiers are
done (then the rest of the integration tier): xdist hands a worker one file at a time in this order
(``--no-loadscope-reorder``), so the longest real-model jobs start first and the short ones fill in at
the end, instead of its default order (most tests first) leaving a long real-model file for last."""


def _schedule_key(item: pytest.Item) -> tuple[int, int]:
    path = item.path.resolve().relative_to(TESTS).as_posix()
    slowest = SLOWEST_FIRST.index(path) if path in SLOWEST_FIRST else len(SLOWEST_FIRST)
    return (TIERS.index(path.split("/")[0]) if "/" in path else len(TIERS), slowest)


def integration_timeout_s() -> int:
    """``INTEGRATION_TIMEOUT_S`` times the load on the usable CPUs when the tests start (at least 1):
    a real-model test on a machine that other work keeps busy is slow, not hung."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    return round(INTEGRATION_TIMEOUT_S * max(1.0, load / max(len(_MACHINE_CPUS), 1)))


def pytest_report_header(config: pytest.Config) -> str:
    return (
        f"tiers run unit, flows, then the real-model tests (tests/integration, the longest files first), "
        f"each of those limited to {integration_timeout_s()} s ({INTEGRATION_TIMEOUT_S} s scaled by this "
        "machine's load): a slow machine makes them slow, not red"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its tier, from its folder; a test outside the tiers, or one marked with
    another tier than its folder's, is a collection error (so ``pytest tests/unit`` stays fast). The
    fast tiers run first, so a broken change shows in minutes; the real-model files follow, longest
    first (``SLOWEST_FIRST``), so the workers end together."""
    timeout = integration_timeout_s()
    for item in items:
        parts = item.path.resolve().relative_to(TESTS).parts
        tier = parts[0] if len(parts) > 1 else ""
        if tier not in TIERS:
            raise pytest.UsageError(
                f"{item.nodeid}: a test belongs in tests/unit, tests/flows or tests/integration"
            )
        for other in TIERS:
            if other != tier and item.get_closest_marker(other) is not None:
                raise pytest.UsageError(f"{item.nodeid} is marked {other} but lives in tests/{tier}: move it")
        item.add_marker(tier)
        if tier == "integration" and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(timeout))
    items.sort(key=_schedule_key)  # stable: a file's tests keep their order


FILLER_WORDS = (
    "the river stone paper quiet window table garden lantern morning harbor field "
    "copper bridge orchard meadow signal ledger thread valley summer winter"
).split()


def filler_text(lines: int = 120, seed: int = 0) -> str:
    """Plain prose lines of lowercase filler words, no trailing whitespace, a blank line now and then."""
    rng = random.Random(seed)
    out: list[str] = []
    for number in range(lines):
        if number % 9 == 8:
            out.append("")
            continue
        words = [rng.choice(FILLER_WORDS) for _ in range(rng.randint(4, 12))]
        out.append(" ".join(words).capitalize() + rng.choice([".", ",", ";", ""]))
    return "\n".join(out)


@pytest.fixture(scope="session")
def bundled_path() -> Path:
    from rotscope.backends.llamacpp.backend import bundled_model_path

    path = bundled_model_path()
    if not path.is_file():
        pytest.skip(f"bundled model not found at {path}")
    return path


@pytest.fixture(scope="session")
def real_tokenizer(bundled_path: Path) -> LlamaCppTokenizer:
    """The vocabulary and chat template of the bundled SmolLM2 GGUF (vocabulary only, fast)."""
    return LlamaCppTokenizer(bundled_path)


@pytest.fixture(scope="session")
def fake_tokenizer() -> FakeTokenizer:
    return FakeTokenizer()


@pytest.fixture(scope="session", params=["fake", "real"])
def tokenizer(request: pytest.FixtureRequest) -> Tokenizer:
    """Each test using this runs once with the fake tokenizer and once with the real one."""
    if request.param == "fake":
        return FakeTokenizer()
    return request.getfixturevalue("real_tokenizer")  # type: ignore[no-any-return]


def make_corpus(
    text: str, tokenizer: Tokenizer, min_tokens: int = 1, *, allow_repeat: bool = True
) -> TokenizedCorpus:
    """A ``TokenizedCorpus`` of one document holding ``text``."""
    return tokenize_corpus(
        [Document("generated", text)], tokenizer, min_tokens, allow_repeat=allow_repeat, origin="generated"
    )


@pytest.fixture(scope="session")
def corpus_from_text() -> CorpusFactory:
    """``corpus_from_text(text, tokenizer, min_tokens=1, allow_repeat=True)``."""
    return make_corpus


@pytest.fixture(scope="session")
def prose() -> Callable[..., str]:
    """``prose(lines=120, seed=0)``: deterministic filler text."""
    return filler_text


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    """A folder of three prose files, ``corpus/doc{0,1,2}.txt``, for text filler in run tests."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    for number in range(3):
        (folder / f"doc{number}.txt").write_text(filler_text(60, seed=number), encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def _machine_verdict() -> tuple[str, Verdict] | None:
    """The real extra-buffer probe of the bundled model on this machine, run once per session."""
    from rotscope.backends.llamacpp.backend import bundled_model_path
    from rotscope.tokenizers.gguf import file_digest

    path = bundled_model_path()
    if not path.is_file():
        return None
    return probe_key(file_digest(path)), run_probe(probe_command(path))


@pytest.fixture(autouse=True)
def _private_response_cache(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    _machine_verdict: tuple[str, Verdict] | None,
) -> None:
    """Runs in tests never read or write the user's response cache (``$XDG_CACHE_HOME/rotscope``).
    Each private cache starts with this machine's probe verdict, so tests do not probe again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    if _machine_verdict is not None:
        remember(*_machine_verdict)


@pytest.fixture(autouse=True)
def _no_real_engine_outside_integration(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In tests/unit and tests/flows the bundled model's vocabulary may be read, its weights never
    loaded: a test that runs the real engine (often by leaving ``model`` at its default, ``bundled``)
    belongs in tests/integration, where the suite's budget expects it."""
    if request.node.get_closest_marker("integration") is not None:
        return
    from rotscope.backends.llamacpp.backend import LlamaCppBackend
    from rotscope.execution.executors.worker import WorkerBackend

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(
            f"{request.node.nodeid} runs the real llama.cpp engine: move it to tests/integration"
        )

    monkeypatch.setattr(LlamaCppBackend, "_load", refuse)
    real_start = WorkerBackend.start

    def start(self: WorkerBackend) -> None:
        if isinstance(self.engine, LlamaCppBackend):
            refuse()
        real_start(self)

    monkeypatch.setattr(WorkerBackend, "start", start)
