"""Checking parsed JSON against the type hints of a dataclass record, field by field.

:func:`record` builds a record (nested records, lists and dicts of them) from a JSON object and
:func:`convert` one value; either raises :class:`InputError` naming where the value sits, what it is
and what it should be, followed by the caller's ``fix``: a hand-edited or hostile file is refused
with one line, never a crash later. ``int`` is accepted where a ``float`` is expected; nothing else
is converted.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, Union

from utils.errors import InputError


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


def _as(tp: Any, value: object, where: str) -> Any:
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin is None and tp in _SCALARS:
        return _as_scalar(tp, value, where)
    if origin in (Union, types.UnionType):
        return _as_union(tp, value, where)
    if origin is list or tp is list:
        if not isinstance(value, list):
            raise _Bad(where, f"is {describe_json(value)}, not a list")
        args = typing.get_args(tp)
        item = args[0] if args else Any
        return [_as(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict or tp is dict:
        if not isinstance(value, Mapping):
            raise _Bad(where, f"is {describe_json(value)}, not an object")
        args = typing.get_args(tp)
        item = args[1] if args else Any
        return {k: _as(item, v, f"{where}.{k}") for k, v in value.items()}
    if is_dataclass(tp):
        return _record(tp, value, where)
    raise _Bad(where, f"has a type this reader does not know ({tp})")  # pragma: no cover - a programming error


_SCALARS = (str, bool, int, float)


def _as_scalar(tp: type, value: object, where: str) -> Any:
    """``value`` as the JSON scalar ``tp`` (an int is a float too; a bool is not a number)."""
    if tp is str:
        if not isinstance(value, str):
            raise _Bad(where, f"is {describe_json(value)}, not a string")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise _Bad(where, f"is {describe_json(value)}, not true or false")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float) if tp is float else int):
        raise _Bad(where, f"is {describe_json(value)}, not {'a number' if tp is float else 'a whole number'}")
    return float(value) if tp is float else value


def _as_union(tp: Any, value: object, where: str) -> Any:
    """``value`` as the first member of the union ``tp`` that takes it (None when ``tp`` is optional)."""
    args = typing.get_args(tp)
    if value is None and type(None) in args:
        return None
    for arg in args:
        if arg is type(None):
            continue
        try:
            return _as(arg, value, where)
        except _Bad:
            continue
    raise _Bad(where, f"is {describe_json(value)}, not {_expected(tp)}")


def _record(cls: type, data: object, where: str, extra: str | None = None) -> Any:
    if not isinstance(data, Mapping):
        raise _Bad(where, f"is {describe_json(data)}, not an object")
    types_of = hints(cls)
    names = {f.name for f in fields(cls)} - ({extra} if extra else set())
    values = {}
    for f in fields(cls):
        if f.name == extra or f.name not in data:
            continue
        values[f.name] = _as(types_of[f.name], data[f.name], f"{where}.{f.name}")
    if extra:
        values[extra] = {k: v for k, v in data.items() if k not in names}
    for f in fields(cls):  # a required field a file lacks
        if f.name not in values and f.default is MISSING and f.default_factory is MISSING:
            raise _Bad(where, f"has no {f.name}")
    return cls(**values)
