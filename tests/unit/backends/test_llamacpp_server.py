"""How ``rotscope serve-llama`` decides llama.cpp's extra buffers and reads the server's arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from rotscope.backends.llamacpp import server as llamacpp_server
from rotscope.backends.llamacpp.extra_buffers import Verdict
from rotscope.backends.llamacpp.server import SERVER_MISSING, decide, model_argument, server_missing


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--model", "m.gguf", "--port", "8000"], "m.gguf"),
        (["--port", "8000", "--model=x/m.gguf"], "x/m.gguf"),
        (["--config_file", "c.json"], None),
        (["--model"], None),
    ],
)
def test_model_argument(arguments: list[str], expected: str | None) -> None:
    assert model_argument(arguments) == expected


def test_without_amx_extra_buffers_stay_on_without_a_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_probe(*_: object) -> Verdict:
        raise AssertionError("probed")

    monkeypatch.setattr(llamacpp_server, "extra_buffers_verdict", no_probe)
    assert decide("m.gguf", "auto", has_amx=False) == llamacpp_server.Decision(True, "no AMX on this CPU")


def test_with_amx_the_probe_decides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(
        llamacpp_server, "extra_buffers_verdict", lambda *_: Verdict(False, "the probe crashed with SIGSEGV")
    )
    decision = decide(str(model), "auto", has_amx=True)
    assert not decision.enabled
    assert decision.reason == "AMX on this CPU: the probe crashed with SIGSEGV"
    monkeypatch.setattr(llamacpp_server, "extra_buffers_verdict", lambda *_: Verdict(True, "ran"))
    assert decide(str(model), "auto", has_amx=True).enabled


def test_with_amx_and_no_model_file_they_are_off() -> None:
    assert not decide(None, "auto", has_amx=True).enabled


def test_an_explicit_choice_wins() -> None:
    assert decide(None, "on", has_amx=True).enabled
    assert not decide(None, "off", has_amx=False).enabled


def test_a_missing_server_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(name: str) -> object:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(llamacpp_server.importlib, "import_module", refuse)
    assert server_missing() == SERVER_MISSING
    assert "pip install 'llama-cpp-python[server]'" in SERVER_MISSING
