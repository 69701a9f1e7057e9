"""What a call costs: the arithmetic, for the price table a judge provider declares.

A provider (``components/judges/providers/``) declares one dated :class:`PriceTable`: US dollars
per million tokens per model id prefix, its cache multipliers and its batch discount. The
provider's client prices each reply with :meth:`PriceTable.cost_usd`; a model that is not in the
table has no price: ``cost_usd`` returns None and :meth:`PriceTable.note` says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float


@dataclass(frozen=True)
class PriceTable:
    provider: str
    as_of: str  # the date the prices were published
    prices: dict[str, Price] = field(default_factory=dict)  # model id prefix → price (longest prefix wins)
    cache_write_multiplier: float = 1.0  # × the input price, per cache-write token
    cache_read_multiplier: float = 1.0  # × the input price, per cache-read token
    batch_discount: float = 1.0  # × everything, for a request sent in a batch

    def price_for(self, model_id: str | None) -> Price | None:
        if not model_id:
            return None
        matches = [prefix for prefix in self.prices if model_id.startswith(prefix)]
        return self.prices[max(matches, key=len)] if matches else None

    def note(self, model_id: str | None) -> str | None:
        """None when the model has a price; else the sentence that goes next to ``cost_usd: null``."""
        if self.price_for(model_id) is not None:
            return None
        return (f"no price for model {model_id!r} in the {self.provider} provider's price table (prices as of "
                f"{self.as_of}): cost unknown")

    def cost_usd(self, model_id: str | None, input_tokens: int | None, output_tokens: int | None,
                 cache_creation_input_tokens: int | None = None, cache_read_input_tokens: int | None = None,
                 *, batch: bool = False) -> float | None:
        """Dollars for one call's usage; None when the model has no price. Missing counts are 0."""
        price = self.price_for(model_id)
        if price is None:
            return None
        per_input = price.input_per_mtok / 1e6
        dollars = ((input_tokens or 0) * per_input
                   + (cache_creation_input_tokens or 0) * per_input * self.cache_write_multiplier
                   + (cache_read_input_tokens or 0) * per_input * self.cache_read_multiplier
                   + (output_tokens or 0) * price.output_per_mtok / 1e6)
        return dollars * (self.batch_discount if batch else 1.0)


NO_PRICES = PriceTable("offline", "-")  # a provider whose calls cost nothing it can count
