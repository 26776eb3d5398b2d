# ruff: noqa: E501 (dispatch tables and scripts are quoted verbatim)
"""`onboard graph`: the autograd graph of a real program, tied to derivatives.yaml."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from opsource_helpers import cache_fixture, shared_cache_fixture  # noqa: F401 (pytest fixtures)

from onboard import proc
from onboard.cli import cli
from onboard.errors import BadInput, OnboardError
from onboard.workflows.trace import backward_nodes
from onboard.workflows.trace.autograd_graph import graph

PY = sys.executable
STEP = "import torch\nx = torch.randn(3, requires_grad=True)\nw = torch.randn(3, requires_grad=True)\nb = torch.randn(3, requires_grad=True)\ny = x * w + b\n"


def test_backward_names_follow_torchgen() -> None:
    entries = backward_nodes.index(
        [
            {
                "name": "mul.Tensor(Tensor self, Tensor other) -> Tensor",
                "op": "mul.Tensor",
                "line": 10,
                "formulas": {"self": "grad * other", "other": "grad * self", "result": "x"},
            },
            {
                "name": "mul.Scalar(Tensor self, Scalar other) -> Tensor",
                "op": "mul.Scalar",
                "line": 20,
                "formulas": {"self": "grad * other"},
            },
            {
                "name": "argmax(Tensor self) -> Tensor",
                "op": "argmax",
                "line": 30,
                "formulas": {"self": "non_differentiable"},
            },
            {
                "name": "_foreach_add_.List(Tensor(a!)[] self, Tensor[] other) -> ()",
                "op": "_foreach_add_.List",
                "line": 40,
                "formulas": {"self": "grad"},
            },
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
    result = graph([PY, str(script)])
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
    if proc.which("dot"):
        proc.run(["dot", "-Tsvg"], input=dot)  # a valid digraph for Graphviz itself


def test_graph_var_views_detach_and_no_grad(tmp_path: Path) -> None:
    script = tmp_path / "views.py"
    script.write_text(STEP + "d = y.detach()\nv = y[1:]\nwith torch.no_grad():\n    z = x * 2\n")
    result = graph([PY, str(script)], variables=["v"])
    assert result.roots == ["v"] and result.nodes[0].cls == "SliceBackward0"
    text = " ".join(result.explanations)
    assert "Views (v of y)" in text and "Detached (d)" in text
    with pytest.raises(BadInput, match="no such tensor") as info:
        graph([PY, str(script)], variables=["loss"])
    assert (
        "x, w, b, y" in info.value.message.replace("b, d", "b").replace(", d,", ",")
        or "y" in info.value.message
    )


def test_graph_without_any_graph_explains_why() -> None:
    result = graph(
        code="x = torch.ones(2, requires_grad=True)\nwith torch.no_grad():\n    y = x * 2"
    )
    assert result.roots == [] and result.nodes == []
    assert any("no_grad" in e for e in result.explanations)
    result = graph(code="with torch.inference_mode():\n    t = torch.ones(2) * 2")
    assert any("Inference tensors (t)" in e for e in result.explanations)


def test_graph_bad_programs(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text("raise SystemExit('no data')\n")
    with pytest.raises(OnboardError, match="failed before any torch call"):
        graph([PY, str(script)])


def test_graph_cli_dot_json_and_svg(tmp_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(
        cli,
        [
            "graph",
            "--dot",
            "-c",
            "x = torch.ones(2, requires_grad=True); y = x * 2",
            "--python",
            PY,
        ],
    )
    assert out.exit_code == 0, out.output
    assert out.stdout.startswith("digraph autograd {")
    out = runner.invoke(
        cli,
        [
            "graph",
            "--json",
            "-c",
            "x = torch.ones(2, requires_grad=True); y = x * 2",
            "--python",
            PY,
        ],
    )
    data = json.loads(out.stdout)
    assert data["ok"] and data["nodes"][0]["class"] == "MulBackward0"
    svg = tmp_path / "g.svg"
    out = runner.invoke(
        cli,
        [
            "graph",
            "--svg",
            str(svg),
            "-c",
            "x = torch.ones(2, requires_grad=True); y = x * 2",
            "--python",
            PY,
        ],
    )
    if proc.which("dot") is None:
        assert isinstance(out.exception, OnboardError) and "apt-get install graphviz" in str(
            out.exception.paragraph()
        )
    else:
        assert out.exit_code == 0 and svg.read_text().lstrip().startswith(("<?xml", "<svg"))


@pytest.mark.skipif(
    proc.which("dot") is None, reason="Graphviz's `dot` is not installed (apt-get install graphviz)"
)
def test_dot_renders_svg(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            PY,
            "-m",
            "onboard",
            "graph",
            "--svg",
            str(tmp_path / "g.svg"),
            "-c",
            "x = torch.ones(2, requires_grad=True); y = x * 2 + 1",
            "--python",
            PY,
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "<svg" in (tmp_path / "g.svg").read_text()
