"""Components found through entry points, as an outside package installs them: a temporary
``acme_rotscope-1.0.dist-info`` on ``sys.path`` declares a one-file backend written beside it
(nothing is fetched); its provenance, a duplicate name naming both providers, and rotscope's own
metadata gone stale."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rotscope.backends import BACKENDS, BackendEntry
from rotscope.backends.fake import FakeBackend
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.filler import FILLER_SOURCES
from rotscope.registry import STALE, rediscover
from rotscope.scoring import SCORERS
from rotscope.tasks import TASKS
from tests.support.entry_points import write_dist_info

ACME_BACKEND = """
from rotscope.backends import BackendEntry, register_backend
from rotscope.backends.fake import FakeBackend, responder_for


class AcmeBackend(FakeBackend):
    def __init__(self, name):
        super().__init__(name, responder_for("lexical"), provider="acme")


@register_backend("acme", hint="acme/NAME: the lexical fake from outside rotscope")
def acme_backend(name, config):
    return AcmeBackend(name)


LISTED = BackendEntry(lambda name, config: AcmeBackend(name), "acme-listed/NAME: named by its entry point")
"""

GREEDY_BACKEND = """
from rotscope.backends import register_backend
from rotscope.backends.fake import FakeBackend, responder_for


@register_backend("greedy", hint="greedy/NAME")
@register_backend("fake", hint="fake/NAME: taken from rotscope")
def greedy_backend(name, config):
    return FakeBackend(name, responder_for("lexical"), provider="greedy")
"""

OUTSIDE_MODULES = ("acme_backend", "greedy_backend")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` for dist-infos and modules; the registries as they were afterwards."""
    for registry in (BACKENDS, TASKS, FILLER_SOURCES, SCORERS):
        for attribute in ("_entries", "_modules", "_attributed"):
            monkeypatch.setattr(registry, attribute, dict(getattr(registry, attribute)))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    monkeypatch.undo()
    for module in OUTSIDE_MODULES:
        sys.modules.pop(module, None)
    importlib.invalidate_caches()
    rediscover()


def install(site: Path, name: str, version: str, points: dict[str, str], modules: dict[str, str]) -> None:
    for module, source in modules.items():
        (site / f"{module}.py").write_text(source, encoding="utf-8")
    write_dist_info(site, name, version, {"rotscope.backends": points})
    importlib.invalidate_caches()
    rediscover()


def test_an_outside_backend_is_found_lazily_with_its_provenance(site: Path) -> None:
    install(site, "acme-rotscope", "1.0", {"acme": "acme_backend"}, {"acme_backend": ACME_BACKEND})
    assert "acme" in BACKENDS.names() and "acme" in BACKENDS
    assert "acme_backend" not in sys.modules, "listing names imports no component"
    provider = BACKENDS.provider("acme")
    assert (provider.distribution, provider.version, provider.builtin) == ("acme-rotscope", "1.0", False)
    assert provider.describe() == "acme-rotscope 1.0"

    backend = BACKENDS.get("acme").factory("x", ExperimentConfig())
    assert isinstance(backend, FakeBackend) and backend.model_id == "acme/x"
    assert BACKENDS.provider("acme").label() == "acme-rotscope (acme_backend)"
    assert BACKENDS.provider("fake").describe().endswith("(built-in)")
    assert BACKENDS.provider("fake").label() == "rotscope (rotscope.backends.fake)"


def test_a_module_object_entry_point_is_the_entry_itself(site: Path) -> None:
    install(
        site, "acme-rotscope", "1.0", {"acme-listed": "acme_backend:LISTED"}, {"acme_backend": ACME_BACKEND}
    )
    entry = BACKENDS.get("acme-listed")
    assert isinstance(entry, BackendEntry) and entry.hint.startswith("acme-listed/NAME")
    assert BACKENDS.provider("acme-listed").distribution == "acme-rotscope"


def test_reimporting_a_module_registers_again_without_a_duplicate(site: Path) -> None:
    install(site, "acme-rotscope", "1.0", {"acme": "acme_backend"}, {"acme_backend": ACME_BACKEND})
    first = BACKENDS.get("acme")
    importlib.reload(sys.modules["acme_backend"])
    assert BACKENDS.get("acme") is not first
    assert BACKENDS.provider("acme").distribution == "acme-rotscope"


def test_two_entry_points_for_one_name_fail_naming_both(site: Path) -> None:
    install(site, "acme-rotscope", "1.0", {"fake": "acme.fake"}, {})
    with pytest.raises(BadInput) as raised:
        BACKENDS.names()
    message = str(raised.value)
    assert message.startswith("backend 'fake' is registered by ")
    assert "rotscope (rotscope.backends.fake)" in message and "acme-rotscope (acme.fake)" in message
    assert "\n" not in message


def test_a_module_registering_a_name_another_provider_holds_fails_naming_both(site: Path) -> None:
    install(site, "greedy-rotscope", "2.0", {"greedy": "greedy_backend"}, {"greedy_backend": GREEDY_BACKEND})
    with pytest.raises(BadInput) as raised:
        BACKENDS.get("greedy")
    message = str(raised.value)
    assert "backend 'fake' is registered by rotscope (rotscope.backends.fake)" in message
    assert "greedy-rotscope (greedy_backend)" in message
    assert BACKENDS.get("fake").hint.startswith("fake/NAME: a deterministic"), "the built-in keeps its name"


def test_a_second_register_from_another_module_fails(site: Path) -> None:
    install(site, "acme-rotscope", "1.0", {"acme": "acme_backend"}, {"acme_backend": ACME_BACKEND})
    entry = BACKENDS.get("acme")
    with pytest.raises(
        BadInput, match=r"backend 'acme' is registered by acme-rotscope \(acme_backend\) and by"
    ):
        BACKENDS.register("acme", module="tests.elsewhere")(entry)
    BACKENDS.register("acme", module="acme_backend")(entry)  # the same module again: no duplicate


def test_an_outside_entry_point_naming_a_missing_module_says_reinstall_it(site: Path) -> None:
    install(site, "acme-rotscope", "1.0", {"acme": "acme_gone"}, {})
    with pytest.raises(BadInput, match=r"reinstall acme-rotscope\)$"):
        BACKENDS.get("acme")


def stale_rotscope(site: Path, points: dict[str, str]) -> None:
    """rotscope's own metadata, as an editable install made before the source changed."""
    groups = {"console_scripts": {"rotscope": "rotscope.cli:main"}}
    if points:
        groups["rotscope.backends"] = points
    write_dist_info(site, "rotscope", "0.1.0", groups)
    importlib.invalidate_caches()
    rediscover()


def test_rotscope_metadata_without_the_groups_is_stale(site: Path) -> None:
    stale_rotscope(site, {})
    with pytest.raises(BadInput) as raised:
        BACKENDS.names()
    assert (
        str(raised.value)
        == STALE
        == "rotscope's package metadata is stale: reinstall rotscope (pip install -e .)"
    )


@pytest.mark.parametrize(
    "value", ["rotscope.backends.gone", "rotscope.backends.fake:gone", "rotscope.backends.fake"]
)
def test_rotscope_metadata_naming_what_is_gone_is_stale(site: Path, value: str) -> None:
    stale_rotscope(site, {"fake": "rotscope.backends.fake", "ghost": value})
    assert "ghost" in BACKENDS.names()
    with pytest.raises(BadInput) as raised:
        BACKENDS.get("ghost")
    assert str(raised.value) == STALE
