"""bm25s, imported without scipy: scipy.sparse is imported when bm25s first uses it.

bm25s (0.2 and 0.3) runs ``import scipy.sparse as sp`` when it is imported, about 0.1-0.2 s and
15 MB, yet uses ``sp`` in one place only: building the score matrix with ``csc_backend="scipy"``,
which :class:`poc.bm25.BM25Retriever` chooses for its memory. Loading a stored index (the warm start),
scoring a query and the stopword list the offline judge reads are numpy or plain Python. So
:func:`load_bm25s` imports bm25s while ``scipy`` and ``scipy.sparse`` stand in ``sys.modules`` as
deferred modules, which import the real ones on their first attribute read (an index build), and
takes them out of ``sys.modules`` again as soon as bm25s is imported. A bm25s that reads scipy while
it is imported (a later version) is imported again the ordinary way, scipy included.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

_LOCK = threading.Lock()


class Deferred(ModuleType):
    """Stands for the module of the same name; imports the real one on the first attribute read."""

    def __getattr__(self, attribute: str) -> object:
        if attribute.startswith("__"):  # import machinery probing a stand-in: it has no such attribute
            raise AttributeError(attribute)
        real = importlib.import_module(self.__name__)
        if real is self:  # read while still standing in (bm25s being imported): no such attribute yet
            raise AttributeError(attribute)
        value = getattr(real, attribute)
        setattr(self, attribute, value)
        return value


def load_bm25s() -> ModuleType:
    """The ``bm25s`` package, imported (when no one has imported it yet) without importing scipy."""
    loaded = sys.modules.get("bm25s")
    if loaded is not None:
        return loaded
    with _LOCK:
        stand_ins = {}
        if "scipy.sparse" not in sys.modules:
            stand_ins["scipy.sparse"] = Deferred("scipy.sparse")
            if "scipy" not in sys.modules:
                stand_ins["scipy"] = Deferred("scipy")
                stand_ins["scipy"].sparse = stand_ins["scipy.sparse"]
        sys.modules.update(stand_ins)
        try:
            import bm25s
        except ImportError:  # a bm25s that reads scipy while it is imported: imported the ordinary way
            _forget(stand_ins)
            for name in [n for n in sys.modules if n == "bm25s" or n.startswith("bm25s.")]:
                del sys.modules[name]
            import bm25s
        finally:
            _forget(stand_ins)
    return bm25s


def _forget(stand_ins: dict[str, ModuleType]) -> None:
    for name, module in stand_ins.items():
        if sys.modules.get(name) is module:
            del sys.modules[name]
