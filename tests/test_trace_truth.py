"""`onboard trace` against what torch itself says ran, call by call.

For each program, three runs in separate interpreters:
- the trace (`trace()`, as `onboard trace --json` gives it);
- the dispatch oracle (fixtures/dispatch_truth.py): a Python fallback above every
  dispatch key logs each call's real key set, and Python kernels wrapped around
  each op's kernels log every kernel that ran, so a kernel that does not
  redispatch, a guard and an Undefined-key call all show as they happened;
- the profiler alone, whose memory events give every allocation.

The calls are matched by op and the ops above them (folded loops make the
order of the trace's JSON coarser than the oracle's), and every call the oracle
saw must be in the trace with the same kernels.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onboard.jsonable import to_json
from onboard.workflows.trace.profile import TraceRequest, trace

PY = sys.executable
ORACLE = Path(__file__).resolve().parent / "fixtures" / "dispatch_truth.py"
_OP = re.compile(r"^\w+::\w+(\.\w+)?$")

# Lines above "# observe from here" build nn.Modules, which the oracle cannot watch
# (see dispatch_truth.py); the trace sees them, and the oracle's calls must be among its.
PROGRAMS = {
    "factories_and_guards": """\
import torch
a = torch.zeros(3, 4)
b = torch.tensor([1.0, 2.0])
c = torch.randn(3, requires_grad=True)
d = (c * 2).sum()
d.backward()
e = torch.empty(3).zero_()
f = c.detach()
f.detach_()
g = torch.ones(2) + 1.5
torch.backends.nnpack.is_available()
with torch.no_grad():
    h = torch.full((2,), 3.0)
    c -= 0.1 * c.grad
with torch.inference_mode():
    i = torch.ones(2) * 2
j = i + 1
""",
    "custom_function_conv_no_grad": """\
import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad

conv = torch.nn.Conv2d(1, 2, 3)
# observe from here
a = torch.randn(3, requires_grad=True)
b = Square.apply(a).sum()
b.backward()
img = torch.randn(1, 1, 5, 5)
feat = conv(img)
feat.sum().backward()
with torch.no_grad():
    k = torch.tensor([1.0, 2.0])
    e = torch.empty(2).fill_(1.0)
    n = torch.randn(2)
with torch.inference_mode():
    inf = torch.ones(3) * 3
after = inf + 1
""",
    # x * 2 inside the Function's forward wraps the Python number into a tensor: an
    # allocation in a torch call inside the Function's own profiler range, no op's child
    "custom_function_python_number": """\
import torch

class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2

x = torch.randn(3, requires_grad=True)
y = Double.apply(x)
y.sum().backward()
""",
    "tensors_from_data": """\
import torch

x = torch.ones(3)
a = torch.as_tensor([1.0, 2.0])
b = x.new_tensor([1.0, 2.0])
c = torch.asarray([1.0, 2.0])
with torch.no_grad():
    d = torch.tensor([[1, 2], [3, 4]])
    e = x.new_tensor([3.0])
    f = torch.ones_like(x) * 2
    g = torch.arange(4).float()
    x.mul_(2)
h = torch.linspace(0, 1, 5)
i = torch.eye(2) @ torch.eye(2)
""",
    "training_loop": """\
import torch
import torch.nn.functional as F

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
x = torch.randn(5, 4)
# observe from here
opt = torch.optim.SGD(model.parameters(), lr=0.1)
target = torch.tensor([0, 1, 0, 1, 1])
for _ in range(2):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), target)
    loss.backward()
    opt.step()
with torch.no_grad():
    pred = model(x).argmax(dim=1)
    acc = (pred == target).float().mean().item()
""",
    "views_and_in_place": """\
import torch

x = torch.arange(12.0).reshape(3, 4)
v = x[1:]
t = x.t()
x.add_(1)
y = x.clone()
y.copy_(x)
z = torch.cat([x, y])
s = torch.stack([x, y]).sum(0)
m = torch.where(x > 3, x, torch.zeros_like(x))
w = torch.rand(4, 4, requires_grad=True)
out = (x @ w).softmax(-1)
out.mean().backward()
q = w.detach().numpy().sum()
r = torch.tensor(3.5).item()
u = x.to(torch.float64).float()
""",
    "autocast": """\
import torch

with torch.autocast("cpu", dtype=torch.bfloat16):
    a = torch.randn(4, 4)
    b = torch.mm(a, a)
c = b.float() + 1
""",
    "adam_double_backward_init": """\
import torch
import torch.nn.functional as F

torch.manual_seed(0)
emb = torch.nn.Embedding(10, 4)
norm = torch.nn.LayerNorm(4)
# observe from here
opt = torch.optim.Adam(list(emb.parameters()) + list(norm.parameters()), lr=0.01)
ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
h = F.dropout(norm(emb(ids)), p=0.1, training=True)
loss = h.pow(2).mean()
(g,) = torch.autograd.grad(loss, emb.weight, create_graph=True)
g.norm().backward()
opt.step()
opt.zero_grad(set_to_none=True)
w = torch.empty(3, 3)
torch.nn.init.kaiming_uniform_(w)
torch.nn.init.zeros_(w)
""",
}
# The quick ones run in the fast suite; all of them with the slow tests.
FAST = (
    "factories_and_guards",
    "custom_function_conv_no_grad",
    "custom_function_python_number",
    "tensors_from_data",
)
CASES = [pytest.param(name, marks=() if name in FAST else pytest.mark.slow) for name in PROGRAMS]

_MEMORY = """\
import json, sys
import torch
from torch.profiler import ProfilerActivity, profile

path = sys.argv[1]
with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
    exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__"})
sizes = [
    e.nbytes()
    for e in prof.profiler.kineto_results.events()
    if e.name() == "[memory]" and e.nbytes() > 0
]
print(json.dumps([len(sizes), sum(sizes)]))
"""


def _calls(nodes: list[dict[str, Any]], above: tuple[str, ...], out: Counter[Any]) -> Counter[Any]:
    """The trace's op calls as (op, ops above it, kernels that ran) -> how many. A folded
    node's count covers all the calls it stands for; its children's counts too."""
    for node in nodes:
        is_op = node["kind"] == "op" and bool(_OP.match(node["label"]))
        if is_op:
            kernels = tuple(k["key"] for k in node["kernels"])
            out[(node["label"], above, kernels)] += node["count"]
        _calls(node["children"], (*above, node["label"]) if is_op else above, out)
    return out


def _truth(script: Path, tmp_path: Path) -> Counter[Any]:
    answer = tmp_path / "truth.json"
    subprocess.run([PY, str(ORACLE), str(script), str(answer)], check=True, timeout=300)
    return Counter(
        (r["op"], tuple(r["above"]), tuple(r["ran"]))
        for r in json.loads(answer.read_text())
        # the profiler's own ops (record_function's enter/exit) are not in its tree
        if not r["op"].startswith("profiler::")
    )


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[Path, Any]]:
    """name -> (the program's script, its trace as --json gives it); each traced once."""
    folder = tmp_path_factory.mktemp("programs")
    done: dict[str, tuple[Path, Any]] = {}

    def get(name: str) -> tuple[Path, Any]:
        if name not in done:
            script = folder / f"{name}.py"
            script.write_text(PROGRAMS[name])
            done[name] = (script, to_json(trace(TraceRequest(command=[PY, str(script)]))))
        return done[name]

    return get


@pytest.mark.parametrize("name", CASES)
def test_kernels_that_ran_are_the_ones_torch_ran(
    name: str, tmp_path: Path, traced: Callable[[str], tuple[Path, Any]]
) -> None:
    script, data = traced(name)
    truth = _truth(script, tmp_path)
    mine = _calls(data["tree"], (), Counter())

    def ops(calls: Counter[Any]) -> Counter[Any]:
        found: Counter[Any] = Counter()
        for (op, above, _keys), n in calls.items():
            found[(op, above)] += n
        return found

    assert not ops(truth) - ops(mine), "calls torch made that the trace lacks"
    wrong = truth - mine
    right = sum(truth.values()) - sum(wrong.values())
    print(f"{name}: kernels right for {right}/{sum(truth.values())} calls")
    assert not wrong, {
        (op, above[-1:] if above else ()): (
            keys,
            [k for (o, a, k) in mine if o == op and a == above],
        )
        for (op, above, keys) in wrong
    }


@pytest.mark.parametrize("name", CASES)
def test_memory_totals_are_the_profilers(
    name: str, traced: Callable[[str], tuple[Path, Any]]
) -> None:
    script, data = traced(name)
    done = subprocess.run(
        [PY, "-c", _MEMORY, str(script)], capture_output=True, text=True, check=True, timeout=300
    )
    count, total = json.loads(done.stdout.strip().splitlines()[-1])
    memory = data["memory"]
    assert [(m["device"], m["allocations"], m["bytes"]) for m in memory] == [("cpu", count, total)]
