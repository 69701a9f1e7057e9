"""The order check's one rule (``--order-check``, and the judge audit's ``order-reversal``): the
chunks a judge graded, shown again in reverse order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def reversed_order(chunks: Sequence[T]) -> list[T] | None:
    """``chunks`` in reverse order, or None when there are fewer than two (nothing to reverse: no
    second call is made)."""
    return list(reversed(chunks)) if len(chunks) > 1 else None
