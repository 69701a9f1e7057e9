"""Installed versions of the libraries a run depends on (recorded in results and cache keys)."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata


def package_versions(names: Iterable[str]) -> dict[str, str]:
    """``{name: version}``; a package that is not installed is recorded as ``"not installed"``."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out
