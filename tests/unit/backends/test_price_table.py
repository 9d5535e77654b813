"""The list prices kept as data (``backends/data/prices.yaml``, issue 35 item 5): every entry cites
the provider's pricing page and a date, its numbers are positive, each backend registers exactly
its provider's entries, and the file ships with the package."""

from __future__ import annotations

import datetime
import tomllib
from pathlib import Path

import pytest
import yaml

from rotscope.backends import listed_prices
from rotscope.backends.price_table import OPTIONAL, REQUIRED, listed_price, price_file
from rotscope.config.experiment import Price

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "src" / "rotscope" / "backends" / "data" / "prices.yaml"
PAGES = {
    "anthropic": "https://docs.anthropic.com/",
    "openai": "https://platform.openai.com/",
    "gemini": "https://ai.google.dev/",
}


def _raw() -> dict[str, dict[str, dict[str, object]]]:
    data = yaml.safe_load(DATA.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_every_entry_has_a_source_a_date_and_positive_prices() -> None:
    entries = [
        (provider, name, entry) for provider, models in _raw().items() for name, entry in models.items()
    ]
    assert len(entries) >= 10
    for provider, name, entry in entries:
        assert set(REQUIRED) <= set(entry) <= {*REQUIRED, *OPTIONAL}, (provider, name)
        assert str(entry["source"]).startswith(PAGES[provider]), (provider, name, entry["source"])
        as_of = entry["as_of"]
        assert (
            isinstance(as_of, datetime.date) and datetime.date(2024, 1, 1) <= as_of <= datetime.date.today()
        )
        prices = [value for key, value in entry.items() if key.endswith("_per_mtok")]
        assert all(isinstance(value, (int, float)) and value > 0 for value in prices), (provider, name)
        assert float(entry["output_per_mtok"]) >= float(entry["input_per_mtok"])  # type: ignore[arg-type]
        if "cached_input_per_mtok" in entry:
            assert float(entry["cached_input_per_mtok"]) < float(entry["input_per_mtok"])  # type: ignore[arg-type]


def test_each_backend_registers_exactly_its_providers_entries() -> None:
    expected = {
        f"{provider}/{name}": listed.price
        for provider, models in price_file().items()
        for name, listed in models.items()
    }
    assert listed_prices() == expected


def test_current_models_are_priced_with_their_provenance() -> None:
    sonnet = listed_price("anthropic/claude-sonnet-4-5")
    assert sonnet is not None
    assert sonnet.price == Price(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
    assert sonnet.source == "https://docs.anthropic.com/en/docs/about-claude/pricing"
    assert sonnet.as_of == "2025-11-15"
    assert listed_price("openai/gpt-5") is None  # sources disagreed on its cached price: left unpriced
    assert listed_price("fake/lexical") is None


DAY = datetime.date(2025, 1, 1)
BASE = {"input_per_mtok": 1.0, "output_per_mtok": 2.0, "source": "https://example.com/pricing", "as_of": DAY}


@pytest.mark.parametrize(
    ("change", "fragment"),
    [({"source": None}, "lacks"), ({"as_of": "soon"}, "date"), ({"input_per_mtok": 0}, "positive"),
     ({"source": "example.com"}, "https"), ({"price": 1}, "unknown")],
)  # fmt: skip
def test_a_broken_entry_is_refused(change: dict[str, object], fragment: str) -> None:
    from rotscope.backends import price_table

    entry = {key: value for key, value in {**BASE, **change}.items() if value is not None}
    with pytest.raises(ValueError, match=fragment):
        price_table._entry("p/m", entry)


def test_the_file_ships_in_the_package_data() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "backends/data/*.yaml" in pyproject["tool"]["setuptools"]["package-data"]["rotscope"]
