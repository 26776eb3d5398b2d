"""Live facts from the installed binary, asked of ONE child interpreter.

The child (``_live_child.py``, run as ``python -c``) imports torch, resolves the
Python entry points (``inspect.getsourcefile``), records which aten ops a
call reaches on meta tensors (the profiler's top-level op, and the ops a
TorchDispatchMode sees after decomposition), and returns
``torch._C._dispatch_dump`` for each op. The answer is cached per
interpreter, torch version and question: the binary does not change under a
workspace, and importing torch costs seconds. The same child then answers
every op once, for ``live_index``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from onboard.report import Reporter
from onboard.workflows.opsource import cache
from onboard.workflows.opsource.live_index import ANSWER_SHAPE, LiveIndex, Requests

# The shape of the child's answer: part of the cache key, so a cached answer of an
# older child (without python_kernels, or without each entry's aten) is asked again.
ANSWER_FORMAT = 3
_REGISTERED = re.compile(
    r"^(?P<key>[^:]+?): (?:fallthrough )?registered at (?P<path>\S+?):(?P<line>\d+)"
    r"(?: :: (?P<signature>.*))?$"
)


@dataclass(frozen=True)
class Registration:
    """One line of ``_dispatch_dump``: a dispatch key and where its kernel was registered."""

    key: str  # CPU, Autograd[alias], Meta (inactive), schema
    path: str
    line: int
    signature: str | None
    alias: bool
    inactive: bool


def parse_dispatch_dump(text: str) -> list[Registration]:
    regs: list[Registration] = []
    for raw in text.splitlines():
        mo = _REGISTERED.match(raw.strip())
        if not mo:
            continue
        key = mo.group("key").strip()
        regs.append(
            Registration(
                key="schema" if key == "debug" else key,
                path=mo.group("path"),
                line=int(mo.group("line")),
                signature=mo.group("signature"),
                alias="[alias]" in key,
                inactive="(inactive)" in key,
            )
        )
    return regs


# What _live_child.py answers, as where reads it (kept beside the index that stores it).
SHAPE = ANSWER_SHAPE


def ask(
    python: str,
    request: dict[str, Any],
    *,
    cache_id: str,
    index: LiveIndex,
    every: Requests,
    reporter: Reporter,
    refresh: bool = False,
) -> dict[str, Any]:
    """The child's answer to one question (``_live_child.py``'s request: entries, ops,
    record, group_overloads), cached per interpreter, torch and question.

    The child is ``index``'s: after answering, it indexes every op (``every``) when
    the index needs it.
    """
    request = {**request, "format": ANSWER_FORMAT}
    text = json.dumps(request, sort_keys=True)
    name = "live-" + cache.key(python, cache_id, text) + ".json"
    data = None if refresh else cache.load(name, SHAPE)
    if data is not None:
        return data
    reporter.step(f"Asking the installed torch ({python}) for its dispatch table")
    data = index.ask(request, every)
    cache.store(name, data)
    return data
