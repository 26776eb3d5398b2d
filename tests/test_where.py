"""`onboard where`: an op's anatomy on a full-checkout-like and a reference-like
workspace, against the installed torch's live dispatch table."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures.pytorch_repo import find_torch_dir
from opsource_helpers import (
    cache_fixture,  # noqa: F401 (a pytest fixture)
    clone_ws_fixture,  # noqa: F401 (a pytest fixture)
    installed_commit,
    installed_version,
    make_clone_workspace,
    reference_ws_fixture,  # noqa: F401 (a pytest fixture)
    save_workspace,
    shared_cache_fixture,  # noqa: F401 (a pytest fixture)
)

from onboard.cli import cli
from onboard.crash import run_cli
from onboard.errors import BadInput, NoWorkspace
from onboard.workflows.opsource.native_yaml import NATIVE_FUNCTIONS
from onboard.workflows.where import parse_query, where

UNARY = "aten/src/ATen/native/UnaryOps.cpp"


def _func_line(checkout: Path, schema_start: str) -> int:
    """The line of `- func: <schema_start>` in the checkout's yaml (as torchgen's loc says)."""
    lines = (checkout / NATIVE_FUNCTIONS).read_text().splitlines()
    return next(i + 1 for i, text in enumerate(lines) if text.startswith(f"- func: {schema_start}"))


def test_parse_query() -> None:
    assert parse_query("trunc") == ("op", "trunc", None)
    assert parse_query("aten::mm.out") == ("op", "mm", "out")
    assert parse_query("torch.nn.functional.linear") == (
        "python",
        "torch.nn.functional.linear",
        None,
    )
    for bad in ("", "  ", "trunc(x)", "aten::", "torch.nn functional"):
        with pytest.raises(BadInput):
            parse_query(bad)


def test_where_trunc_full_anatomy(clone_ws: Path) -> None:
    result = where("trunc", workspace=str(clone_ws))
    commit = installed_commit()
    checkout = clone_ws / "pytorch"

    # the three yaml entries, at their lines, linked at the installed commit
    assert [(y.name, y.kind) for y in result.yaml_entries] == [
        ("trunc", "functional"),
        ("trunc_", "inplace"),
        ("trunc.out", "out"),
    ]
    for entry, start in zip(result.yaml_entries, ("trunc(", "trunc_(", "trunc.out("), strict=True):
        assert entry.location.line == _func_line(checkout, start)
        assert entry.location.url == (
            f"https://github.com/pytorch/pytorch/blob/{commit}/{NATIVE_FUNCTIONS}#L{entry.location.line}"
        )
    out = result.yaml_entries[2]
    assert out.structured and out.dispatch["CPU"] == "trunc_out"
    assert result.yaml_entries[0].structured_delegate == "trunc.out"

    # the CPU registration from the live table: a generated file under the build prefix
    cpu = [r for r in result.dispatch if r.key == "CPU" and r.op == "aten::trunc"]
    assert len(cpu) == 1
    assert re.fullmatch(r"build/aten/src/ATen/RegisterCPU(_\d+)?\.cpp:\d+", cpu[0].location.label)
    assert cpu[0].location.generated and cpu[0].location.url is None
    autograd = [r for r in result.dispatch if r.key == "Autograd[alias]"]
    assert autograd and autograd[0].location.path.startswith("torch/csrc/autograd/generated/")

    # Python entry points reach aten::trunc / aten::trunc_
    entries = {e.name: e for e in result.entry_points}
    assert entries["torch.trunc"].top_ops == ("aten::trunc",)
    assert entries["torch.Tensor.trunc_"].top_ops == ("aten::trunc_",)

    # kernels: meta, impl, and the DispatchStub declare / define / register / bodies
    roles = {(k.role, k.location.path) for k in result.kernels}
    assert ("meta", UNARY) in roles
    assert ("impl", UNARY) in roles
    assert ("stub_declare", "aten/src/ATen/native/UnaryOps.h") in roles
    assert ("stub_define", UNARY) in roles
    assert ("stub_register", "aten/src/ATen/native/cpu/UnaryOpsKernel.cpp") in roles
    assert ("stub_register", "aten/src/ATen/native/cuda/UnaryFractionKernels.cu") in roles
    bodies = {k.name for k in result.kernels if k.role == "stub_kernel"}
    assert bodies == {"trunc_kernel", "trunc_kernel_cuda"}
    declare = next(k for k in result.kernels if k.role == "stub_declare")
    assert declare.location.text == "DECLARE_DISPATCH(unary_fn, trunc_stub)"
    meta = next(k for k in result.kernels if k.role == "meta")
    assert meta.location.text and meta.location.text.startswith("TORCH_META_FUNC(trunc)")
    assert (
        meta.location.url
        == f"https://github.com/pytorch/pytorch/blob/{commit}/{UNARY}#L{meta.location.line}"
    )

    # the derivative formula
    assert [d.name for d in result.derivatives] == ["trunc(Tensor self) -> Tensor"]
    assert result.derivatives[0].formulas == {
        "self": "zeros_like(grad)",
        "result": "auto_element_wise",
    }
    assert result.derivatives[0].location.path == "tools/autograd/derivatives.yaml"
    assert not result.limitations


def test_where_json_cli_mm_out(clone_ws: Path) -> None:
    res = CliRunner().invoke(cli, ["where", "aten::mm.out", "--json", "--workspace", str(clone_ws)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert {y["name"] for y in data["yaml"]} == {"mm", "mm.out"}
    meta = [k for k in data["kernels"] if k["role"] == "meta"]
    assert meta and meta[0]["location"]["label"] == "aten/src/ATen/native/LinearAlgebra.cpp:201"
    impl = [k for k in data["kernels"] if k["role"] == "impl"]
    assert impl[0]["name"] == "mm_out_cpu" and impl[0]["keys"] == ["CPU"]
    assert "mm_out_cuda" in data["kernels_not_found"]
    assert any(r["key"] == "CPU" for r in data["dispatch_table"])


def test_where_python_entry_point(clone_ws: Path) -> None:
    result = where("torch.nn.functional.linear", workspace=str(clone_ws))
    assert result.op == "linear"
    assert result.entry_points[0].top_ops == ("aten::linear",)
    # linear is CompositeImplicitAutograd: on meta tensors it runs as other ops
    assert "aten.mm.default" in result.decomposes_to
    assert any(r.key == "CompositeImplicitAutograd[alias]" for r in result.dispatch)


def test_where_text_output(clone_ws: Path) -> None:
    res = CliRunner().invoke(cli, ["where", "trunc", "--workspace", str(clone_ws)])
    assert res.exit_code == 0, res.output
    assert "DECLARE_DISPATCH" in res.output
    assert f"{UNARY}:" in res.output
    assert installed_commit() in res.output
    assert "--generated" in res.output  # the note on build/ files


def test_where_unknown_op_suggests(clone_ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(BadInput) as info:
        where("trnc", workspace=str(clone_ws))
    assert "trunc" in info.value.message
    assert run_cli(cli, ["where", "trnc", "--workspace", str(clone_ws)]) == 2
    assert "Closest names: trunc" in capsys.readouterr().err
    assert run_cli(cli, ["where", "mm.nope", "--json", "--workspace", str(clone_ws)]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["kind"] == "BadInput" and "mm.out" in error["message"]


def test_where_unknown_python_name(clone_ws: Path) -> None:
    with pytest.raises(BadInput) as info:
        where("torch.nn.functional.no_such_fn", workspace=str(clone_ws))
    assert "does not exist" in info.value.message


def test_where_no_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NoWorkspace):
        where("trunc")
    assert run_cli(cli, ["where", "trunc"]) == 1


def test_where_workspace_without_checkout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    save_workspace(root, "clone")  # onboard.json, but no pytorch/ folder
    assert run_cli(cli, ["where", "trunc", "--workspace", str(root)]) == 1
    assert "onboard setup" in capsys.readouterr().err


def test_where_reference_tree(reference_ws: Path) -> None:
    result = where("trunc", workspace=str(reference_ws))
    assert len(result.yaml_entries) == 3
    roles = {k.role for k in result.kernels}
    # the tree holds the header: the stub's declaration is there, the .cpp kernels are not
    assert "stub_declare" in roles
    assert not roles & {"impl", "meta", "kernel"}
    assert result.limitations and "needs a full checkout" in result.limitations[0]
    # the wheel ships common_methods_invocations.py: the OpInfo entry is found
    assert result.opinfo
    assert result.opinfo[0].path == "torch/testing/_internal/common_methods_invocations.py"
    assert "UnaryUfuncInfo('trunc'" in (result.opinfo[0].text or "")
    # the Meta registration in torch/_meta_registrations.py maps into the tree
    meta = [r for r in result.dispatch if r.key == "Meta"]
    assert meta and meta[0].location.in_checkout


@pytest.mark.slow
def test_where_generated_regenerates_register_files(clone_ws: Path) -> None:
    result = where("trunc", workspace=str(clone_ws), generated=True)
    cpu = next(r for r in result.dispatch if r.key == "CPU" and r.op == "aten::trunc")
    assert cpu.location.local is not None
    # the line the binary names is the backend's registration block
    assert cpu.location.text == "TORCH_LIBRARY_IMPL(aten, CPU, m) {"


# --------------------------------------------------------------------------
# The live index: every op answered by one child, kept per interpreter and torch


def _index_file(cache_root: Path) -> Path | None:
    found = sorted((cache_root / "onboard" / "opsource").glob("live-index-*.jsonl"))
    return found[0] if found else None


def _wait_for_index(cache_root: Path, timeout: float = 900.0) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _index_file(cache_root)
        if found is not None:
            return found
        time.sleep(0.5)
    pytest.fail("the live index was never written")


def _fake_index(path: Path, *, mtime_ns: int, rows: dict[str, Any]) -> None:
    torch_file = find_torch_dir() / "__init__.py"
    body = b"".join((json.dumps(row) + "\n").encode() for row in rows.values())
    offsets, at = {}, 0
    for base, row in rows.items():
        size = len((json.dumps(row) + "\n").encode())
        offsets[base] = [at, size]
        at += size
    header = {
        "format": 1,
        "torch_file": str(torch_file),
        "torch_mtime_ns": mtime_ns,
        "torch_version": installed_version(),
        "git_version": installed_commit(),
        "offsets": offsets,
        "names": {"torch.trunc": "trunc"},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((json.dumps(header) + "\n").encode() + body)


def test_live_index_is_read_only_when_it_validates(tmp_path: Path) -> None:
    from onboard.report import Reporter
    from onboard.workflows.opsource.live_index import LiveIndex

    request = {"entries": ["torch.trunc"], "ops": ["aten::trunc"], "record": True,
               "group_overloads": False}  # fmt: skip
    entry = {"query": "torch.trunc", "name": "torch.trunc", "exists": True}
    answer = {"torch_version": installed_version(), "entries": [entry], "dumps": {}}
    mtime = (find_torch_dir() / "__init__.py").stat().st_mtime_ns

    def index() -> LiveIndex:
        return LiveIndex(sys.executable, "cache-id", Reporter())

    path = index().path
    _fake_index(path, mtime_ns=mtime, rows={"trunc": {"base": "trunc", "request": request,
                                                      "answer": answer}})  # fmt: skip
    good = index()
    assert good.lookup("trunc", request) == answer and good.entry("torch.trunc") == entry
    assert good.lookup("mm", request) is None  # not in it: asked live
    other = {**request, "entries": ["torch.trunc", "torch.Tensor.trunc"]}
    assert good.lookup("trunc", other) is None  # the yaml changed since: asked live

    # torch changed (its file's mtime), or the file is garbage: never read, never a crash
    _fake_index(path, mtime_ns=mtime + 1, rows={"trunc": {"base": "trunc", "request": request,
                                                          "answer": answer}})  # fmt: skip
    assert index().lookup("trunc", request) is None
    for garbage in (b"", b"not json\n", b'{"format": 1}\n', b"[1, 2]\n"):
        path.write_bytes(garbage)
        assert index().lookup("trunc", request) is None and index().entry("torch.trunc") is None
    _fake_index(path, mtime_ns=mtime, rows={"trunc": {"base": "mm", "request": request,
                                                      "answer": "no"}})  # fmt: skip
    assert index().lookup("trunc", request) is None


def _ask_one_child(request: dict[str, Any]) -> dict[str, Any]:
    """What the per-op child prints for ``request``, asked in an interpreter of its own."""
    from onboard.workflows.opsource.live_index import _PER_OP_CHILD, MARKER

    code = _PER_OP_CHILD.read_text()
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(request)], capture_output=True, text=True,
        timeout=600, check=True,
    ).stdout  # fmt: skip
    line = next(ln for ln in out.splitlines() if ln.startswith(MARKER))
    answer: dict[str, Any] = json.loads(line[len(MARKER) :])
    return answer


@pytest.mark.slow
def test_live_index_answers_as_a_child_asked_about_one_op(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onboard.report import Reporter
    from onboard.workflows import where as where_mod
    from onboard.workflows.opsource.live_index import LiveIndex

    cache_root = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_root))
    ws = tmp_path / "ws"
    make_clone_workspace(ws)
    first = Reporter(verbose=True)
    where("trunc", workspace=str(ws), reporter=first)
    assert any("indexing every op" in m for m in first.messages)
    _wait_for_index(cache_root)
    # Ops never asked are answered from the index: no child.
    for op in ("aten::mm.out", "abs", "torch.nn.functional.relu6"):
        reporter = Reporter()
        where(op, workspace=str(ws), reporter=reporter)
        assert not any(m.startswith("Asking the installed torch") for m in reporter.messages)
    # What the index holds is what a child asked about that op alone answers.
    index = LiveIndex(sys.executable, f"{installed_version()}:{installed_commit()}", Reporter())
    yaml_functions = [
        f for f in where_mod.TreeContext.open(str(ws), None, Reporter()).yaml().functions
    ]
    groups: dict[str, list[dict[str, Any]]] = {}
    for f in yaml_functions:
        groups.setdefault(f["base"], []).append(f)
    for base in ("mm", "abs", "hardtanh"):
        request = where_mod._op_request(base, groups[base])
        assert index.lookup(base, request) == _ask_one_child(request), base
    mm_out = [f for f in groups["mm"] if f["name"] == "mm.out"]
    narrow = where_mod._op_request("mm", mm_out)
    whole = index.lookup("mm", where_mod._op_request("mm", groups["mm"]))
    assert whole is not None
    # (a child asked about mm.out alone also dumps the ops its entry points reach: unused)
    assert where_mod._narrowed(whole, narrow) == where_mod._narrowed(_ask_one_child(narrow), narrow)
    relu6 = _ask_one_child(
        {"entries": ["torch.nn.functional.relu6"], "ops": [], "record": True,
         "group_overloads": True}
    )  # fmt: skip
    assert index.entry("torch.nn.functional.relu6") == {
        **relu6["entries"][0],
        "query": "torch.nn.functional.relu6",
    }


def test_an_interpreter_without_torch_is_one_paragraph(clone_ws: Path, tmp_path: Path) -> None:
    from onboard.errors import OnboardError
    from onboard.report import Reporter
    from onboard.workflows.opsource.live_index import LiveIndex

    no_torch = tmp_path / "python-without-torch"
    no_torch.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')  # -S: no site-packages
    no_torch.chmod(0o755)
    with pytest.raises(OnboardError, match="could not answer onboard's torch questions") as info:
        where("trunc", workspace=str(clone_ws), python=str(no_torch))
    assert "No module named 'torch'" in info.value.message
    assert "import torch" in (info.value.next_step or "")
    index = LiveIndex(str(no_torch), f"{installed_version()}:{installed_commit()}", Reporter())
    assert not index.building.exists() and not index.path.exists()
