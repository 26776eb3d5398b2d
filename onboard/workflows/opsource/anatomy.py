"""What `onboard where` answers about one op, as result objects: the Python entry
points, the yaml entries, the live dispatch table, the kernels, the derivative and
the OpInfo entry, each place as a ``SourceLoc``. The same objects feed the view
(``onboard/views/where.py``), the JSON and the tests (and `trace` / `graph`, which
reuse the locations).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onboard.jsonable import spec
from onboard.workflows.opsource.paths import SourceLoc


@dataclass(frozen=True)
class EntryPoint:
    name: str  # torch.nn.functional.linear
    kind: str  # builtin_function_or_method / function / method_descriptor
    source: SourceLoc | None  # the Python definition, when it is Python
    binding: str | None  # the generated C++ binding for builtins
    # aten ops the call enters first (profiler)
    top_ops: tuple[str, ...] = field(metadata=spec(key="reaches"))
    dispatched: tuple[str, ...]  # ops that reached the backend (TorchDispatchMode)
    call_error: str | None


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


@dataclass(frozen=True)
class KernelSite:
    role: str  # meta / impl / kernel / stub_declare / stub_define / stub_register / stub_kernel
    name: str
    location: SourceLoc
    keys: tuple[str, ...] = ()  # the dispatch keys that name this kernel
    detail: str = ""


@dataclass(frozen=True)
class Derivative:
    name: str
    location: SourceLoc
    formulas: dict[str, str]
    # derivatives.yaml's `output_differentiability:` (which outputs have a gradient)
    output_differentiability: list[bool] | None = None


@dataclass
class WhereResult:
    query: str
    op: str  # the aten op the query names, without overload (trunc, trunc_, mm for mm.out)
    commit: str | None
    checkout: str
    checkout_kind: str
    entry_points: list[EntryPoint] = field(default_factory=list)
    yaml_entries: list[YamlEntry] = field(default_factory=list, metadata=spec(key="yaml"))
    dispatch: list[Registration] = field(default_factory=list, metadata=spec(key="dispatch_table"))
    kernels: list[KernelSite] = field(default_factory=list)
    kernels_not_found: dict[str, list[str]] = field(default_factory=dict)  # kernel -> keys
    derivatives: list[Derivative] = field(default_factory=list)
    opinfo: list[SourceLoc] = field(default_factory=list)
    decomposes_to: list[str] = field(default_factory=list)
    generated_dir: str | None = None
    notes: list[str] = field(default_factory=list)
    limitations: list[str] = field(default_factory=list)
    warm: dict[str, bool] = field(default_factory=dict, metadata=spec(key="cache_warm"))

    @property
    def exit_code(self) -> int:
        """0: an op that cannot be found is bad input (an error, exit 2)."""
        return 0

    def json_extra(self) -> dict[str, Any]:
        return {"ok": True}
