"""`onboard trace`: real programs run under the installed torch's profiler in a child.

The dispatcher replay and the folding are checked on their own; the end-to-end
tests run real scripts and compare the locations with `onboard where`'s for
the same ops (on a full-checkout-like workspace), so the two commands stay in
agreement.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures.events import Fifo, gone
from fixtures.pytorch_repo import find_torch_dir
from opsource_helpers import (
    cache_fixture,  # noqa: F401 (a pytest fixture)
    clone_ws_fixture,  # noqa: F401 (a pytest fixture)
    shared_cache_fixture,  # noqa: F401 (a pytest fixture)
)

from onboard.cli import cli
from onboard.errors import BadInput, OnboardError
from onboard.workflows.trace import launch, optree
from onboard.workflows.trace.dispatch import BELOW_AUTOGRAD, AutogradKernel, parse_table, walk
from onboard.workflows.trace.profile import TraceRequest, trace
from onboard.workflows.where import WhereRequest, where

PY = sys.executable

# Lines of torch._C._dispatch_dump_table as torch 2.13.0's CPU wheel prints them.
_AT = "registered at /__w/pytorch/pytorch"
_GEN = "torch/csrc/autograd/generated"
ZEROS_TABLE = f"""\
Undefined: {_AT}/build/aten/src/ATen/RegisterCompositeExplicitAutograd_0.cpp:11641 \
[default backend kernel]
CPU: {_AT}/build/aten/src/ATen/RegisterCompositeExplicitAutograd_0.cpp:11641 \
[default backend kernel]
BackendSelect: {_AT}/build/aten/src/ATen/RegisterBackendSelect.cpp:728 [kernel]
ADInplaceOrView: fallthrough {_AT}/aten/src/ATen/core/VariableFallbackKernel.cpp:103 \
[backend fallback]
AutogradCPU: {_AT}/{_GEN}/VariableType_0.cpp:10502 [autograd kernel]
"""
ZERO_TABLE = f"""\
CPU: {_AT}/build/aten/src/ATen/RegisterCPU_2.cpp:4799 [kernel]
BackendSelect: fallthrough {_AT}/aten/src/ATen/core/BackendSelectFallbackKernel.cpp:3 \
[backend fallback]
ADInplaceOrView: {_AT}/{_GEN}/ADInplaceOrViewType_0.cpp:5032 [kernel]
AutogradCPU: {_AT}/{_GEN}/VariableType_0.cpp:10502 [autograd kernel]
"""
CPU_KEYS = ["AutocastCPU", "AutogradCPU", "ADInplaceOrView", "BackendSelect", "CPU"]


def test_dispatch_walk_factory_goes_through_backend_select() -> None:
    ran = walk(
        parse_table(ZEROS_TABLE),
        ["ADInplaceOrView", "BackendSelect"],
        frozenset(),
        backends=frozenset({"CPU"}),
        made_on="CPU",
    )
    assert [(k.key, k.kind) for k in ran.kernels] == [
        ("BackendSelect", "kernel"),
        ("CPU", "default backend kernel"),
    ]
    assert ran.kernels[1].path and ran.kernels[1].path.endswith(
        "RegisterCompositeExplicitAutograd_0.cpp"
    )
    assert (
        ran.excluded_below == frozenset()
    )  # no autograd kernel ran: what zeros calls sees autograd


def test_dispatch_walk_autograd_then_inplace_view_then_cpu() -> None:
    ran = walk(
        parse_table(ZERO_TABLE),
        CPU_KEYS,
        frozenset({"AutocastCPU"}),
        backends=frozenset({"CPU"}),
        made_on="CPU",
    )
    assert [k.key for k in ran.kernels] == ["AutogradCPU", "ADInplaceOrView", "CPU"]
    assert ran.excluded_below >= BELOW_AUTOGRAD
    # below an autograd kernel, the same op runs its backend kernel only
    nested = walk(
        parse_table(ZERO_TABLE),
        CPU_KEYS,
        ran.excluded_below,
        backends=frozenset({"CPU"}),
        made_on="CPU",
    )
    assert [k.key for k in nested.kernels] == ["CPU"]


def test_dispatch_walk_stops_where_the_kernel_does() -> None:
    detach_ = parse_table(
        f"CPU: {_AT}/build/aten/src/ATen/RegisterCompositeExplicitAutograd_0.cpp:10043 "
        "[default backend kernel]\n"
        f"AutogradCPU: {_AT}/torch/csrc/autograd/VariableTypeManual.cpp:349 [autograd kernel]\n"
    )
    # a hand-written autograd kernel the child saw not redispatch runs alone
    alone = AutogradKernel(redispatches=False, excludes_inplace_or_view=False)
    ran = walk(
        detach_, CPU_KEYS, frozenset(), backends=frozenset({"CPU"}), made_on="CPU", autograd=alone
    )
    assert [k.key for k in ran.kernels] == ["AutogradCPU"]
    # no key left (an op without tensor arguments): the Undefined entry runs
    nnpack = parse_table(
        f"Undefined: {_AT}/build/aten/src/ATen/RegisterCompositeImplicitAutograd_0.cpp:6058 "
        "[math kernel]\n"
        f"BackendSelect: fallthrough {_AT}/aten/src/ATen/core/BackendSelectFallbackKernel.cpp:3 "
        "[backend fallback]\n"
    )
    ran = walk(nnpack, ["BackendSelect"], frozenset(), backends=frozenset({"CPU"}), made_on="CPU")
    assert [(k.key, k.kind) for k in ran.kernels] == [("Undefined", "math kernel")]


def test_fold_repeated_loop_bodies() -> None:
    def op(name: str) -> optree.Node:
        return optree.Node("op", name, ns=10)

    nodes = [op("aten::a"), op("aten::b")] * 1000 + [op("aten::c")]
    folded = optree.fold(nodes)
    assert [(n.label, n.count, n.ns) for n in folded] == [
        ("aten::a", 1000, 10_000),
        ("aten::b", 1000, 10_000),
        ("aten::c", 1, 10),
    ]


def test_fold_a_long_loop_body_and_the_runs_inside_it() -> None:
    # a training step at a script's top level: 20 calls, one of them six times in a row
    def call(line: int) -> optree.Node:
        return optree.Node("call", "torch.f", path="train.py", line=line, children=[])

    body = [call(n) for n in range(10)] + [call(99)] * 6 + [call(n) for n in range(4)]
    nodes = [
        optree.Node("call", n.label, path=n.path, line=n.line) for _ in range(50) for n in body
    ]
    folded = optree.fold(nodes)
    assert [(n.line, n.count) for n in folded] == (
        [(n, 50) for n in range(10)] + [(99, 300)] + [(n, 50) for n in range(4)]
    )


def test_prune_depth_and_filter() -> None:
    inner = optree.Node("op", "aten::empty.memory_format")
    top = optree.Node("op", "aten::zeros", children=[inner, optree.Node("op", "aten::zero_")])
    call = optree.Node("call", "torch.zeros", children=[top])
    assert [n.label for n in optree.prune([call], depth=1, pattern=None)[0].children] == [
        "aten::zeros"
    ]
    assert optree.prune([call], depth=1, pattern=None)[0].children[0].children == []
    import re

    inner2 = optree.Node("op", "aten::empty.memory_format")
    top2 = optree.Node("op", "aten::zeros", children=[inner2, optree.Node("op", "aten::zero_")])
    kept = optree.prune(
        [optree.Node("call", "torch.zeros", children=[top2])],
        depth=None,
        pattern=re.compile("empty"),
    )
    assert [n.label for n in kept[0].children[0].children] == ["aten::empty.memory_format"]


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (None, None),
        (["bash", "run.sh"], None),
        (["python", "-x", "a.py"], None),
        (["python"], None),
        (["python", "nope.py"], None),
        (["python", "a.py"], "1"),
    ],
    ids=[
        "nothing-to-run", "not-python", "an-option-it-does-not-know", "no-script",
        "a-script-that-does-not-exist", "a-script-and-code",
    ],
)  # fmt: skip
def test_parse_bad_commands(command: list[str] | None, code: str | None) -> None:
    with pytest.raises(BadInput):
        launch.parse(command, code)


def test_parse_a_script_and_a_module(tmp_path: Path) -> None:
    script = tmp_path / "a.py"
    script.write_text("print(1)\n")
    program = launch.parse([PY, "-u", str(script), "--lr", "0.1"])
    assert (program.kind, program.python, program.options, program.args) == (
        "script",
        PY,
        ("-u",),
        ("--lr", "0.1"),
    )
    assert launch.parse(["python", "-m", "pkg.mod", "x"], None, python=PY).kind == "module"


def test_trace_zeros_shows_the_real_call_path() -> None:
    result = trace(TraceRequest(code="torch.zeros(3, 4)", python=PY))
    call = result.tree[0]
    assert call.kind == "call" and call.label == "torch.zeros" and call.line == 1
    zeros = call.children[0]
    assert zeros.label == "aten::zeros"
    assert [c.label for c in zeros.children] == ["aten::empty.memory_format", "aten::zero_"]
    # a small contiguous CPU tensor: zero_ zeroes memory itself, no fill_
    assert not zeros.children[1].children
    assert [k.key for k in zeros.kernels] == ["BackendSelect", "CPU"]
    # Inside the factory only zero_'s CPU kernel runs; called by the program, its
    # ADInplaceOrView kernel runs too and bumps the version counter. torch says which:
    versions = subprocess.run(
        [
            PY,
            "-c",
            "import torch; print(torch.zeros(3, 4)._version, torch.empty(3, 4).zero_()._version)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert versions == ["0", "1"]
    assert [k.key for k in zeros.children[1].kernels] == ["CPU"]
    direct = trace(TraceRequest(code="torch.empty(3, 4).zero_()", python=PY))
    zero_ = next(n for n in optree.ops(direct.tree) if n.label == "aten::zero_")
    assert [k.key for k in zero_.kernels] == ["AutogradCPU", "ADInplaceOrView", "CPU"]
    assert zeros.children[0].allocated_bytes == 3 * 4 * 4
    assert [m.device for m in result.memory] == ["cpu"] and result.memory[0].bytes == 48
    assert result.memory[0].header is not None
    assert result.memory[0].header.path == "c10/core/CPUAllocator.h"
    assert result.memory[0].header.line == _source_line(
        "c10/core/CPUAllocator.h", "GetDefaultCPUAllocator"
    )
    assert result.ops["aten::zeros"].places is not None
    assert result.ops["aten::zeros"].places.yaml is not None
    assert any("CUDA was not run" in n for n in result.notes)
    assert any("No onboard workspace" in n for n in result.notes)


def test_trace_locations_agree_with_where(clone_ws: Path, tmp_path: Path) -> None:
    script = tmp_path / "repro.py"
    script.write_text("import torch\nx = torch.zeros(3, 4)\ny = x.trunc()\n")
    result = trace(TraceRequest(command=[PY, str(script)], workspace=str(clone_ws)))
    assert result.tree[0].path == str(script) and result.tree[0].line == 2
    for op in ("aten::zeros", "aten::empty.memory_format", "aten::zero_", "aten::trunc"):
        mine = result.ops[op]
        theirs = where(WhereRequest.parse(op, workspace=str(clone_ws)))
        where_regs = {
            r.location.label for r in theirs.dispatch if r.op.startswith(op.split(".")[0])
        }
        for kernel in mine.kernels:
            assert kernel.registered is not None
            assert kernel.registered.label in where_regs, (op, kernel.key)
        assert mine.places is not None and mine.places.yaml is not None
        assert mine.places.yaml.label in {y.location.label for y in theirs.yaml_entries}
        where_sites = {(k.role, k.location.label) for k in theirs.kernels}
        assert {(k.role, k.location.label) for k in mine.places.kernels} <= where_sites
    trunc = result.ops["aten::trunc"].places
    assert trunc is not None and any(k.role == "stub_register" for k in trunc.kernels)


def test_trace_cli_json_filter_and_depth(tmp_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(
        cli, ["trace", "--json", "--depth", "1", "-c", "torch.ones(2) + 1", "--python", PY]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["ok"] is True and data["summary"]["op_calls"] >= 3
    labels = [c["label"] for call in data["tree"] for c in call["children"]]
    assert "aten::ones" in labels and all(
        not c["children"] for call in data["tree"] for c in call["children"]
    )
    out = runner.invoke(cli, ["trace", "--filter", "fill_", "-c", "torch.ones(2)", "--python", PY])
    assert (
        out.exit_code == 0
        and "aten::fill_.Scalar" in out.stdout
        and "aten::zero_" not in out.stdout
    )
    bad = runner.invoke(cli, ["trace", "--filter", "(", "-c", "torch.ones(2)"])
    assert isinstance(bad.exception, BadInput)


def test_trace_script_imports_its_neighbour_not_a_checkout_torch(tmp_path: Path) -> None:
    # A PyTorch-checkout-like torch/ next to the script must not shadow the installed one,
    # while the script's own module next to it still imports.
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('checkout torch')\n")
    (tmp_path / "mymodel.py").write_text(
        "import torch\ndef make():\n    return torch.ones(2) * 3\n"
    )
    (tmp_path / "repro.py").write_text("import mymodel\nmymodel.make()\n")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = trace(TraceRequest(command=[PY, "repro.py"]))
    finally:
        os.chdir(cwd)
    assert any(n.label == "aten::mul.Tensor" for n in optree.ops(result.tree))


def test_trace_program_that_fails_before_torch(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text("import torch\nraise ValueError('bad config')\n")
    with pytest.raises(OnboardError) as info:
        trace(TraceRequest(command=[PY, str(script)]))
    assert "failed before any torch call" in info.value.message
    assert "ValueError: bad config" in info.value.message
    _suggested_run_fails_the_same_way(info.value, "ValueError: bad config")
    script.write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(OnboardError, match=r"exit 3"):
        trace(TraceRequest(command=[PY, str(script)]))


def _source_line(rel: str, needle: str) -> int:
    """The line of ``needle`` in PyTorch's own copy of the header: the wheel's copy under
    torch/include has one guard line more on top (`#if !defined(TORCH_STABLE_ONLY) ...`)."""
    lines = (find_torch_dir() / "include" / rel).read_text(encoding="utf-8").splitlines()
    number = next(i for i, text in enumerate(lines, 1) if needle in text)
    return number - 1 if lines[0].startswith("#if !defined(TORCH_STABLE_ONLY)") else number


def _suggested_run_fails_the_same_way(error: OnboardError, expected: str) -> None:
    """The "run `...` by itself" of the next step is a command a shell runs as printed."""
    found = re.search(r"run `([^`]+)` by itself", error.next_step or "", re.IGNORECASE)
    assert found, error.next_step
    alone = subprocess.run(shlex.split(found.group(1)), capture_output=True, text=True)
    assert alone.returncode != 0 and expected in alone.stderr


def test_trace_code_that_does_not_parse_names_a_runnable_command() -> None:
    with pytest.raises(OnboardError) as info:
        trace(TraceRequest(code="torch.zeros(2"))
    assert "SyntaxError" in info.value.message
    # The code as the child ran it: with the torch import `-c` adds.
    assert "import torch; torch.zeros(2" in (info.value.next_step or "")
    _suggested_run_fails_the_same_way(info.value, "SyntaxError")


def test_trace_program_without_torch(tmp_path: Path) -> None:
    script = tmp_path / "hello.py"
    script.write_text("print('hello')\n")
    with pytest.raises(OnboardError, match="never imported torch"):
        trace(TraceRequest(command=[PY, str(script)]))


def test_trace_program_failing_after_ops_still_shows_them(tmp_path: Path) -> None:
    script = tmp_path / "late.py"
    script.write_text("import torch\ntorch.ones(2)\nraise RuntimeError('later')\n")
    result = trace(TraceRequest(command=[PY, str(script)]))
    assert result.program_exit == 1 and result.exit_code == 1
    assert "RuntimeError: later" in (result.error or "")
    assert any(n.label == "aten::ones" for n in optree.ops(result.tree))


def test_trace_timeout_kills_the_program(tmp_path: Path) -> None:
    script = tmp_path / "forever.py"
    marker = tmp_path / "child.pid"
    script.write_text(
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(600)\n"
    )
    # long enough for torch's import on a busy machine: the program must have started its child
    with pytest.raises(OnboardError, match="did not finish within 20 s"):
        trace(TraceRequest(command=[PY, str(script)], timeout=20))
    assert marker.exists(), "the program was stopped before it started its own child"
    assert gone(int(marker.read_text()), 10), "the program's own child survived the timeout"


def _restore_ctrl_c() -> None:
    # pytest-xdist workers ignore SIGINT and children inherit that; a terminal's
    # Ctrl-C reaches a process whose SIGINT is at its default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_trace_interrupted_exits_130(tmp_path: Path) -> None:
    script = tmp_path / "slow.py"
    started = Fifo(tmp_path / "started")
    script.write_text(
        "import os, time\nimport torch\ntorch.ones(1)\n"
        f"open({str(started)!r}, 'w').write(f'{{os.getpid()}}\\n')\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen(
        [PY, "-m", "onboard", "trace", "--", PY, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_restore_ctrl_c,
    )
    try:
        program = int(started.line("the program running under the tracer", process=proc))
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=120)
    finally:
        started.close()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "Interrupted." in err
    assert gone(program, 10), "the traced program survived Ctrl-C"
