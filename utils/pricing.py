"""What a call costs: one dated price table, kept here and nowhere else.

Prices are US dollars per million tokens, as published on :data:`PRICES_AS_OF`. Cache writes cost
1.25 × the input price and cache reads 0.1 × (the API's standard multipliers); Message Batches
cost half of everything (:data:`BATCH_DISCOUNT`). A model that is not in the table has no price:
:func:`cost_usd` returns None and :func:`price_note` says why.
"""

from __future__ import annotations

from dataclasses import dataclass

PRICES_AS_OF = "2026-11-01"
CACHE_WRITE_MULTIPLIER = 1.25
CACHE_READ_MULTIPLIER = 0.10
BATCH_DISCOUNT = 0.5


@dataclass(frozen=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float


# Model id prefix → price (longest prefix wins, so dated ids such as claude-haiku-4-5-20251001 match).
PRICES: dict[str, Price] = {
    "claude-sonnet-5-5": Price(2.0, 10.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
}


def price_for(model_id: str | None) -> Price | None:
    if not model_id:
        return None
    matches = [prefix for prefix in PRICES if model_id.startswith(prefix)]
    return PRICES[max(matches, key=len)] if matches else None


def price_note(model_id: str | None) -> str | None:
    """None when the model has a price; else the sentence that goes next to ``cost_usd: null``."""
    if price_for(model_id) is not None:
        return None
    return f"no price for model {model_id!r} in utils/pricing.py (prices as of {PRICES_AS_OF}): cost unknown"


def cost_usd(model_id: str | None, input_tokens: int | None, output_tokens: int | None,
             cache_creation_input_tokens: int | None = None, cache_read_input_tokens: int | None = None,
             *, batch: bool = False) -> float | None:
    """Dollars for one call's usage; None when the model has no price. Missing counts are 0."""
    price = price_for(model_id)
    if price is None:
        return None
    per_input = price.input_per_mtok / 1e6
    dollars = ((input_tokens or 0) * per_input
               + (cache_creation_input_tokens or 0) * per_input * CACHE_WRITE_MULTIPLIER
               + (cache_read_input_tokens or 0) * per_input * CACHE_READ_MULTIPLIER
               + (output_tokens or 0) * price.output_per_mtok / 1e6)
    return dollars * (BATCH_DISCOUNT if batch else 1.0)
