"""Checking parsed JSON against the type hints of a dataclass record, field by field.

:func:`record` builds a record (nested records, lists and dicts of them) from a JSON object and
:func:`convert` one value; either raises :class:`InputError` naming where the value sits, what it is
and what it should be, followed by the caller's ``fix``: a hand-edited or hostile file is refused
with one line, never a crash later. ``int`` is accepted where a ``float`` is expected; nothing else
is converted.

A record with a :data:`KEYS` field (:class:`utils.records.json_record.JsonRecord`) also remembers the
keys of the object it was read from, in their order, and keeps the keys it does not know in its
:data:`EXTRA` field, nested or not: written back, it is the object it was read from.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, Union

from utils.errors import InputError


KEYS = "json_keys"  # the field of a record that remembers the keys of the object it was read from
EXTRA = "extra"  # the field of such a record that keeps the keys it does not know


@functools.cache
def remembers_keys(cls: type) -> bool:
    """Whether the record ``cls`` remembers the keys of the object it is read from (a :data:`KEYS` field)."""
    return any(f.name == KEYS for f in fields(cls))


_UNION, _SCALAR, _LIST, _DICT, _RECORD, _ANY, _UNKNOWN = range(7)


@functools.cache
def _shape(tp: Any) -> tuple[int, tuple]:
    """How :func:`_as` reads a value of ``tp``: its kind and type arguments (computed once per type: a results
    file of 1,000 rows asks it some 200,000 times)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return _ANY, ()
    if origin in (Union, types.UnionType):
        return _UNION, args
    if tp in _SCALARS:
        return _SCALAR, ()
    if origin is list or tp is list:
        return _LIST, (args[0] if args else Any,)
    if origin is dict or tp is dict:
        return _DICT, (args[1] if args else Any,)
    if is_dataclass(tp):
        return _RECORD, ()
    return _UNKNOWN, ()


@functools.cache
def _layout(cls: type, extra: str | None) -> tuple[tuple[tuple[str, Any], ...], frozenset[str], tuple[str, ...], bool]:
    """A record's read plan: (field, type) of each field read from the object, the names read, the
    required ones, whether it remembers its keys (computed once per record type)."""
    types_of = hints(cls)
    remembers = remembers_keys(cls)
    names = {f.name for f in fields(cls)} - {extra, KEYS if remembers else None}
    read = tuple((f.name, types_of[f.name]) for f in fields(cls) if f.name in names)
    required = tuple(f.name for f in fields(cls)
                     if f.name in names and f.default is MISSING and f.default_factory is MISSING)
    return read, frozenset(names), required, remembers


class _Bad(Exception):
    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where} {message}")


def describe_json(value: object) -> str:
    """What a JSON value is, in words, for messages: "null", "a boolean", "a number", "a string", "a list",
    "an object"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, Mapping) else type(value).__name__


def _expected(tp: Any) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return " or ".join(_expected(a) for a in args)
    if tp is type(None):
        return "null"
    if origin is list or tp is list:
        return "a list"
    if origin is dict or tp is dict or is_dataclass(tp):
        return "an object"
    return {str: "a string", int: "a whole number", float: "a number", bool: "true or false"}.get(tp, str(tp))


_HINTS: dict[type, dict[str, Any]] = {}


def hints(cls: type) -> dict[str, Any]:
    """The resolved type hints of ``cls`` (cached)."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def convert(tp: Any, value: object, where: str, fix: str) -> Any:
    """``value`` checked against ``tp`` (and converted: int → float, dataclasses built); raises
    :class:`InputError` naming ``where``, then ``fix``."""
    try:
        return _as(tp, value, where)
    except _Bad as err:
        raise InputError(f"{err}: {fix} (or correct that field)") from None


def record(cls: type, data: object, where: str, fix: str, extra: str | None = None) -> Any:
    """A ``cls`` record from the JSON object ``data``, every field checked against its type hint; a
    field the record lacks takes its default, and with ``extra`` (the name of a dict field) the
    object's unknown keys are kept there. Raises :class:`InputError` naming ``where``, then ``fix``."""
    try:
        return _record(cls, data, where, extra)
    except _Bad as err:
        raise InputError(f"{err}: {fix} (or correct that field)") from None


def _union(args: tuple, value: object, where: str) -> Any:
    if value is None and type(None) in args:
        return None
    kinds = [arg for arg in args if arg is not type(None)]
    if len(kinds) == 1:  # X | None: X's own message (the nested field that is wrong)
        return _as(kinds[0], value, where)
    for arg in kinds:
        try:
            return _as(arg, value, where)
        except _Bad:
            continue
    raise _Bad(where, f"is {describe_json(value)}, not {_expected(Union[args])}")


_SCALARS = {str: (str, "a string"), bool: (bool, "true or false"), int: (int, "a whole number"),
            float: ((int, float), "a number")}


def _scalar(tp: type, value: object, where: str) -> Any:
    kinds, expected = _SCALARS[tp]
    if not isinstance(value, kinds) or (isinstance(value, bool) and tp is not bool):
        raise _Bad(where, f"is {describe_json(value)}, not {expected}")
    return float(value) if tp is float else value


def _as(tp: Any, value: object, where: str) -> Any:
    kind, args = _shape(tp)
    if kind == _SCALAR:
        return _scalar(tp, value, where)
    if kind == _UNION:
        return _union(args, value, where)
    if kind == _ANY:
        return value
    if kind == _LIST:
        if not isinstance(value, list):
            raise _Bad(where, f"is {describe_json(value)}, not a list")
        return [_as(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind == _DICT:
        if not isinstance(value, Mapping):
            raise _Bad(where, f"is {describe_json(value)}, not an object")
        return {k: _as(args[0], v, f"{where}.{k}") for k, v in value.items()}
    if kind == _RECORD:
        return _record(tp, value, where, EXTRA if remembers_keys(tp) else None)
    raise _Bad(where, f"has a type this reader does not know ({tp})")  # pragma: no cover - a programming error


def _record(cls: type, data: object, where: str, extra: str | None = None) -> Any:
    if not isinstance(data, Mapping):
        raise _Bad(where, f"is {describe_json(data)}, not an object")
    read, names, required, remembers = _layout(cls, extra)
    values: dict[str, Any] = {name: _as(tp, data[name], f"{where}.{name}") for name, tp in read if name in data}
    if extra:
        values[extra] = {k: v for k, v in data.items() if k not in names}
    if remembers:
        values[KEYS] = tuple(data)
    for name in required:  # a required field a file lacks
        if name not in values:
            raise _Bad(where, f"has no {name}")
    return cls(**values)
