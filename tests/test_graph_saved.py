"""`onboard graph`'s saved-for-backward lines after backward() and under
torch.utils.checkpoint, against torch's own SavedVariables read in a separate
interpreter."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from onboard import proc
from onboard.cli import cli

PY = sys.executable

# Each Node's `_saved_*` attributes read after the program ran: how each reads back.
_READ_SAVED = """\
import json, sys
import torch

path = sys.argv[1]
space = {"__name__": "__main__", "__file__": path}
exec(compile(open(path).read(), path, "exec"), space)
out, seen = [], set()
pending = [v.grad_fn for v in space.values() if isinstance(v, torch.Tensor) and v.grad_fn]
while pending:
    fn = pending.pop()
    if fn is None or id(fn) in seen:
        continue
    seen.add(id(fn))
    pending.extend(n for n, _ in fn.next_functions)
    for attr in dir(fn):
        if not attr.startswith("_saved_") or not hasattr(fn, "_raw" + attr):
            continue
        raw = getattr(fn, "_raw" + attr)
        hook = getattr(raw, "unpack_hook", None)
        before = space.get("calls", 0)
        try:
            value = getattr(fn, attr)
        except RuntimeError as exc:
            how = "freed" if "backward through the graph a second time" in str(exc) else "error"
        else:
            how = "tensor" if isinstance(value, torch.Tensor) else "other"
        reran = space.get("calls", 0) > before
        out.append([type(fn).__name__, attr[7:], how, hook is not None, reran])
print(json.dumps(out))
"""


def _read_saved(script: Path) -> list[list[object]]:
    done = proc.run([PY, "-c", _READ_SAVED, str(script)], timeout=300, what="the saved walk")
    return list(json.loads(done.stdout.splitlines()[-1]))


def _saved_lines(text: str) -> Counter[tuple[str, str]]:
    return Counter(re.findall(r"saved for backward: (\w+) \((.*)\)$", text, re.M))


def test_after_backward_the_text_says_the_saved_tensors_were_freed(tmp_path: Path) -> None:
    script = tmp_path / "step.py"
    script.write_text(
        "import torch\n"
        "x = torch.randn(3, requires_grad=True)\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "y = (x * w).sin().sum()\n"
        "y.backward()\n"
    )
    truth = _read_saved(script)
    freed = Counter(name for _cls, name, how, _h, _r in truth if how == "freed")
    assert freed == Counter({"self": 2, "other": 1})  # MulBackward0 self/other, SinBackward0 self
    out = CliRunner().invoke(cli, ["graph", "--", PY, str(script)])
    assert out.exit_code == 0, out.output
    shown = _saved_lines(out.stdout)
    assert shown == Counter({(n, "freed by backward()"): k for n, k in freed.items()})
    assert "backward(retain_graph=True) keeps them" in out.stdout
    data = json.loads(CliRunner().invoke(cli, ["graph", "--json", "--", PY, str(script)]).stdout)
    flagged = Counter(s["name"] for n in data["nodes"] for s in n["saved"] if s.get("freed"))
    assert flagged == freed


CHECKPOINTED = """\
import torch
from torch.utils.checkpoint import checkpoint

calls = 0


def block(x):
    global calls
    calls += 1
    with open(__file__ + ".ran", "a") as f:  # each run of the forward, where a test sees it
        f.write("forward\\n")
    return (x * x).sin()


x = torch.randn(3, requires_grad=True)
y = checkpoint(block, x, use_reentrant=False).exp()
"""


def test_checkpointed_saved_tensors_are_said_recomputed_and_not_unpacked(
    tmp_path: Path,
) -> None:
    script = tmp_path / "ckpt.py"
    script.write_text(CHECKPOINTED)
    truth = _read_saved(script)
    # torch's truth: the checkpointed Nodes' SavedVariables carry checkpoint's unpack
    # hook, and reading the first of them re-ran the program's forward
    hooked = Counter((cls, name) for cls, name, _how, hook, _r in truth if hook)
    assert hooked == Counter({("SinBackward0", "self"): 1, ("MulBackward0", "self"): 1,
                              ("MulBackward0", "other"): 1})  # fmt: skip
    assert any(reran for *_rest, reran in truth)
    kept = Counter(
        (cls, name) for cls, name, how, hook, _r in truth if how == "tensor" and not hook
    )
    assert kept == Counter({("ExpBackward0", "result"): 1})

    ran = Path(str(script) + ".ran")
    ran.unlink()
    out = CliRunner().invoke(cli, ["graph", "--", PY, str(script)])
    assert out.exit_code == 0, out.output
    assert ran.read_text() == "forward\n"  # graph ran the forward once: the program's own run
    shown = _saved_lines(out.stdout)
    recomputed = "not kept: torch.utils.checkpoint recomputes it in backward"
    assert shown == Counter(
        {(name, recomputed): k for name, k in Counter(n for _c, n in hooked.elements()).items()}
        | {("result", "3 float32"): 1}
    )
    assert "would run your forward again" in out.stdout
