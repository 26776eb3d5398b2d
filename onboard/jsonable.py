"""Every `--json` answer, from the result's dataclass fields: the one serialiser.

A result is a dataclass; its JSON is its fields, in order, under their own names,
each value turned into JSON the same way (a nested dataclass by its fields, an
``Enum`` by its value, a path as text, a tuple or set as a list). A field that means
something else in JSON says so in its metadata, written with :func:`spec`::

    @dataclass
    class Frame:
        function: str
        where: Location | None = field(default=None, metadata=spec(key="source"))
        note: str = field(default="", metadata=spec(empty=None))   # "" -> null
        seconds: float = field(default=0.0, metadata=spec(digits=3))
        cache: dict = field(default_factory=dict, metadata=spec(omit=True))

A value worked out from the fields (a property, a count) joins through
``json_extra(self) -> dict``, which is added after the fields. So the JSON contract
is the dataclass itself: a new field is one line, and ``tests/test_layers.py`` checks
that no result writes a ``to_json`` of its own.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any

_KEY = "onboard.json"
_UNSET: Any = object()


@dataclasses.dataclass(frozen=True)
class _Spec:
    key: str | None = None
    omit: bool = False
    digits: int | None = None
    empty: Any = _UNSET
    convert: Callable[[Any], Any] | None = None


def spec(
    *,
    key: str | None = None,
    omit: bool = False,
    digits: int | None = None,
    empty: Any = _UNSET,
    convert: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """Field metadata for what a field is in JSON.

    ``key``: its name there; ``omit``: left out; ``digits``: a float rounded to that
    many places; ``empty``: what an empty value ("", [], {}, None, 0 is not empty)
    becomes (usually None); ``convert``: a function of the value, for a shape the
    rules above do not give (its answer is then turned into JSON like any value).
    """
    return {_KEY: _Spec(key, omit, digits, empty, convert)}


def to_json(value: Any) -> Any:
    """``value`` as JSON-ready data: dicts, lists, strings, numbers, booleans, None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _dataclass(value)
    if isinstance(value, enum.Enum):
        return to_json(value.value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Mapping):
        return {_json_key(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [to_json(v) for v in value]
        try:
            return sorted(items)
        except TypeError:  # mixed kinds: no order to give
            return items
    return value


def _json_key(key: Any) -> Any:
    if isinstance(key, enum.Enum):
        key = key.value
    return str(key) if isinstance(key, PurePath) else key


def _dataclass(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        rule: _Spec = f.metadata.get(_KEY) or _Spec()
        if rule.omit:
            continue
        value = getattr(obj, f.name)
        if rule.empty is not _UNSET and _is_empty(value):
            out[rule.key or f.name] = rule.empty
            continue
        if rule.convert is not None and value is not None:
            value = rule.convert(value)
        if rule.digits is not None and isinstance(value, float):
            value = round(value, rule.digits)
        out[rule.key or f.name] = to_json(value)
    extra = getattr(obj, "json_extra", None)
    if callable(extra):
        out.update({k: to_json(v) for k, v in extra().items()})
    return out


def _is_empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (str, list, tuple, dict, set, frozenset)):
        return len(value) == 0
    return False
