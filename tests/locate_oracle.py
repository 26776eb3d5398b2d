"""The oracle of the `locate` sweep, run as a script by the interpreter under test
(tests/test_locate_sweep.py): OpInfo's ``error_inputs`` (``op_db`` in
torch/testing/_internal/common_methods_invocations.py), each run on CPU, with the
line that raised it as torch itself says it, never as onboard does.

    python locate_oracle.py list [SEED COUNT]   # JSON: every error (or a seeded sample)
    python locate_oracle.py run OP INDEX        # raise OP's error INDEX uncaught

Run with ``TORCH_SHOW_CPP_STACKTRACES=1``. Each error's truth: the ``Exception raised
from FUNC at PATH:LINE`` the binary appends to the message; for an error raised in
torch's Python code, the innermost frame of its traceback (past torch/__init__.py's
``_check*`` helpers, to the ``torch._check`` call) when that line is under torch/ and
is a ``raise`` or a ``_check`` call. An error with neither has no truth (``null``).
"""

from __future__ import annotations

import json
import linecache
import os
import random
import re
import sys
import traceback
import warnings
from typing import Any

import torch
from torch.testing._internal.common_methods_invocations import op_db

RAISED = re.compile(r"Exception raised from (?P<func>.+?) at (?P<path>\S+?):(?P<line>\d+)")
SITE = os.path.dirname(os.path.dirname(torch.__file__)) + os.sep
BUILD = "/__w/pytorch/pytorch/"


def name_of(op: Any) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def error_inputs(only: str | None = None) -> list[tuple[Any, int, Any]]:
    """(op, its index, error input) for every op with error_inputs (or the op named
    ``only``), in op_db's order; each op's inputs made from seed 0."""
    found = []
    for op in op_db:
        if op.error_inputs_func is None or (only is not None and name_of(op) != only):
            continue
        torch.manual_seed(0)
        try:
            found.extend((op, i, ei) for i, ei in enumerate(op.error_inputs(torch.device("cpu"))))
        except Exception:  # an error_inputs generator that fails on this build
            continue
    return found


def truth_of(exc: BaseException, said: str) -> list[Any] | None:
    mo = RAISED.search(said)
    if mo:
        path = mo.group("path")
        return [path[len(BUILD) :] if path.startswith(BUILD) else path, int(mo.group("line"))]
    frames = traceback.extract_tb(exc.__traceback__)
    init = SITE + os.path.join("torch", "__init__.py")
    while len(frames) > 1 and frames[-1].filename == init and frames[-1].name.startswith("_check"):
        frames = frames[:-1]
    last = frames[-1]
    text = linecache.getline(last.filename, last.lineno or 0).strip()
    in_torch = last.filename.startswith(SITE + "torch" + os.sep)
    if in_torch and (text.startswith("raise") or "_check" in text):
        return [last.filename[len(SITE) :], last.lineno]
    return None


def main() -> None:
    warnings.simplefilter("ignore")
    if sys.argv[1] == "run":
        op, _i, ei = error_inputs(sys.argv[2])[int(sys.argv[3])]
        s = ei.sample_input
        op(s.input, *s.args, **s.kwargs)  # raises, uncaught, as a user's program would
        return
    pairs = error_inputs()
    chosen = range(len(pairs))
    if len(sys.argv) > 3:
        chosen = sorted(random.Random(int(sys.argv[2])).sample(chosen, int(sys.argv[3])))
    out = []
    for index in chosen:
        op, i, ei = pairs[index]
        s = ei.sample_input
        try:
            op(s.input, *s.args, **s.kwargs)
        except Exception as exc:
            said = str(exc)
            mo = RAISED.search(said)
            out.append(
                {
                    "op": name_of(op),
                    "i": i,
                    "type": type(exc).__name__,
                    "message": said[: mo.start()].rstrip() if mo else said,
                    "truth": truth_of(exc, said),
                    "printed": "".join(traceback.format_exception(exc)),
                }
            )
        else:
            out.append({"op": name_of(op), "i": i, "type": None})
    print(json.dumps({"inputs": len(pairs), "errors": out}))


if __name__ == "__main__":
    main()
