"""Doctor's line about llama-cpp-python's own server on a CPU with AMX."""

from __future__ import annotations

import pytest

from rotscope.backends.llamacpp import server as llamacpp_server
from rotscope.backends.llamacpp.doctor import server_check


def test_where_extra_buffers_crash_doctor_names_the_safe_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llamacpp_server, "server_missing", lambda: None)
    check = server_check(extra_buffers_safe=False)
    assert check.status == "warn"
    assert check.detail == (
        "llama-cpp-python's own server crashes on this CPU; start it with "
        "`rotscope serve-llama MODEL.gguf --port 8000`"
    )


def test_a_missing_server_extra_is_named_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llamacpp_server, "server_missing", lambda: llamacpp_server.SERVER_MISSING)
    assert server_check(extra_buffers_safe=False).detail.endswith(
        "(pip install 'llama-cpp-python[server]' first)"
    )
    assert server_check(extra_buffers_safe=True).status == "ok"
