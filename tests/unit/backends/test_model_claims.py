"""A model string without a provider goes to the one backend that claims it
(``register_backend(claims=...)``): llama.cpp's ``bundled`` and bare model-file paths; two claims
are one line naming both, none the list of providers."""

from __future__ import annotations

import pytest

from rotscope.backends import BACKENDS, BackendEntry, split_model
from rotscope.backends.llamacpp.backend import bundled_model_path
from rotscope.errors import BadInput


def test_the_llama_cpp_backend_claims_bundled_and_bare_model_files() -> None:
    assert split_model("bundled") == ("llamacpp", str(bundled_model_path()))
    assert split_model("models/small.gguf") == ("llamacpp", "models/small.gguf")
    assert split_model("fake/lexical") == ("fake", "lexical")


def test_two_claims_name_both_and_none_lists_the_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    for attribute in ("_entries", "_modules", "_attributed"):
        monkeypatch.setattr(BACKENDS, attribute, dict(getattr(BACKENDS, attribute)))
    BACKENDS.find("llamacpp")
    greedy = BackendEntry(lambda name, config: None, "greedy", claims=lambda model: model)  # type: ignore[arg-type,return-value]
    BACKENDS.register("greedy", module=__name__)(greedy)
    with pytest.raises(BadInput, match=r"claimed by the backends greedy, llamacpp: write provider/NAME"):
        split_model("small.gguf")
    assert split_model("anything") == ("greedy", "anything")
    BACKENDS._entries.pop("greedy")
    with pytest.raises(BadInput, match=r"neither a .gguf path nor provider/name \(providers: .*llamacpp"):
        split_model("anything")
