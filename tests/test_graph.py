"""`onboard graph`: the autograd graph of a real program, tied to derivatives.yaml."""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from opsource_helpers import cache_fixture, shared_cache_fixture  # noqa: F401 (pytest fixtures)

from onboard import proc
from onboard.cli import cli
from onboard.crash import run_cli
from onboard.errors import BadInput, OnboardError
from onboard.workflows.opsource.native_yaml import DerivativeEntry
from onboard.workflows.trace import backward_nodes
from onboard.workflows.trace.autograd_graph import GraphRequest, graph

PY = sys.executable
STEP = """\
import torch
x = torch.randn(3, requires_grad=True)
w = torch.randn(3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
y = x * w + b
"""
NEEDS_DOT = pytest.mark.skipif(
    proc.which("dot") is None,
    reason="Graphviz's `dot` is not on PATH (Debian/Ubuntu: apt-get install graphviz)",
)


def test_backward_names_follow_torchgen() -> None:
    entries = backward_nodes.index(
        [
            DerivativeEntry(
                name="mul.Tensor(Tensor self, Tensor other) -> Tensor",
                op="mul.Tensor",
                line=10,
                formulas={"self": "grad * other", "other": "grad * self", "result": "x"},
            ),
            DerivativeEntry(
                name="mul.Scalar(Tensor self, Scalar other) -> Tensor",
                op="mul.Scalar",
                line=20,
                formulas={"self": "grad * other"},
            ),
            DerivativeEntry(
                name="argmax(Tensor self) -> Tensor",
                op="argmax",
                line=30,
                formulas={"self": "non_differentiable"},
            ),
            DerivativeEntry(
                name="_foreach_add_.List(Tensor(a!)[] self, Tensor[] other) -> ()",
                op="_foreach_add_.List",
                line=40,
                formulas={"self": "grad"},
            ),
        ]
    )
    assert {k: (v.op, v.line) for k, v in entries.items()} == {
        "MulBackward0": ("mul.Tensor", 10),
        "MulBackward1": ("mul.Scalar", 20),
        "ForeachAddBackward0": ("_foreach_add_.List", 40),
    }
    assert backward_nodes.lookup(entries, "MulBackward0_copy") is entries["MulBackward0"]


def test_graph_of_x_times_w_plus_b(tmp_path: Path) -> None:
    script = tmp_path / "step.py"
    script.write_text(STEP)
    result = graph(GraphRequest(command=[PY, str(script)]))
    assert result.roots == ["y"]
    by_cls = {n.cls: n for n in result.nodes}
    add, mul = by_cls["AddBackward0"], by_cls["MulBackward0"]
    assert add.op == "add.Tensor" and mul.op == "mul.Tensor"
    assert mul.formulas["self"] == "mul_tensor_backward(grad, other, self.scalar_type())"
    assert mul.derivative is not None and mul.derivative.path == "tools/autograd/derivatives.yaml"
    assert mul.derivative.text is not None and "mul.Tensor" in mul.derivative.text
    assert mul.generated is not None and mul.generated.path.endswith("generated/Functions.h")
    leaves = sorted(n.variable["name"] for n in result.nodes if n.variable)
    assert leaves == ["b", "w", "x"]
    assert [result.nodes[t].cls for t, _nr in add.next] == ["MulBackward0", "AccumulateGrad"]
    assert {s["name"] for s in mul.saved} == {"self", "other"}
    dot = result.dot
    assert dot.startswith("digraph autograd {") and dot.rstrip().endswith("}")
    assert dot.count("->") == 1 + sum(1 for n in result.nodes for t, _ in n.next if t is not None)


def test_graph_var_views_detach_and_no_grad(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "views.py"
    script.write_text(STEP + "d = y.detach()\nv = y[1:]\nwith torch.no_grad():\n    z = x * 2\n")
    result = graph(GraphRequest(command=[PY, str(script)], variables=["v"]))
    assert result.roots == ["v"] and result.nodes[0].cls == "SliceBackward0"
    text = " ".join(result.explanations)
    assert "Views (v of y)" in text and "Detached (d)" in text
    # what the user sees: the error names the program's tensors and its other globals
    code = run_cli(cli, ["graph", "--var", "loss", "--", PY, str(script)])
    assert code == 2
    assert capsys.readouterr().err.endswith(
        "\nError: --var loss: no such tensor in the program's module globals after it ran. Its "
        "tensors: b, d, v, w, x, y, z; its other globals: torch. Name one of its tensors with "
        "--var, or leave --var out to draw every tensor that has a grad_fn.\n"
    )


def test_graph_without_any_graph_explains_why() -> None:
    result = graph(
        GraphRequest(
            code="x = torch.ones(2, requires_grad=True)\nwith torch.no_grad():\n    y = x * 2"
        )
    )
    assert result.roots == [] and result.nodes == []
    assert any("no_grad" in e for e in result.explanations)
    result = graph(GraphRequest(code="with torch.inference_mode():\n    t = torch.ones(2) * 2"))
    assert any("Inference tensors (t)" in e for e in result.explanations)


def test_graph_bad_programs(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text("raise SystemExit('no data')\n")
    with pytest.raises(OnboardError, match="failed before any torch call"):
        graph(GraphRequest(command=[PY, str(script)]))


STEP_CODE = "x = torch.ones(2, requires_grad=True); y = x * 2 + 1"


def test_graph_cli_dot_and_json() -> None:
    runner = CliRunner()
    out = runner.invoke(cli, ["graph", "--dot", "-c", STEP_CODE, "--python", PY])
    assert out.exit_code == 0, out.output
    assert out.stdout.startswith("digraph autograd {")
    out = runner.invoke(cli, ["graph", "--json", "-c", STEP_CODE, "--python", PY])
    data = json.loads(out.stdout)
    assert data["ok"] and [n["class"] for n in data["nodes"]] == [
        "AddBackward0",
        "MulBackward0",
        "AccumulateGrad",
    ]


def test_graph_svg_without_dot_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` anywhere
    ran = tmp_path / "ran"
    code = f"open({str(ran)!r}, 'w'); x = torch.ones(2, requires_grad=True); y = x * 2"
    svg = tmp_path / "g.svg"
    with pytest.raises(OnboardError) as info:
        graph(GraphRequest(code=code, python=PY, svg=str(svg)))
    assert "needs Graphviz's `dot` program, which is not on PATH" in info.value.message
    assert "apt-get install graphviz" in str(info.value.next_step)
    assert not ran.exists() and not svg.exists()  # said before the program ran
    with pytest.raises(BadInput, match="does not exist"):
        graph(GraphRequest(code=code, python=PY, svg=str(tmp_path / "no" / "g.svg")))


def _svg_graph(path: Path) -> tuple[dict[str, str], set[str]]:
    """The nodes (Graphviz name -> its label's text) and edges of an SVG dot wrote."""
    ns = {"svg": "http://www.w3.org/2000/svg"}
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    nodes, edges = {}, set()
    for group in root.iter("{http://www.w3.org/2000/svg}g"):
        title = group.findtext("svg:title", namespaces=ns)
        text = " ".join(t.text or "" for t in group.findall("svg:text", ns))
        if group.get("class") == "node":
            nodes[str(title)] = text
        elif group.get("class") == "edge":
            edges.add(str(title))
    return nodes, edges


@NEEDS_DOT
def test_graph_svg_holds_the_graph(tmp_path: Path) -> None:
    svg = tmp_path / "g.svg"
    out = CliRunner().invoke(
        cli, ["graph", "--dot", "--svg", str(svg), "-c", STEP_CODE, "--python", PY]
    )
    assert out.exit_code == 0, out.output
    assert out.stdout.startswith("digraph autograd {")  # --dot still prints the text
    nodes, edges = _svg_graph(svg)
    assert nodes == {
        "t_y": "y 2 float32",
        "n0": "AddBackward0 aten::add.Tensor derivatives.yaml:" + nodes["n0"].rsplit(":", 1)[1],
        "n1": "MulBackward0 aten::mul.Tensor derivatives.yaml:" + nodes["n1"].rsplit(":", 1)[1],
        "n2": "AccumulateGrad x",
    }
    assert edges == {"t_y->n0", "n0->n1", "n1->n2"}
    # the dot text and the picture are the same graph
    result = graph(GraphRequest(code=STEP_CODE, python=PY))
    assert nodes["n1"].endswith(f"derivatives.yaml:{result.nodes[1].derivative.line}")


# Programs whose every graph hangs off a module global: the graph walk reaches every
# Node that saved something, so its saved tensors are all the forward saved. (No Python
# number is saved: autograd keeps those, wrapped as tensors, away from the pack hook.)
GRAPH_PROGRAMS = {
    "step": STEP,
    "custom_function": """\
import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * x * k

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad * ctx.k, None

a = torch.randn(3, requires_grad=True)
b = Square.apply(a, 3).sum()
""",
    "mlp": """\
import torch
import torch.nn.functional as F

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
loss = F.cross_entropy(model(torch.randn(5, 4)), torch.tensor([0, 1, 0, 1, 1]))
""",
    "multi_output": """\
import torch

x = torch.randn(4, requires_grad=True)
a, b = x.view(2, 2).unbind()
y = (a.exp() * b + b.sigmoid()).sum()
c = torch.cat([a, b]).tanh()
""",
    "views_in_place": """\
import torch

w = torch.randn(4, 3, requires_grad=True)
h = w.clone()
h[1:].mul_(w[:3].sigmoid())
out = h.t().softmax(-1)
""",
    "conv_norm": """\
import torch

torch.manual_seed(0)
conv = torch.nn.Conv2d(1, 2, 3)
norm = torch.nn.LayerNorm([2, 3, 3])
out = norm(conv(torch.randn(1, 1, 5, 5))).relu().mean()
""",
}

_PACKED = """\
import json, sys
import torch

packed = []

def pack(t):
    packed.append([list(t.shape), str(t.dtype).replace("torch.", "")])
    return t

path = sys.argv[1]
with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__"})
print(json.dumps(packed))
"""


@pytest.mark.parametrize("name", sorted(GRAPH_PROGRAMS))
def test_saved_tensors_are_the_ones_autograd_packed(name: str, tmp_path: Path) -> None:
    """Autograd hands every tensor a Node saves for backward (SavedVariable) to the
    saved_tensors_hooks pack hook: those are the truth, as (shape, dtype)."""
    script = tmp_path / f"{name}.py"
    script.write_text(GRAPH_PROGRAMS[name])
    done = proc.run([PY, "-c", _PACKED, str(script)], timeout=300, what="the pack-hook run")
    truth = Counter(
        (tuple(shape), dtype) for shape, dtype in json.loads(done.stdout.splitlines()[-1])
    )
    result = graph(GraphRequest(command=[PY, str(script)]))
    shown = Counter(
        (tuple(s["tensor"]["shape"]), s["tensor"]["dtype"])
        for n in result.nodes
        for s in n.saved
        if "tensor" in s and not s["name"].startswith("ctx.")
    )
    print(f"{name}: saved tensors right {sum((truth & shown).values())}/{sum(truth.values())}")
    if name == "views_in_place":
        # the in-place mul_ on a view saved two tensors inside a CopySlices, out of reach
        assert not shown - truth and sum((truth - shown).values()) == 2
        assert any("CopySlices" in note for note in result.notes)
    else:
        assert shown == truth


_EDGES = """\
import json, sys
import torch

path = sys.argv[1]
space = {"__name__": "__main__"}
exec(compile(open(path).read(), path, "exec"), space)
edges, seen = [], set()
pending = [v.grad_fn for v in space.values() if isinstance(v, torch.Tensor) and v.grad_fn]
while pending:
    fn = pending.pop()
    if id(fn) in seen:
        continue
    seen.add(id(fn))
    for i, (nxt, nr) in enumerate(fn.next_functions):
        if nxt is not None:
            edges.append([type(fn).__name__, type(nxt).__name__, i, nr])
            pending.append(nxt)
print(json.dumps(edges))
"""


def test_dot_edges_are_labelled_with_their_place_in_next_functions(tmp_path: Path) -> None:
    script = tmp_path / "multi.py"
    script.write_text(GRAPH_PROGRAMS["multi_output"])
    done = proc.run([PY, "-c", _EDGES, str(script)], timeout=300, what="the graph walk")
    truth = Counter(
        (src, dst, str(i) if nr == 0 else f"{i} -> input_nr {nr}")
        for src, dst, i, nr in json.loads(done.stdout.splitlines()[-1])
    )
    assert any(nr for *_rest, nr in json.loads(done.stdout.splitlines()[-1]))  # a real input_nr
    result = graph(GraphRequest(command=[PY, str(script)]))
    cls = {f"n{n.index}": n.cls for n in result.nodes}
    shown = Counter(
        (cls[a], cls[b], label)
        for a, b, label in re.findall(
            r'^  (n\d+) -> (n\d+) \[label="([^"]*)"\];$', result.dot, re.M
        )
    )
    assert shown == truth


def test_the_guides_dot_example_is_what_graph_prints(tmp_path: Path) -> None:
    guide = Path(__file__).resolve().parent.parent / "docs" / "guide" / "graph.md"
    readme = guide.read_text(encoding="utf-8")
    at = readme.index("```\ndigraph autograd {")
    block = readme[at + 4 : readme.index("```", at + 4)]
    script = tmp_path / "train_step.py"
    script.write_text(STEP)  # the guide's train_step.py
    assert graph(GraphRequest(command=[PY, str(script)], dot=True)).dot == block
