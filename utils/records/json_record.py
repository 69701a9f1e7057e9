"""The base of a record that is an object of a results file, read and written back unchanged.

A :class:`JsonRecord` is a frozen dataclass whose fields are the object's keys. :meth:`JsonRecord.from_json`
reads an object with the typed reader (:func:`utils.records.typecheck.record`: every field checked
against its type, one :class:`~utils.errors.InputError` naming the field otherwise); the record
remembers the object's keys in their order (``json_keys``) and keeps the keys it does not know
(``extra``), so :meth:`JsonRecord.to_json` writes the object it was read from, key for key: an old
file, whose objects lack a later field or hold one this version does not know, is written back as
it was. A record the run builds (``json_keys`` None) writes its fields in their order, less those of
:attr:`JsonRecord.OMITTED_WHEN_NONE` that are None.

Numbers that are not counts are typed :data:`Number` (``int | float``): a number is written back as
it was read (``1`` stays ``1``, ``1.0`` stays ``1.0``).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from utils.records.typecheck import EXTRA, KEYS, record

Number = int | float
R = TypeVar("R", bound="JsonRecord")


def to_json(value: Any) -> Any:
    """``value`` as JSON: records by their :meth:`JsonRecord.to_json`, lists and objects item by item."""
    if isinstance(value, JsonRecord):
        return value.to_json()
    if isinstance(value, list):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


def _default(f: Any) -> Any:
    return f.default_factory() if f.default_factory is not MISSING else f.default


@dataclass(frozen=True)
class JsonRecord:
    """An object of a results file as a typed record (module docstring)."""

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset()  # fields a built record writes only when set

    extra: dict = field(default_factory=dict, kw_only=True, repr=False)  # keys this version does not know, kept
    json_keys: tuple[str, ...] | None = field(default=None, kw_only=True, repr=False, compare=False)

    def to_json(self) -> dict:
        """The object: the keys it was read with, in their order (a field set since, at the end), or
        for a built record its fields in order; then the keys this version does not know."""
        own = [f for f in fields(self) if f.name not in (KEYS, EXTRA)]
        if self.json_keys is None:
            out = {f.name: to_json(getattr(self, f.name)) for f in own
                   if not (f.name in self.OMITTED_WHEN_NONE and getattr(self, f.name) is None)}
            out.update({k: v for k, v in self.extra.items() if k not in out})
            return out
        names = {f.name for f in own}
        out = {}
        for key in self.json_keys:
            if key in names:
                out[key] = to_json(getattr(self, key))
            elif key in self.extra:
                out[key] = self.extra[key]
        out.update({f.name: to_json(getattr(self, f.name)) for f in own
                    if f.name not in out and getattr(self, f.name) != _default(f)})
        return out

    @classmethod
    def from_json(cls: type[R], data: object, where: str, fix: str) -> R:
        """The record of the JSON object ``data``, checked field by field; raises
        :class:`~utils.errors.InputError` naming ``where``, the field, then ``fix``."""
        return record(cls, data, where, fix, extra=EXTRA)
