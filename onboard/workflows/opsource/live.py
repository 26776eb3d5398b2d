"""Live facts from the installed binary, asked of ONE child interpreter.

The child (``_live_child.py``, run as ``python -c``) imports torch, resolves the
Python entry points (``inspect.getsourcefile``), records which aten ops a
call reaches on meta tensors (the profiler's top-level op, and the ops a
TorchDispatchMode sees after decomposition), and returns
``torch._C._dispatch_dump`` for each op. The answer is cached per
interpreter, torch version and question: the binary does not change under a
workspace, and importing torch costs seconds.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onboard import proc, torchenv
from onboard.errors import OnboardError
from onboard.report import Reporter
from onboard.workflows.opsource import cache

_MARKER = "@@ONBOARD-LIVE@@"
_CHILD = Path(__file__).with_name("_live_child.py")
LIVE_TIMEOUT = 240.0
# The shape of the child's answer: part of the cache key, so a cached answer of an
# older child (without python_kernels) is asked again.
ANSWER_FORMAT = 2
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


# What _live_child.py answers, as where reads it (the per-entry keys beyond
# `exists` come only for names that exist; the recorded ones only with `record`).
SHAPE = {
    "torch_version": str,
    "entries": [
        {
            "query": str,
            "name": str,
            "exists": bool,
            "kind?": str,
            "module?": (str, None),
            "source?": ({"path": str, "line": int}, None),
            "callable?": bool,
            "top_ops?": [str],
            "dispatched?": [str],
            "call_error?": (str, None),
        }
    ],
    "dumps": {str: (str, None)},
}


def ask(
    python: str,
    *,
    entries: list[str],
    ops: list[str],
    record: bool,
    cache_id: str,
    group_overloads: bool = False,
    reporter: Reporter,
    refresh: bool = False,
) -> dict[str, Any]:
    request = {
        "entries": entries,
        "ops": ops,
        "record": record,
        "group_overloads": group_overloads,
        "format": ANSWER_FORMAT,
    }
    text = json.dumps(request, sort_keys=True)
    name = "live-" + cache.key(python, cache_id, text) + ".json"
    data = None if refresh else cache.load(name, SHAPE)
    if data is not None:
        return data
    reporter.step(f"Asking the installed torch ({python}) for its dispatch table")
    code = _CHILD.read_text(encoding="utf-8")
    try:
        result = proc.run(
            [python, "-c", code, text],
            **torchenv.isolated(),
            timeout=LIVE_TIMEOUT,
            check=False,
            what="Asking the installed torch",
        )
    except OnboardError as exc:
        raise OnboardError(
            f"Could not run the Python interpreter {python!r}: {exc.message}",
            next_step="Pass --python with the interpreter whose torch you use.",
        ) from exc
    for line in result.stdout.splitlines():
        if line.startswith(_MARKER):
            data = json.loads(line[len(_MARKER) :])
            assert data is not None
            cache.store(name, data)
            return data
    tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
    raise OnboardError(
        f"The interpreter {python} could not answer onboard's torch questions "
        f"(exit {result.returncode}): {tail}",
        next_step=f"Check that `{python} -c 'import torch'` works, or pass --python with the "
        "interpreter whose torch you use; `onboard doctor` shows what is wrong.",
    )
