"""The installed torch's OpInfo database, as an index from ATen op to OpInfo entry.

`op_db` (torch/testing/_internal/common_methods_invocations.py) is read once per
interpreter and torch version in a child process (``children/_opdb_child.py``:
importing it takes seconds and needs numpy and expecttest), and cached like the yaml
index (``opsource.cache``). An entry is found by its ``aten_name`` (``gelu`` for
``nn.functional.gelu``), its name with dots as underscores (``linalg.norm`` is
``linalg_norm`` in native_functions.yaml) and its aliases (``fix`` for trunc).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from onboard import proc, torchenv
from onboard.report import Reporter
from onboard.workflows.opsource import cache

READ_TIMEOUT = 300.0
SHAPE = {
    "entries": [
        {
            "name": str,
            "variant": str,
            "aten_name": str,
            "kind": str,
            "aliases": [str],
            "autograd": bool,
            "forward_ad": bool,
            "lists": [str],
        }
    ]
}


@dataclass(frozen=True, slots=True)
class OpInfoEntry:
    """One OpInfo: ``name`` ("nn.functional.gelu"), ``variant`` (its
    variant_test_name), ``kind`` (UnaryUfuncInfo ...), and ``lists``: the lists of
    common_methods_invocations it is in besides op_db (unary_ufuncs, ...)."""

    name: str
    variant: str
    aten_name: str
    kind: str
    aliases: tuple[str, ...]
    autograd: bool
    forward_ad: bool
    lists: tuple[str, ...]

    @property
    def test_name(self) -> str:
        """How the OpInfo tests spell it in their names (``formatted_name``:
        test_dtypes_nn_functional_gelu_cpu_float32), what ``-k`` matches."""
        base = self.name.replace(".", "_")
        return f"{base}_{self.variant.replace('.', '_')}" if self.variant else base


@dataclass
class OpInfoIndex:
    entries: list[OpInfoEntry]
    error: str = ""  # why op_db could not be read (then ``entries`` is empty)
    warm: bool = False
    _by_aten: dict[str, list[OpInfoEntry]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for entry in self.entries:
            keys = {_norm(entry.aten_name), _norm(entry.name), *map(_norm, entry.aliases)}
            for key in keys:
                if key:
                    self._by_aten.setdefault(key, []).append(entry)

    @property
    def readable(self) -> bool:
        return not self.error

    def for_op(self, base: str) -> list[OpInfoEntry]:
        """The OpInfo entries that test the ATen op group ``base`` (``trunc``)."""
        return list(self._by_aten.get(_norm(base), ()))

    def named(self, name: str) -> list[OpInfoEntry]:
        """Entries by OpInfo name (``nn.functional.gelu``) or by the op they test."""
        exact = [e for e in self.entries if e.name == name]
        return exact or self.for_op(name)


def _norm(name: str) -> str:
    return name.replace(".", "_").rstrip("_")


def load(python: str, torch_version: str, reporter: Reporter) -> OpInfoIndex:
    """The OpInfo index of ``python``'s torch (cached per interpreter and version)."""
    real = os.path.realpath(python)
    try:
        stamp = os.stat(real).st_mtime_ns
    except OSError:
        stamp = -1
    name = "opdb-" + cache.key(real, stamp, torch_version) + ".json"
    data = cache.load(name, SHAPE)
    if data is not None:
        return _index(data, warm=True)
    reporter.step("Reading the installed torch's OpInfo database (op_db; once per torch)")
    try:
        asked = proc.ask_child(
            python, "_opdb_child.py", **torchenv.isolated(), timeout=READ_TIMEOUT,
            what="Reading torch's OpInfo database",
        )  # fmt: skip
    except proc.NoAnswer as exc:
        last = (exc.stderr.strip().splitlines() or ["no output"])[-1]
        return OpInfoIndex([], error=f"{python} could not import it ({last})")
    answer: dict[str, Any] = asked.data
    if answer.get("error"):
        return OpInfoIndex([], error=str(answer["error"]))
    cache.store(name, answer)
    return _index(answer, warm=False)


def _index(data: dict[str, Any], *, warm: bool) -> OpInfoIndex:
    return OpInfoIndex(
        [
            OpInfoEntry(
                e["name"],
                e["variant"],
                e["aten_name"],
                e["kind"],
                tuple(e["aliases"]),
                e["autograd"],
                e["forward_ad"],
                tuple(e["lists"]),
            )
            for e in data["entries"]
        ],
        warm=warm,
    )
