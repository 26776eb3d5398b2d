"""Which kernels ran for one op call: the dispatcher's walk, replayed.

The live binary gives, per op, the computed dispatch table
(``torch._C._dispatch_dump_table``: every runtime key, the kernel it runs and
where that kernel was registered, ``fallthrough`` for keys the dispatcher
skips) and, per device, the key set of its tensors. The dispatcher runs the
kernel of the highest-priority key in the call's key set whose kernel is not
a fallthrough (aten/src/ATen/core/dispatch/DispatchKeyExtractor.h); an
autograd or ADInplaceOrView kernel redispatches below itself and runs what it
calls with those keys excluded (``at::AutoDispatchBelowADInplaceOrView``), a
BackendSelect kernel redispatches to the backend of the tensor it makes, and
a backend or CompositeImplicitAutograd ("math") kernel does the work itself.
Only the thread-local state that these kernels set is modelled: modes,
autocast, ``inference_mode`` and tensor subclasses are not, and the output
says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ENTRY = re.compile(
    r"^(?P<key>\w+): (?P<fall>fallthrough )?registered "
    r"(?:at (?P<path>\S+?):(?P<line>\d+)|in [^\[]*?)\s*\[(?P<kind>[^\]]+)\]\s*$"
)
# Keys whose kernels do the work (or compose other ops) instead of passing the call on.
_MATH = "math kernel"


@dataclass(frozen=True)
class TableEntry:
    key: str  # a runtime key: CPU, AutogradCPU, BackendSelect
    kind: str  # kernel / autograd kernel / math kernel / default backend kernel / backend fallback
    path: str | None
    line: int | None
    fallthrough: bool


@dataclass(frozen=True)
class Kernel:
    """One kernel the call ran, in the order it ran."""

    key: str
    kind: str
    path: str | None
    line: int | None

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "kind": self.kind, "path": self.path, "line": self.line}


def parse_table(text: str | None) -> dict[str, TableEntry]:
    table: dict[str, TableEntry] = {}
    for raw in (text or "").splitlines():
        mo = _ENTRY.match(raw.strip())
        if not mo:
            continue
        table[mo.group("key")] = TableEntry(
            key=mo.group("key"),
            kind=mo.group("kind"),
            path=mo.group("path"),
            line=int(mo.group("line")) if mo.group("line") else None,
            fallthrough=bool(mo.group("fall")),
        )
    return table


def is_autograd_key(key: str) -> bool:
    return key.startswith("Autograd") or key == "ADInplaceOrView"


@dataclass(frozen=True)
class Walk:
    kernels: tuple[Kernel, ...]
    excluded_below: frozenset[str]  # what the ops this call makes run without


def walk(
    table: dict[str, TableEntry],
    keys: list[str],
    excluded: frozenset[str],
    *,
    backends: frozenset[str],
    made_on: str,
) -> Walk:
    """The kernels one call ran, given its key set (highest priority first).

    ``backends`` are the backend keys (CPU, CUDA, Meta); ``made_on`` is the
    backend key of the tensor a factory call made (where BackendSelect sends it).
    """
    ran: list[Kernel] = []
    below = set(excluded)
    remaining = [k for k in keys if k not in excluded]
    while remaining:
        key = remaining.pop(0)
        entry = table.get(key)
        if entry is None or entry.fallthrough:
            continue
        ran.append(Kernel(key, entry.kind, entry.path, entry.line))
        if key in backends or entry.kind == _MATH:
            break  # the work happens here; what it calls dispatches anew
        if is_autograd_key(key):
            # VariableType and ADInplaceOrView kernels call below themselves with
            # every autograd key (and ADInplaceOrView) excluded.
            below.update(k for k in keys if is_autograd_key(k))
            if key != "ADInplaceOrView":
                remaining = [k for k in remaining if not k.startswith("Autograd")]
        elif key == "BackendSelect":
            remaining = [made_on]
    return Walk(tuple(ran), frozenset(below))
