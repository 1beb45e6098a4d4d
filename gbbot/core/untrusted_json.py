"""JSON that someone else wrote (a report from a fork's workflow run), parsed within bounds:
nesting depth and the number of strings and containers are counted by a scan of the text before
anything is built, numbers are refused past a few digits, NaN and Infinity are refused outright.
A refusal is a `Refused` naming what is wrong, never a RecursionError or a huge structure.
Once checked against its schema, an object becomes a model record with `record`."""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import math
import re
import types
import typing
from dataclasses import dataclass
from typing import Any

# A whole string (escapes included) or one bracket: what the scan has to look at.
TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


class Refused(ValueError):
    """The text is not JSON gbbot will read; the message says why, in one line."""


@dataclass(frozen=True)
class Bounds:
    depth: int  # arrays and objects inside one another
    values: int  # strings, arrays and objects in all
    number_chars: int  # characters of one number


def scan(text: str, bounds: Bounds) -> None:
    """Refuse text nested deeper or holding more values than `bounds`, before parsing it."""
    depth = values = 0
    for token in TOKEN.finditer(text):
        kind = token.group()[0]
        values += kind != "]" and kind != "}"
        if kind in "[{":
            depth += 1
            if depth > bounds.depth:
                raise Refused(f"nested more than {bounds.depth} deep")
        elif kind in "]}":
            depth -= 1
    if values > bounds.values:
        raise Refused(f"{values} strings, arrays and objects, over the {bounds.values} allowed")


def _number(bounds: Bounds, convert: type[int] | type[float]) -> Any:
    def parse(literal: str) -> int | float:
        if len(literal) > bounds.number_chars:
            raise Refused(f"a number of {len(literal)} characters, over the {bounds.number_chars} allowed")
        value = convert(literal)
        if not math.isfinite(value):
            raise Refused(f"the number {literal} is not finite")
        return value

    return parse


def _constant(name: str) -> Any:
    raise Refused(f"{name} is not a JSON number")


def loads(text: str, bounds: Bounds) -> Any:
    """`json.loads` within `bounds`; Refused (a ValueError) when out of them or not JSON."""
    scan(text, bounds)
    try:
        return json.loads(
            text,
            parse_int=_number(bounds, int),
            parse_float=_number(bounds, float),
            parse_constant=_constant,
        )
    except json.JSONDecodeError as exc:
        raise Refused(f"not JSON ({exc})") from None
    except RecursionError:  # the scan should have refused it; never a traceback
        raise Refused("nested too deep") from None


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _typed(kind: Any, value: Any) -> Any:
    """A JSON value as a model field of type `kind` holds it: enums, tuples and records rebuilt;
    an object read as a tuple is its items."""
    if value is None:
        return None
    if isinstance(kind, types.UnionType):  # `X | None`
        return _typed(next(k for k in typing.get_args(kind) if k is not types.NoneType), value)
    if typing.get_origin(kind) is tuple:
        args = typing.get_args(kind)
        items = value.items() if isinstance(value, dict) else value
        if args[-1] is Ellipsis:
            return tuple(_typed(args[0], v) for v in items)
        return tuple(_typed(k, v) for k, v in zip(args, items, strict=True))  # a pair: (str, Cause)
    if dataclasses.is_dataclass(kind):
        return record(kind, value)
    return kind(value) if isinstance(kind, type) and issubclass(kind, enum.Enum) else value


def record(cls: type, data: dict | list) -> Any:
    """A schema-checked JSON object (or array: the fields in order) → the model record `cls`; a
    field it leaves out keeps its default, a key that is no field is not read."""
    names = [f.name for f in dataclasses.fields(cls)]
    found = dict(zip(names, data, strict=False)) if isinstance(data, list) else data
    hints = _hints(cls)
    return cls(**{name: _typed(hints[name], found[name]) for name in names if name in found})
