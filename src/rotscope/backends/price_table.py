"""The remote backends' list prices, kept as data (``backends/data/prices.yaml``): each price with
the provider's public pricing page it was read from and the date of that reading, so a dry run can
say how old and where from the numbers it multiplies are.

Each backend registers its provider's prices (``register_backend(prices=provider_prices(...))``);
``listed_price`` gives one model's entry with its provenance. The experiment file's ``prices:``
adds models and overrides these (``execution.calls.cost.price_table``)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from rotscope.config.experiment import Price

PRICE_FILE = "prices.yaml"
FIELDS = {
    "input_per_mtok": "input",
    "output_per_mtok": "output",
    "cached_input_per_mtok": "cached_input",
    "cache_write_per_mtok": "cache_write",
}
REQUIRED = ("input_per_mtok", "output_per_mtok", "source", "as_of")
OPTIONAL = ("cached_input_per_mtok", "cache_write_per_mtok", "read_via", "note")


@dataclass(frozen=True)
class ListedPrice:
    """One model's list price and where it was read: ``source`` the provider's pricing page,
    ``as_of`` the date of the copy read, ``read_via`` that copy when it was not the provider's page,
    ``note`` what the numbers leave out (a long-context tier)."""

    price: Price
    source: str
    as_of: str
    read_via: str | None = None
    note: str | None = None


@cache
def price_file() -> dict[str, dict[str, ListedPrice]]:
    """Every listed price by provider and ``NAME``; ``ValueError`` for an entry that breaks the
    file's rules (a packaging error, never the user's input)."""
    text = resources.files("rotscope.backends").joinpath("data", PRICE_FILE).read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError(f"{PRICE_FILE}: not a mapping of providers")
    return {
        str(provider): {str(name): _entry(f"{provider}/{name}", entry) for name, entry in models.items()}
        for provider, models in data.items()
    }


def _entry(model: str, entry: Any) -> ListedPrice:
    if not isinstance(entry, dict):
        raise ValueError(f"{PRICE_FILE}: {model} is not a mapping")
    missing = [key for key in REQUIRED if key not in entry]
    unknown = sorted(set(entry) - {*REQUIRED, *OPTIONAL})
    if missing or unknown:
        raise ValueError(f"{PRICE_FILE}: {model} lacks {missing} or has unknown {unknown}")
    as_of = entry["as_of"]
    if not isinstance(as_of, datetime.date):
        raise ValueError(f"{PRICE_FILE}: {model}: as_of must be a date (YYYY-MM-DD)")
    numbers = {FIELDS[key]: float(entry[key]) for key in FIELDS if key in entry}
    if any(value <= 0 for value in numbers.values()):
        raise ValueError(f"{PRICE_FILE}: {model}: prices must be positive")
    source = str(entry["source"])
    if not source.startswith("https://"):
        raise ValueError(f"{PRICE_FILE}: {model}: source must be the provider's https pricing page")
    return ListedPrice(Price(**numbers), source, as_of.isoformat(), entry.get("read_via"), entry.get("note"))


def provider_prices(provider: str) -> dict[str, Price]:
    """``provider``'s list prices by model ``NAME``: what its backend registers."""
    return {name: listed.price for name, listed in price_file().get(provider, {}).items()}


def listed_price(model: str) -> ListedPrice | None:
    """The listed entry of ``provider/NAME``, ``None`` when it has none."""
    provider, _, name = model.partition("/")
    return price_file().get(provider, {}).get(name)
