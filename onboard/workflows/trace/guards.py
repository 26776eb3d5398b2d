"""Which dispatch keys a call had excluded: the guards C++ put around it.

The key set of a call is its tensors' keys plus the thread's included keys,
less the excluded ones (c10/core/impl/LocalDispatchKeySet.h). The child gives
the thread's sets at each outermost Python call; below that, C++ excludes
keys with guards the profiler does not record:

- ``at::AutoDispatchBelowADInplaceOrView`` (autograd keys and ADInplaceOrView)
  around every op a generated autograd kernel or an ADInplaceOrView kernel
  redispatches to or calls, around the whole of a factory called from Python
  (``torch::zeros`` and the others in the shipped
  torch/csrc/autograd/generated/variable_factories.h) and around
  ``torch.tensor(...)``'s ``empty``/``to``/``lift_fresh``
  (torch/csrc/utils/tensor_new.cpp; its final ``detach_`` runs outside it);
- ``at::AutoDispatchBelowAutograd`` (autograd keys only), used by some
  hand-written autograd kernels and factories (``from_blob``).

What the profiler does record is the autograd sequence number of each op: it
is set exactly when the call's key set held an autograd key and grad mode was
on (aten/src/ATen/core/dispatch/Dispatcher.cpp,
``sequenceNumberForRunningRecordFunction``). So with grad mode on, a missing
number on an op whose autograd kernel would otherwise have run is a guard seen,
not guessed. With grad mode off the number says nothing, and the guards above
are applied as known.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from onboard.workflows.trace.dispatch import AUTOGRAD, BELOW_AUTOGRAD, TableEntry, is_excluded

VARIABLE_FACTORIES = "torch/csrc/autograd/generated/variable_factories.h"
# `inline at::Tensor zeros(...) {`, and in its body the guard it takes
_FACTORY = re.compile(r"^inline at::Tensor (\w+)\(", re.MULTILINE)
_GUARD = re.compile(r"at::(AutoDispatchBelow\w+) guard;")
# Python APIs that build a tensor from data through torch/csrc/utils/tensor_new.cpp
FROM_DATA_APIS = frozenset(
    {"torch.tensor", "torch.as_tensor", "torch.asarray", "Tensor.new_tensor"}
)
_FROM_DATA_UNGUARDED = frozenset({"aten::detach_", "aten::detach"})


@functools.lru_cache(maxsize=4)
def factory_guards(torch_dir: str) -> dict[str, bool]:
    """Factory name -> whether its guard also excludes ADInplaceOrView, read from the
    installed ``variable_factories.h`` (empty when the header is missing)."""
    path = Path(torch_dir) / "include" / VARIABLE_FACTORIES
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    found: dict[str, bool] = {}
    starts = list(_FACTORY.finditer(text))
    for mo, after in zip(starts, [*starts[1:], None], strict=True):
        guard = _GUARD.search(text, mo.end(), after.start() if after else len(text))
        if guard is not None:
            below_inplace = guard.group(1) == "AutoDispatchBelowADInplaceOrView"
            found[mo.group(1)] = found.get(mo.group(1), False) or below_inplace
    return found


@dataclass(frozen=True)
class CallSite:
    """What is known about the Python call an op ran under."""

    api: str | None  # torch.zeros, Tensor.add (None: no Python call made it)
    grad_seen: bool  # grad mode was on, and nothing between that call and the op changes it
    top: bool  # the op was entered straight from that call (no op above it)


def first_key(
    table: dict[str, TableEntry], keys: list[str], excluded: frozenset[str]
) -> str | None:
    for key in keys:
        if is_excluded(key, excluded):
            continue
        entry = table.get(key)
        if entry is not None and not entry.fallthrough:
            return key
    return None


def excluded_at_call(
    op: str,
    table: dict[str, TableEntry],
    keys: list[str],
    excluded: frozenset[str],
    seq: int,
    site: CallSite,
    factories: dict[str, bool],
) -> tuple[frozenset[str], str]:
    """The keys this call had excluded, and how that is known: ``profiler`` (its
    sequence number), ``binding`` (a guard the Python binding is known to take),
    ``replayed`` (the kernels above it decide) or ``unconfirmed`` (its autograd kernel is
    taken to have run, but grad mode was off, so the profiler could not say)."""
    if seq >= 0:
        # an autograd key was in its key set: whatever was assumed excluded was not
        return excluded - BELOW_AUTOGRAD - {AUTOGRAD}, "profiler"
    base = op.split("::", 1)[-1].split(".", 1)[0]
    # (torch.ops.aten.zeros(...) goes to the dispatcher without the binding's guard)
    if site.top and base in factories and not (site.api or "").startswith("torch.ops."):
        # the factory's own call and everything it calls run under its guard
        return excluded | (BELOW_AUTOGRAD if factories[base] else {AUTOGRAD}), "binding"
    first = first_key(table, keys, excluded)
    if first is None or not first.startswith("Autograd"):
        return excluded, "replayed"
    if site.grad_seen:
        return excluded | BELOW_AUTOGRAD, "profiler"
    if site.top and site.api in FROM_DATA_APIS and op not in _FROM_DATA_UNGUARDED:
        return excluded | BELOW_AUTOGRAD, "binding"
    return excluded, "unconfirmed"
