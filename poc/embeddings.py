"""The dense retriever's embedding models, by name: ``wordllama-256`` (the default), its truncations
``wordllama-128`` and ``wordllama-64`` (WordLlama is trained so that the first dimensions of a vector
stand on their own), or ``package.module:function`` for a model of your own.

An embedding model is an object whose ``embed(texts)`` gives one float32 row per text, each of
length 1 (cosine similarity is then a dot product), and whose ``dim`` is the row's width.
``package.module:function`` names a function taking a list of texts and returning an array-like of
shape (len(texts), d); its rows are normalised here.

:func:`embedding_model` resolves a name and raises ``ValueError`` naming the fix when the model is
not installed or the function cannot be imported: a suite configuration that names one is refused
before any work (:mod:`components.run.retrieval.suite`).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

DEFAULT = "wordllama-256"
WORDLLAMA_DIM = 256  # the width of the weights the wordllama wheel ships (l2_supercat_256)
WORDLLAMA_TRUNCATIONS = (256, 128, 64)
_WORDLLAMA = re.compile(r"wordllama-(\d+)")


@lru_cache(maxsize=1)
def load_wordllama():
    """The WordLlama model from the weights inside the installed package (offline, writes nothing)."""
    import wordllama
    from wordllama import WordLlama

    return WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)


class WordLlamaEmbedding:
    """WordLlama's 256-d vectors, cut to the first ``dim`` dimensions and normalised again."""

    def __init__(self, dim: int = WORDLLAMA_DIM) -> None:
        self.dim = dim

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        vectors = load_wordllama().embed(list(texts), norm=True, batch_size=batch_size).astype(np.float32)
        return vectors if self.dim == WORDLLAMA_DIM else normalised(vectors[:, :self.dim])


class FunctionEmbedding:
    """A plug-in's function ``texts → array (n, d)``, its rows normalised."""

    def __init__(self, name: str, function: Callable[[list[str]], object]) -> None:
        self.name, self.function, self.dim = name, function, None

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        vectors = np.asarray(self.function(list(texts)), dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise ValueError(f"embedding model {self.name!r} returned an array of shape {vectors.shape} for "
                             f"{len(texts)} texts: return one row per text")
        self.dim = vectors.shape[1]
        return normalised(vectors)


def normalised(vectors: np.ndarray) -> np.ndarray:
    """Each row at length 1 (a zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def wordllama_weights() -> list[int]:
    """The widths whose WordLlama weights are installed (the wheel ships 256)."""
    import wordllama

    folder = Path(wordllama.__file__).parent / "weights"
    return sorted(int(m.group(1)) for p in folder.glob("l2_supercat_*.safetensors")
                  if (m := re.fullmatch(r"l2_supercat_(\d+)\.safetensors", p.name)))


def embedding_model(name: str) -> WordLlamaEmbedding | FunctionEmbedding:
    """The embedding model ``name`` names (module docstring); ``ValueError`` naming the fix when it
    is unknown, not installed, or cannot be imported."""
    known = ", ".join(f"wordllama-{d}" for d in WORDLLAMA_TRUNCATIONS)
    match = _WORDLLAMA.fullmatch(name) if isinstance(name, str) else None
    if match:
        dim = int(match.group(1))
        if dim in WORDLLAMA_TRUNCATIONS:
            try:
                installed = wordllama_weights()
            except ImportError:
                installed = []
            if WORDLLAMA_DIM not in installed:
                raise ValueError(f"embedding model {name!r} is not installed (no WordLlama {WORDLLAMA_DIM}-d "
                                 "weights): pip install wordllama")
            return WordLlamaEmbedding(dim)
        raise ValueError(f"embedding model {name!r} is not installed: the wordllama package ships the "
                         f"{WORDLLAMA_DIM}-d weights, truncated to {known}; use one of those")
    if not isinstance(name, str) or ":" not in name:
        raise ValueError(f"embedding model {name!r} is not one this pipeline knows: use {known}, or "
                         "package.module:function for your own")
    module_name, _, attr = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as err:  # ImportError, or the module failing while importing
        raise ValueError(f"embedding model {name!r}: cannot import {module_name!r} ({type(err).__name__}: "
                         f"{str(err)[:200]}): check that it is importable") from err
    function = getattr(module, attr, None)
    if not callable(function):
        raise ValueError(f"embedding model {name!r}: {module_name} has no callable {attr!r}: name a function "
                         "taking a list of texts and returning one vector per text")
    return FunctionEmbedding(name, function)
