"""What `onboard trace` says around the tree: --filter/--depth, the kernels list's
sources, the no_grad hint and the program's own traceback, each checked against
torch (or the program run by itself) at test time."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.pytorch_repo import find_torch_dir
from opsource_helpers import (
    cache_fixture,  # noqa: F401 (a pytest fixture)
    make_reference_workspace,
    shared_cache_fixture,  # noqa: F401 (a pytest fixture)
)

from onboard.views import trace as view
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.trace import optree
from onboard.workflows.trace.profile import TraceRequest, TraceResult, trace
from onboard.workflows.where import KernelSite
from onboard.workflows.where.kernels import namesake_stubs

PY = sys.executable
LINEAR = """\
import torch
model = torch.nn.Linear(4, 3)
x = torch.randn(2, 4)
y = model(x)
z = torch.mm(x, x.t())
"""


def _op(name: str, *children: optree.Node) -> optree.Node:
    return optree.Node("op", name, children=list(children))


def test_filter_keeps_the_matches_and_their_callers_then_cuts_depth_below_them() -> None:
    def tree() -> list[optree.Node]:
        addmm = _op("aten::addmm", _op("aten::expand", _op("aten::as_strided")), _op("aten::copy_"))
        linear = _op("aten::linear", _op("aten::t"), addmm)
        return [
            optree.Node("call", "F.linear", children=[linear]),
            optree.Node("call", "torch.relu", children=[_op("aten::relu")]),
        ]

    def labels(nodes: list[optree.Node]) -> list[object]:
        return [(n.label, labels(n.children)) if n.children else n.label for n in nodes]

    pattern = re.compile("aten::(mm|addmm)")
    assert labels(optree.prune(tree(), depth=1, pattern=pattern)) == [
        ("F.linear", [("aten::linear", ["aten::addmm"])])
    ]
    assert labels(optree.prune(tree(), depth=2, pattern=pattern)) == [
        ("F.linear", [("aten::linear", [("aten::addmm", ["aten::expand", "aten::copy_"])])])
    ]
    assert labels(optree.prune(tree(), depth=None, pattern=pattern))[0] == (
        "F.linear",
        [
            (
                "aten::linear",
                [("aten::addmm", [("aten::expand", ["aten::as_strided"]), "aten::copy_"])],
            )
        ],
    )
    # without a filter, depth counts from the ops entered from Python
    assert labels(optree.prune(tree(), depth=1, pattern=None)) == [
        ("F.linear", ["aten::linear"]),
        ("torch.relu", ["aten::relu"]),
    ]


def test_readme_filter_example_shows_the_matching_ops(tmp_path: Path) -> None:
    script = tmp_path / "model.py"
    script.write_text(LINEAR)
    result = trace(TraceRequest(command=[PY, str(script)], depth=1, filter="aten::(mm|addmm)"))
    shown = [n.label for n in optree.ops(result.tree)]
    # the linear layer's addmm under the op that called it, and the script's own mm
    assert "aten::addmm" in shown and "aten::mm" in shown
    for node in optree.ops(result.tree):
        if node.label in ("aten::addmm", "aten::mm"):
            assert node.children == []
    assert sorted(result.ops) == ["aten::addmm", "aten::mm"]
    assert not any("No op matched" in n for n in result.notes)


@pytest.mark.parametrize("requires_grad", [False, True], ids=["no-graph", "a-graph-recorded"])
def test_no_grad_hint_only_when_a_graph_was_recorded(tmp_path: Path, requires_grad: bool) -> None:
    body = "for _ in range(20):\n    y = x @ x\nprint(y.requires_grad, y.grad_fn is not None)\n"
    script = tmp_path / "matmuls.py"
    script.write_text(
        f"import torch\nx = torch.randn(64, 64, requires_grad={requires_grad})\n" + body
    )
    # what the program itself says about its output
    said = subprocess.run([PY, str(script)], capture_output=True, text=True, check=True)
    recorded = said.stdout.split() == ["True"] * 2
    assert said.stdout.split() == [str(requires_grad)] * 2
    hints = trace(TraceRequest(command=[PY, str(script)])).hints
    assert any("no_grad" in h for h in hints) is recorded, hints


def test_a_failing_program_shows_its_own_traceback(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    script.write_text(
        "import torch\nimport torch.nn.functional as F\n\n"
        "def loss(a, b):\n    return F.cross_entropy(a, b)\n\n"
        "x = torch.ones(2, 3) * 2\nloss(x, torch.tensor([5, 0]))\n"
    )
    alone = subprocess.run([PY, str(script)], capture_output=True, text=True)
    assert alone.returncode == 1
    expected = alone.stderr.rstrip().splitlines()
    start = expected.index("Traceback (most recent call last):")
    result = trace(TraceRequest(command=[PY, str(script)]))
    tail = result.output_tail
    assert "Traceback (most recent call last):" in tail
    assert tail[tail.index("Traceback (most recent call last):") :] == expected[start:]
    assert not any("<onboard>" in line or "profiler_" in line for line in tail)


def test_kernels_list_names_only_kernels_that_ran_and_the_stub_they_call(tmp_path: Path) -> None:
    ws = make_reference_workspace(tmp_path / "ws")
    cuda = ws.root / "pytorch" / "aten/src/ATen/cuda"
    cuda.mkdir(parents=True)
    for header in (find_torch_dir() / "include" / "ATen" / "cuda").glob("*.h"):
        shutil.copy2(header, cuda / header.name)
    cuda_runs = subprocess.run(
        [PY, "-c", "import torch; print(torch.cuda.is_available())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    result = trace(
        TraceRequest(code="torch.zeros(3).copy_(torch.ones(3))", workspace=str(ws.root), python=PY)
    )
    empty = result.ops["aten::empty.memory_format"].places
    assert empty is not None and empty.kernels, "where finds empty's kernels in this tree"
    for summary in result.ops.values():
        for site in summary.places.kernels if summary.places else []:
            if cuda_runs == "False":
                assert "CUDA" not in site.keys and "/cuda/" not in site.location.path, site
    copy = result.ops["aten::copy_"].places
    assert copy is not None
    declared = {s.location.path for s in copy.kernels if s.role == "stub_declare"}
    # copy_ is at::native::copy_ and calls the copy_stub of its own namespace
    assert declared == {
        path for path in declared_stubs(ws.root / "pytorch", "copy_stub") if _in_at_native(path)
    }
    assert declared and "aten/src/ATen/native/CPUBlas.h" not in declared


def declared_stubs(tree: Path, stub: str) -> list[str]:
    pattern = re.compile(rf"DECLARE_DISPATCH\([^;]*\b{stub}\b")
    return sorted(
        str(p.relative_to(tree)) for p in tree.rglob("*.h") if pattern.search(p.read_text())
    )


def _in_at_native(rel: str) -> bool:
    """The header's DECLARE_DISPATCH sits in `namespace at::native {` (or `at { native {`),
    with no namespace opened between."""
    text = (find_torch_dir() / "include" / rel.removeprefix("aten/src/")).read_text()
    before = text[: text.index("DECLARE_DISPATCH")]
    opened = re.findall(r"namespace\s+([\w:]+)\s*\{", before)
    return "::".join(opened).endswith("at::native") or opened[-2:] == ["at", "native"]


def test_namesake_stubs_in_other_namespaces_are_marked_ambiguous() -> None:
    files = {
        "a/One.h": "namespace at::native::blas {\nDECLARE_DISPATCH(f, x_stub)\n}\n",
        "a/Two.h": "namespace at::native::other {\nDECLARE_DISPATCH(f, x_stub)\n}\n",
    }

    def site(path: str) -> KernelSite:
        return KernelSite("stub_declare", "x_stub", SourceLoc(path, 2), (), "DECLARE_DISPATCH")

    kept = namesake_stubs([site("a/One.h"), site("a/Two.h")], files.__getitem__)
    assert [s.location.path for s in kept] == ["a/One.h", "a/Two.h"]
    assert all("ambiguous: 2 DispatchStubs are named x_stub" in s.detail for s in kept)
    files["a/Two.h"] = "namespace at {\nnamespace native {\nDECLARE_DISPATCH(f, x_stub)\n}}\n"
    chosen = namesake_stubs(
        [site("a/One.h"), KernelSite("stub_declare", "x_stub", SourceLoc("a/Two.h", 3))],
        files.__getitem__,
    )
    assert [(s.location.path, s.detail) for s in chosen] == [("a/Two.h", "")]


GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide" / "trace.md"
_TIMES = re.compile(r"\d+\.\d+ (ms|s)\b")


def readme_block(first_line_start: str) -> list[str]:
    """The trace guide's fenced output block whose first line starts with ``first_line_start``."""
    text = GUIDE.read_text(encoding="utf-8")
    at = text.index("```\n" + first_line_start)
    return text[at + 4 : text.index("```", at + 4)].rstrip("\n").splitlines()


def rendered(result: TraceResult) -> list[str]:
    from io import StringIO

    from rich.console import Console

    out = StringIO()
    view.render(result, Console(file=out, width=100_000, color_system=None), False)
    return out.getvalue().splitlines()


def test_readme_trace_example_is_what_trace_prints() -> None:
    block = readme_block('onboard trace -c "torch.zeros(3, 4)"')
    lines = rendered(trace(TraceRequest(code="torch.zeros(3, 4)", python=PY)))
    # times differ from run to run, and so does the order of ops whose self times are
    # near each other (3 tiny ops on a loaded machine): everything else is the same
    assert _timeless(lines[: len(block)]) == _timeless(block)


def _timeless(lines: list[str]) -> list[str]:
    """The lines with times as T, and the "slowest by self time" rows (ordered by a
    time) in a fixed order."""
    out = [_TIMES.sub("T", x) for x in lines]
    at = out.index("  slowest by self time:") + 1 if "  slowest by self time:" in out else len(out)
    return out[:at] + sorted(out[at:])
