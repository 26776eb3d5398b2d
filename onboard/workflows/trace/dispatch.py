"""Which kernels ran for one op call: the dispatcher's walk, replayed.

The live binary gives, per op, the computed dispatch table
(``torch._C._dispatch_dump_table``: every runtime key, the kernel it runs and
where that kernel was registered, ``fallthrough`` for keys the dispatcher
skips); the child gives each call's key set (its tensors' keys and the
thread's included and excluded keys at the Python call), and ``guards`` what
C++ excluded below that. The dispatcher runs the kernel of the
highest-priority key in the call's key set whose kernel is not a fallthrough
(aten/src/ATen/core/dispatch/DispatchKeyExtractor.h), or the op's
``Undefined`` entry when no key is left (an op without tensor arguments). An
autograd or ADInplaceOrView kernel redispatches below itself and runs what it
calls with those keys excluded (``at::AutoDispatchBelowADInplaceOrView``; a
hand-written autograd kernel may guard less or not redispatch at all: the
child asks each one), a BackendSelect kernel redispatches to the backend of
the tensor it makes, an Autocast kernel calls the op anew with its key
excluded (aten/src/ATen/autocast_mode.h), and a backend or
CompositeImplicitAutograd ("math") kernel does the work itself.
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


# Excluded keys are named as the child names runtime keys, except for autograd, which a
# guard excludes for every backend at once (the AutogradFunctionality bit): AUTOGRAD
# stands for all of AutogradCPU, AutogradCUDA, AutogradOther...
AUTOGRAD = "Autograd"
BELOW_AUTOGRAD = frozenset({AUTOGRAD, "ADInplaceOrView"})


def is_excluded(key: str, excluded: frozenset[str]) -> bool:
    return key in excluded or (AUTOGRAD in excluded and key.startswith("Autograd"))


@dataclass(frozen=True)
class AutogradKernel:
    """What a hand-written autograd kernel was seen to do when the child called it."""

    redispatches: bool
    excludes_inplace_or_view: bool


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
    autograd: AutogradKernel | None = None,
) -> Walk:
    """The kernels one call ran, given its key set (highest priority first) and the keys
    it had excluded.

    ``backends`` are the backend keys (CPU, CUDA, Meta); ``made_on`` is the backend key
    of the tensor a factory call made (where BackendSelect sends it); ``autograd`` what
    the op's autograd kernel does when it is not one torchgen wrote (None: as generated).
    """
    ran: list[Kernel] = []
    below = set(excluded)
    remaining = [k for k in keys if not is_excluded(k, excluded)]
    while remaining:
        key = remaining.pop(0)
        entry = table.get(key)
        if entry is None or entry.fallthrough:
            continue
        ran.append(Kernel(key, entry.kind, entry.path, entry.line))
        if key in backends or entry.kind == _MATH:
            break  # the work happens here; what it calls dispatches anew
        if key.startswith("Autocast"):
            below.add(key)  # it calls the op again, in the cast dtype, without itself
            break
        if key.startswith("Autograd"):
            if entry.kind == "autograd kernel" and autograd is not None:
                if not autograd.redispatches:
                    break
                below.add(AUTOGRAD)
                if autograd.excludes_inplace_or_view:
                    below.add("ADInplaceOrView")
            else:
                below.update(BELOW_AUTOGRAD)
            remaining = [k for k in remaining if not k.startswith("Autograd")]
        elif key == "ADInplaceOrView":
            below.update(BELOW_AUTOGRAD)
        elif key == "BackendSelect":
            remaining = [made_on]
    if not ran and "Undefined" in table and not table["Undefined"].fallthrough:
        entry = table["Undefined"]
        ran.append(Kernel("Undefined", entry.kind, entry.path, entry.line))
    return Walk(tuple(ran), frozenset(below))
