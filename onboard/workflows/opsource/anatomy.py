"""What `onboard where` answers about one op, as result objects: the Python entry
points, the yaml entries, the live dispatch table, the kernels, the derivative and
the OpInfo entry, each place as a ``SourceLoc``. The same objects feed the view
(``onboard/views/where.py``), the JSON and the tests (and `trace` / `graph`, which
reuse the locations).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onboard.workflows.opsource.paths import SourceLoc


@dataclass(frozen=True)
class EntryPoint:
    name: str  # torch.nn.functional.linear
    kind: str  # builtin_function_or_method / function / method_descriptor
    source: SourceLoc | None  # the Python definition, when it is Python
    binding: str | None  # the generated C++ binding for builtins
    top_ops: tuple[str, ...]  # aten ops the call enters first (profiler)
    dispatched: tuple[str, ...]  # ops that reached the backend (TorchDispatchMode)
    call_error: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "source": self.source.to_json() if self.source else None,
            "binding": self.binding,
            "reaches": list(self.top_ops),
            "dispatched": list(self.dispatched),
            "call_error": self.call_error,
        }


@dataclass(frozen=True)
class YamlEntry:
    name: str  # trunc.out
    schema: str
    kind: str  # functional / inplace / out / mutable / scratch
    location: SourceLoc
    variants: tuple[str, ...]
    structured: bool
    structured_delegate: str | None
    dispatch: dict[str, str]
    tags: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "schema": self.schema,
            "kind": self.kind,
            "location": self.location.to_json(),
            "variants": list(self.variants),
            "structured": self.structured,
            "structured_delegate": self.structured_delegate,
            "dispatch": self.dispatch,
            "tags": list(self.tags),
        }


@dataclass(frozen=True)
class Registration:
    op: str  # aten::trunc
    key: str  # CPU
    location: SourceLoc  # where the kernel is written (a Python kernel: its function)
    alias: bool
    inactive: bool
    # A kernel registered from Python: the torch.library.Library(...) line the binary
    # names, the implementing function's dotted name and the registry it came from.
    registered_at: SourceLoc | None = None
    implementation: str | None = None
    via: str | None = None
    shadowed_by: str | None = None  # an inactive kernel: what runs instead

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "key": self.key,
            "alias": self.alias,
            "inactive": self.inactive,
            "location": self.location.to_json(),
            "registered_at": self.registered_at.to_json() if self.registered_at else None,
            "implementation": self.implementation,
            "via": self.via,
            "shadowed_by": self.shadowed_by,
        }


@dataclass(frozen=True)
class KernelSite:
    role: str  # meta / impl / kernel / stub_declare / stub_define / stub_register / stub_kernel
    name: str
    location: SourceLoc
    keys: tuple[str, ...] = ()  # the dispatch keys that name this kernel
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "name": self.name,
            "keys": list(self.keys),
            "detail": self.detail,
            "location": self.location.to_json(),
        }


@dataclass(frozen=True)
class Derivative:
    name: str
    location: SourceLoc
    formulas: dict[str, str]
    # derivatives.yaml's `output_differentiability:` (which outputs have a gradient)
    output_differentiability: list[bool] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "location": self.location.to_json(),
            "formulas": self.formulas,
            "output_differentiability": self.output_differentiability,
        }


@dataclass
class WhereResult:
    query: str
    op: str  # the aten op the query names, without overload (trunc, trunc_, mm for mm.out)
    commit: str | None
    checkout: str
    checkout_kind: str
    entry_points: list[EntryPoint] = field(default_factory=list)
    yaml_entries: list[YamlEntry] = field(default_factory=list)
    dispatch: list[Registration] = field(default_factory=list)
    kernels: list[KernelSite] = field(default_factory=list)
    kernels_not_found: dict[str, list[str]] = field(default_factory=dict)  # kernel -> keys
    derivatives: list[Derivative] = field(default_factory=list)
    opinfo: list[SourceLoc] = field(default_factory=list)
    decomposes_to: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    limitations: list[str] = field(default_factory=list)
    generated_dir: str | None = None
    warm: dict[str, bool] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """0: an op that cannot be found is bad input (an error, exit 2)."""
        return 0

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "query": self.query,
            "op": self.op,
            "commit": self.commit,
            "checkout": self.checkout,
            "checkout_kind": self.checkout_kind,
            "entry_points": [e.to_json() for e in self.entry_points],
            "yaml": [e.to_json() for e in self.yaml_entries],
            "dispatch_table": [r.to_json() for r in self.dispatch],
            "kernels": [k.to_json() for k in self.kernels],
            "kernels_not_found": self.kernels_not_found,
            "derivatives": [d.to_json() for d in self.derivatives],
            "opinfo": [o.to_json() for o in self.opinfo],
            "decomposes_to": self.decomposes_to,
            "generated_dir": self.generated_dir,
            "notes": self.notes,
            "limitations": self.limitations,
            "cache_warm": self.warm,
        }
