"""The yaml index: native_functions.yaml (read by torchgen) and derivatives.yaml.

torchgen comes from the workspace interpreter's torch wheel and runs in a
child process (onboard never imports it at start-up); the parsed entries,
with their line numbers, are cached per file content stamp as that child's JSON,
and typed once when read (``NativeEntry``, ``DerivativeEntry``).
"""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard import proc, torchenv
from onboard.errors import OnboardError
from onboard.report import Reporter
from onboard.workflows.opsource import cache

NATIVE_FUNCTIONS = "aten/src/ATen/native/native_functions.yaml"
TAGS = "aten/src/ATen/native/tags.yaml"
DERIVATIVES = "tools/autograd/derivatives.yaml"
PARSE_TIMEOUT = 300.0


def _stamp(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return "missing"
    return f"{st.st_size}:{st.st_mtime_ns}"


def op_name(entry_name: str) -> str:
    """``add_`` for ``add_.Tensor``: an entry's name without its overload (torchgen's
    ``OperatorName.name``)."""
    return entry_name.split(".", 1)[0]


@dataclass(frozen=True, slots=True)
class NativeEntry:
    """One entry of native_functions.yaml as torchgen's ``NativeFunction`` reads it
    (``children/_yaml_child.py``): ``name`` (``trunc.out``: torchgen's
    ``func.name``), ``base`` (the group: ``trunc`` for ``trunc_`` too, ``and`` for
    ``__iand__``), ``kind`` (``SchemaKind``: functional, inplace, out, ...),
    ``dispatch`` (dispatch key -> kernel function, from torchgen's backend indices)
    and ``line`` (of its ``- func:`` in the yaml)."""

    name: str
    base: str
    overload: str
    inplace: bool
    schema: str
    line: int
    kind: str
    variants: tuple[str, ...]
    structured: bool
    structured_delegate: str | None
    tags: tuple[str, ...]
    dispatch: dict[str, str]
    python_module: str | None = None

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> NativeEntry:
        """An entry as the yaml child (or onboard's cache of its answer) wrote it.
        (Positional: keyword arguments cost a third more, times ~3,000 entries a load.)"""
        return cls(
            row["name"],
            row["base"],
            row["overload"],
            row["inplace"],
            row["schema"],
            row["line"],
            row["kind"],
            tuple(row["variants"]),
            row["structured"],
            row["structured_delegate"],
            tuple(row["tags"]),
            row["dispatch"],
            row.get("python_module"),
        )


@dataclass(frozen=True, slots=True)
class DerivativeEntry:
    """One entry of derivatives.yaml: ``name`` (its ``name:`` schema), ``op`` (the
    schema's name: ``mm.out``), ``line`` and ``formulas`` (every other key as
    written; ``dispatch:`` and ``output_differentiability:`` as their Python repr)."""

    name: str
    op: str
    line: int
    formulas: dict[str, str]

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> DerivativeEntry:
        return cls(row["name"], row["op"], row["line"], row["formulas"])


@dataclass
class YamlIndex:
    functions: list[NativeEntry]
    derivatives: list[DerivativeEntry]
    warm: bool = False
    by_name: dict[str, NativeEntry] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_name = {f.name: f for f in self.functions}

    @classmethod
    def from_json(cls, data: dict[str, Any], *, warm: bool) -> YamlIndex:
        """The index of the yaml child's answer: each entry typed once, here."""
        return cls(
            [NativeEntry.from_json(f) for f in data["functions"]],
            [DerivativeEntry.from_json(d) for d in data["derivatives"]],
            warm=warm,
        )

    @property
    def names(self) -> list[str]:
        return list(self.by_name)

    def group(self, base: str) -> list[NativeEntry]:
        """Every entry of one op: its overloads, inplace and out variants (yaml order)."""
        return [f for f in self.functions if f.base == base]

    def base_of(self, name: str) -> str:
        """The group of ``name`` (``trunc`` for ``trunc_`` and ``trunc.out``, ``and``
        for ``__iand__``)."""
        entry = self.by_name.get(name)
        if entry is not None:
            return entry.base
        base = op_name(name)
        named = next((f for f in self.functions if op_name(f.name) == base), None)
        if named is not None:
            return named.base
        if self.group(base):
            return base
        stripped = base.rstrip("_")
        return stripped if self.group(stripped) else base

    def named(self, name: str) -> list[NativeEntry]:
        """The entries an op name without overload stands for: its every overload
        (``add_``: ``add_.Tensor``, ``add_.Scalar``) and the structured entries they
        delegate to (``scatter_add_``: ``scatter_add.out``), in yaml order."""
        group = self.group(self.base_of(name))
        exact = [f for f in group if op_name(f.name) == name]
        wanted = {f.name for f in exact} | {f.structured_delegate for f in exact}
        return [f for f in group if f.name in wanted]

    def derivatives_for(self, names: set[str]) -> list[DerivativeEntry]:
        """derivatives.yaml entries whose `name:` schema is one of ``names`` (`trunc`, `mm.out`)."""
        return [d for d in self.derivatives if d.op in names]

    def suggest(self, query: str, n: int = 5) -> list[str]:
        bases = sorted({f.base for f in self.functions})
        found = difflib.get_close_matches(query, bases, n=n, cutoff=0.6)
        found += [
            name
            for name in difflib.get_close_matches(query, self.names, n=n, cutoff=0.6)
            if name not in found
        ]
        if not found:
            found = [b for b in bases if query and (query in b or b in query)][:n]
        return found[:n]


# What NativeEntry and DerivativeEntry read of each entry (_yaml_child.py writes more).
SHAPE = {
    "functions": [
        {
            "name": str,
            "base": str,
            "overload": str,
            "inplace": bool,
            "schema": str,
            "line": int,
            "kind": str,
            "variants": [str],
            "structured": bool,
            "structured_delegate": (str, None),
            "tags": [str],
            "dispatch": {str: str},
            "python_module?": (str, None),
        }
    ],
    "derivatives": [{"name": str, "op": str, "line": int, "formulas": {str: str}}],
}


def load(checkout: Path, python: str, reporter: Reporter, *, refresh: bool = False) -> YamlIndex:
    native = checkout / NATIVE_FUNCTIONS
    if not native.is_file():
        raise OnboardError(
            f"{native} is missing, so the op registry cannot be read.",
            next_step="Point --workspace at a workspace made by `onboard setup` (its checkout "
            "holds aten/src/ATen/native/native_functions.yaml), or run `onboard setup DIR` again.",
        )
    tags = checkout / TAGS
    derivatives = checkout / DERIVATIVES
    name = "yaml-" + cache.key(native.resolve(), _stamp(native), _stamp(tags), _stamp(derivatives))
    data = None if refresh else cache.load(name + ".json", SHAPE)
    if data is not None:
        return YamlIndex.from_json(data, warm=True)
    reporter.step(f"Reading {NATIVE_FUNCTIONS} with torchgen (once per commit)")
    data = _parse(python, native, tags, derivatives)
    cache.store(name + ".json", data)
    return YamlIndex.from_json(data, warm=False)


def _parse(python: str, native: Path, tags: Path, derivatives: Path) -> dict[str, Any]:
    errors: list[str] = []
    for exe in dict.fromkeys([python, sys.executable]):
        try:
            asked = proc.ask_child(
                exe, "_yaml_child.py", str(native), str(tags), str(derivatives),
                **torchenv.isolated(), timeout=PARSE_TIMEOUT,
                what="Parsing native_functions.yaml with torchgen",
            )  # fmt: skip
        except proc.NoAnswer as exc:
            errors.append(f"{exe}: {(exc.stderr.strip().splitlines() or ['no output'])[-1]}")
            continue
        data: dict[str, Any] = asked.data
        return data
    raise OnboardError(
        "torchgen could not read native_functions.yaml (" + "; ".join(errors) + ").",
        next_step="torchgen ships with torch but needs PyYAML: run `"
        f"{python} -m pip install pyyaml`, then run the command again.",
    )
