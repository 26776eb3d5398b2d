"""`onboard where`: an op's anatomy on a full-checkout-like and a reference-like
workspace, against the installed torch's live dispatch table."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures.events import gone
from fixtures.pytorch_repo import find_torch_dir
from opsource_helpers import (
    cache_fixture,  # noqa: F401 (a pytest fixture)
    clone_ws_fixture,  # noqa: F401 (a pytest fixture)
    installed_commit,
    installed_version,
    make_clone_workspace,
    private_cache_fixture,  # noqa: F401 (a pytest fixture)
    reference_ws_fixture,  # noqa: F401 (a pytest fixture)
    save_workspace,
    shared_cache_fixture,  # noqa: F401 (a pytest fixture)
)

from onboard.cli import cli
from onboard.crash import run_cli
from onboard.errors import BadInput, NoWorkspace
from onboard.report import Reporter
from onboard.workflows.opsource.native_yaml import NATIVE_FUNCTIONS, NativeEntry
from onboard.workflows.where import WhereRequest, parse_query, where

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
    result = where(WhereRequest.parse("trunc", workspace=str(clone_ws)))
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
    result = where(WhereRequest.parse("torch.nn.functional.linear", workspace=str(clone_ws)))
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
        where(WhereRequest.parse("trnc", workspace=str(clone_ws)))
    assert "trunc" in info.value.message
    assert run_cli(cli, ["where", "trnc", "--workspace", str(clone_ws)]) == 2
    assert "Closest names: trunc" in capsys.readouterr().err
    assert run_cli(cli, ["where", "mm.nope", "--json", "--workspace", str(clone_ws)]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["kind"] == "BadInput" and "mm.out" in error["message"]


def test_where_unknown_python_name(clone_ws: Path) -> None:
    with pytest.raises(BadInput) as info:
        where(WhereRequest.parse("torch.nn.functional.no_such_fn", workspace=str(clone_ws)))
    assert "does not exist" in info.value.message


def test_where_no_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NoWorkspace):
        where(WhereRequest.parse("trunc"))
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
    result = where(WhereRequest.parse("trunc", workspace=str(reference_ws)))
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
    # the Meta kernel is shown at its function (torch._refs.trunc; that file is not in
    # this small tree), registered through the Library in torch/_meta_registrations.py,
    # which is
    meta = [r for r in result.dispatch if r.key == "Meta"]
    assert meta and meta[0].implementation == "torch._refs.trunc"
    assert meta[0].location.path == "torch/_refs/__init__.py" and meta[0].location.url
    assert meta[0].registered_at is not None and meta[0].registered_at.in_checkout


def _declaring(checkout: Path, stub: str) -> dict[str, list[str]]:
    """Each header of the tree that declares ``stub``: the namespaces open at its
    DECLARE_DISPATCH, outermost first (``namespace at::native::cpublas {`` is three)."""
    found: dict[str, list[str]] = {}
    for path in checkout.rglob("*.h"):
        text = path.read_text(errors="replace")
        declared = re.search(rf"DECLARE_DISPATCH\([^;]*\b{stub}\b", text)
        if declared:
            opened = re.findall(r"namespace\s+([\w:]+)\s*\{", text[: declared.start()])
            found[str(path.relative_to(checkout))] = "::".join(opened).split("::")
    return found


def test_where_shows_the_dispatch_stub_the_kernel_calls_not_its_namesake(
    reference_ws: Path,
) -> None:
    # ATen has two DispatchStubs named copy_stub: copy_ (a function of at::native) calls
    # the one its own namespace declares, not BLAS's in at::native::cpublas.
    checkout = reference_ws / "pytorch"
    declaring = _declaring(checkout, "copy_stub")
    assert len(declaring) > 1, declaring  # the namesakes are in this tree
    own = {path for path, spaces in declaring.items() if spaces[-2:] == ["at", "native"]}
    assert len(own) == 1, declaring
    result = where(WhereRequest.parse("copy_", workspace=str(reference_ws)))
    declared = {k.location.path for k in result.kernels if k.role == "stub_declare"}
    assert declared == own
    assert not any("ambiguous" in k.detail for k in result.kernels)


def _cpu_wrapper_from_a_cpp_trace() -> tuple[str, str]:
    """(function, file) of mm's CPU kernel, as the binary names them in a C++ stack trace
    (torch itself, at test time): `... &at::(anonymous namespace)::wrapper_CPU_mm> ...
    from RegisterCPU_0.cpp:0`."""
    code = (
        "import torch\ntry:\n    torch.mm(torch.randn(2, 3), torch.randn(4, 5))\n"
        "except RuntimeError as e:\n    print(e)\n"
    )
    env = {**os.environ, "TORCH_SHOW_CPP_STACKTRACES": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    mo = re.search(r"::(wrapper_CPU_\w+)>.* from (Register\w+\.cpp):", out)
    assert mo, out[-2000:]
    return mo.group(1), mo.group(2)


@pytest.mark.slow
def test_where_generated_shows_the_wrapper_the_binary_runs_and_the_copy_to_open(
    clone_ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    function, filename = _cpu_wrapper_from_a_cpp_trace()
    result = where(WhereRequest.parse("mm", workspace=str(clone_ws), generated=True))
    cpu = next(r for r in result.dispatch if r.key == "CPU" and r.op == "aten::mm")
    assert cpu.implementation == function
    assert cpu.location.path == f"build/aten/src/ATen/{filename}"
    assert cpu.location.text is not None and f" {function}(" in cpu.location.text
    # the line the binary names is the backend's registration block, below the wrapper
    assert cpu.registered_at is not None and cpu.registered_at.line is not None
    assert cpu.registered_at.text == "TORCH_LIBRARY_IMPL(aten, CPU, m) {"
    assert cpu.location.line is not None and cpu.location.line < cpu.registered_at.line
    # the file is not in the checkout: the copy the user can open is named as such
    assert not (clone_ws / "pytorch" / cpu.location.path).exists()
    copy = cpu.location.copy
    assert copy is not None and copy.endswith(f"{filename}:{cpu.location.line}")
    lines = Path(copy.rsplit(":", 1)[0]).read_text().splitlines()
    assert f" {function}(" in lines[cpu.location.line - 1]
    assert run_cli(cli, ["where", "mm", "--workspace", str(clone_ws)]) == 0
    out = capsys.readouterr().out
    assert f"onboard's regenerated copy: {copy}" in out and function in out
    assert "--generated` regenerates" not in out  # nothing left to regenerate for build/


# --- kernels registered from Python ------------------------------------------------


def _def_line(path: Path, name: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if re.match(rf"\s*def {name}\(", text))


def test_python_meta_kernel_at_its_function_and_the_shadowed_cpp_one(clone_ws: Path) -> None:
    from fixtures.pytorch_repo import find_torch_dir

    site = find_torch_dir()
    result = where(WhereRequest.parse("mm", workspace=str(clone_ws)))
    meta = [r for r in result.dispatch if r.op == "aten::mm" and r.key == "Meta"]
    assert len(meta) == 1
    # Not the torch.library.Library(...) line every Meta kernel shares, but meta_mm itself.
    expected = _def_line(site / "_meta_registrations.py", "meta_mm")
    assert meta[0].location.label == f"torch/_meta_registrations.py:{expected}"
    assert meta[0].implementation == "torch._meta_registrations.meta_mm"
    assert meta[0].registered_at is not None
    library = _line_of_text(site / "_meta_registrations.py", "torch.library.Library(")
    assert meta[0].registered_at.label == f"torch/_meta_registrations.py:{library}"
    assert meta[0].via == "meta"

    trunc = where(WhereRequest.parse("trunc", workspace=str(clone_ws)))
    python_meta = next(r for r in trunc.dispatch if r.op == "aten::trunc" and r.key == "Meta")
    assert python_meta.implementation == "torch._refs.trunc"  # the ref doubles as the meta
    shadowed = [r for r in trunc.dispatch if r.op == "aten::trunc" and r.key == "Meta (inactive)"]
    assert len(shadowed) == 1 and shadowed[0].inactive
    assert re.fullmatch(
        r"build/aten/src/ATen/RegisterMeta(_\d+)?\.cpp:\d+", shadowed[0].location.label
    )
    assert shadowed[0].shadowed_by == "the Python Meta kernel above runs instead"
    decompositions = [k for k in trunc.kernels if k.role == "decomposition"]
    assert [k.name for k in decompositions] == ["torch._refs.trunc"]
    res = CliRunner().invoke(cli, ["where", "trunc", "--workspace", str(clone_ws)])
    assert "Meta (inactive) (trunc" in res.output  # shown without -v: it is not what runs
    assert "not run: the Python Meta kernel above runs instead" in res.output
    # With the generated sources at hand the row points at torchgen's wrapper, and is
    # still the one that does not run.
    generated = where(WhereRequest.parse("trunc", workspace=str(clone_ws), generated=True))
    shadowed = [
        r for r in generated.dispatch if r.op == "aten::trunc" and r.key == "Meta (inactive)"
    ]
    assert len(shadowed) == 1 and shadowed[0].implementation == "wrapper_Meta_trunc"
    assert shadowed[0].shadowed_by == "the Python Meta kernel above runs instead"


def _line_of_text(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if needle in text)


def test_links_only_for_files_upstream_has(tmp_path: Path) -> None:
    """A file that exists only on the local branch gets no GitHub link; a changed one
    is linked without a line anchor (its lines moved)."""
    from fixtures.pytorch_repo import build_pytorch_repo, git

    from onboard.workflows.opsource.paths import SourceMap

    root = tmp_path / "ws"
    root.mkdir()
    repo = build_pytorch_repo(root / "pytorch", commits=2)
    ws = save_workspace(root, "clone")
    # The installed commit is the checkout's HEAD, as after `onboard setup`.
    from dataclasses import replace

    ws = replace(ws, commit=repo.head)
    checkout = root / "pytorch"
    git("switch", "-q", "-c", "onboard/new-op-my_frac", cwd=checkout)
    (checkout / "aten/src/ATen/native/MyFrac.cpp").write_text("// new\n")
    header = checkout / "aten/src/ATen/native/UnaryOps.h"
    header.write_text(header.read_text() + "DECLARE_DISPATCH(unary_fn, my_frac_stub)\n")
    git("add", "-A", cwd=checkout)
    git("commit", "-q", "-m", "my_frac", cwd=checkout)
    smap = SourceMap(ws)
    new = smap.loc("aten/src/ATen/native/MyFrac.cpp", 1)
    assert new.url is None and new.local_change == "added"
    assert "local: not in the upstream commit" in new.status
    changed = smap.loc("aten/src/ATen/native/UnaryOps.h", 5)
    assert changed.local_change == "modified"
    assert changed.url == (
        f"https://github.com/pytorch/pytorch/blob/{repo.head}/aten/src/ATen/native/UnaryOps.h"
    )
    same = smap.loc("aten/src/ATen/native/native_functions.yaml", 3)
    assert same.local_change is None and same.url and same.url.endswith("#L3")


# --------------------------------------------------------------------------
# Caches that do not have their shape, and caches that cannot be written

# Valid JSON whose values have the wrong types: what a hand edit, another
# format or a half-synced home leaves. Each made `where` exit 3 until --refresh.
_WRONG_TYPES = {
    "yaml-": lambda d: d["functions"][0].update(line="12"),
    "live-": lambda d: d.update(entries={"trunc": True}),
    "kernels-": lambda d: d["macros"][0].__setitem__(1, "44"),
}


def _answer(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in ("cache_warm", "seconds")}


@pytest.mark.parametrize("prefix", sorted(_WRONG_TYPES))
def test_a_cache_entry_of_the_wrong_shape_is_rebuilt_silently(
    clone_ws: Path,
    private_cache: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
    prefix: str,
) -> None:
    from onboard.cache import matches
    from onboard.workflows.opsource import kernels, live, native_yaml

    shapes = {"yaml-": native_yaml.SHAPE, "live-": live.SHAPE, "kernels-": kernels.SHAPE}
    argv = ["where", "trunc", "--workspace", str(clone_ws), "--json"]
    assert run_cli(cli, argv) == 0  # the shared cache has every entry now
    capsys.readouterr()
    cache = private_cache()
    assert run_cli(cli, argv) == 0  # the answer from this test's own copy, untouched
    before = json.loads(capsys.readouterr().out)
    entries = sorted(cache.glob(prefix + "*.json"))
    assert entries
    for path in entries:
        data = json.loads(path.read_text())
        _WRONG_TYPES[prefix](data)
        assert not matches(data, shapes[prefix])
        path.write_text(json.dumps(data))
    assert run_cli(cli, argv) == 0
    out, err = capsys.readouterr()
    assert _answer(json.loads(out)) == _answer(before)
    assert "Traceback" not in err and "--refresh" not in err
    if prefix != "live-":  # a live answer may come from the whole-table index instead
        assert any(matches(json.loads(p.read_text()), shapes[prefix]) for p in entries)


def _unwritable_cache(tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """XDG_CACHE_HOME where nothing can be written; the temp folder under tmp_path."""
    if how == "chmod-500":
        cache = tmp_path / "ro-cache"
        (cache / "onboard").mkdir(parents=True)
        for folder in (cache / "onboard", cache):
            folder.chmod(0o500)
    else:  # a path under a file: ENOTDIR, for root too
        (tmp_path / "a-file").write_text("")
        cache = tmp_path / "a-file" / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


# root writes through mode 0500: for root, the path under a file stands for both
@pytest.mark.parametrize("how", ["under-a-file"] + (["chmod-500"] if os.geteuid() else []))
def test_an_unwritable_cache_folder_costs_speed_not_the_command(
    clone_ws: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:
    from onboard.workflows.opsource import codegen
    from onboard.workflows.opsource.context import TreeContext

    temp = _unwritable_cache(tmp_path, how, monkeypatch)
    argv = ["where", "trunc", "--workspace", str(clone_ws), "--json"]
    assert run_cli(cli, argv) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["op"] == "trunc"
    # The second run finds what the first one cached in the private temp folder.
    assert run_cli(cli, argv) == 0
    warm = json.loads(capsys.readouterr().out)["cache_warm"]
    assert warm and all(warm.values()), warm
    cached = sorted(p.name.split("-")[0] for p in (temp / f"onboard-{os.getuid()}").rglob("*.json"))
    assert {"kernels", "live", "yaml"} <= set(cached)
    assert (temp / f"onboard-{os.getuid()}").stat().st_mode & 0o777 == 0o700
    # --generated writes ~80 MB of sources there too (instead of failing on mkdir)
    ctx = TreeContext.open(str(clone_ws), None, Reporter())
    assert codegen.generated_root(ctx.checkout, ctx.tree_id).is_relative_to(temp)


@pytest.mark.slow
def test_where_generated_with_an_unwritable_cache_regenerates_in_a_private_temp_folder(
    clone_ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = _unwritable_cache(tmp_path, "under-a-file", monkeypatch)
    result = where(WhereRequest.parse("trunc", workspace=str(clone_ws), generated=True))
    cpu = next(r for r in result.dispatch if r.key == "CPU" and r.op == "aten::trunc")
    assert cpu.location.local is not None and Path(cpu.location.local).is_relative_to(temp)
    assert cpu.implementation == "wrapper_CPU_trunc"
    assert cpu.registered_at is not None
    assert cpu.registered_at.text == "TORCH_LIBRARY_IMPL(aten, CPU, m) {"


def test_where_from_inside_the_checkout_asks_the_installed_torch(
    clone_ws: Path,
    private_cache: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `cd WS/pytorch; onboard where trunc`: the children that import torch and
    # torchgen (the live dispatcher, the yaml parse) must not get its torch/.
    from onboard import torchenv

    checkout = clone_ws / "pytorch"
    assert torchenv.shadowing_tree(checkout) is not None  # an uncompiled torch/ is there
    private_cache("live-*", "yaml-*", "generated-*")
    monkeypatch.chdir(checkout)
    assert run_cli(cli, ["where", "trunc", "--json"]) == 0, capsys.readouterr().err
    data = json.loads(capsys.readouterr().out)
    assert data["cache_warm"]["yaml"] is False  # torchgen ran, from a neutral folder
    assert any(r["key"] == "CPU" for r in data["dispatch_table"])


# --------------------------------------------------------------------------
# The live index: every op answered by one child, kept per interpreter and torch


def _index_file(cache_root: Path) -> Path | None:
    found = sorted((cache_root / "onboard" / "opsource").glob("live-index-*.jsonl"))
    return found[0] if found else None


def _wait_for_index(cache_root: Path, messages: list[str], timeout: float = 900.0) -> Path:
    """The index, once the child that writes it (its pid in the run's messages) has ended."""
    pids = [int(m) for m in re.findall(r"in the background \(pid (\d+)\)", "\n".join(messages))]
    assert len(pids) == 1, messages
    assert gone(pids[0], timeout), "the child indexing every op never ended"
    found = _index_file(cache_root)
    assert found is not None, "the live index was never written"
    return found


def _fake_index(path: Path, *, mtime_ns: int, rows: dict[str, Any]) -> None:
    torch_file = find_torch_dir() / "__init__.py"
    body = b"".join((json.dumps(row) + "\n").encode() for row in rows.values())
    offsets, at = {}, 0
    for base, row in rows.items():
        size = len((json.dumps(row) + "\n").encode())
        offsets[base] = [at, size]
        at += size
    from onboard.workflows.opsource.live_index import FORMAT

    header = {
        "format": FORMAT,
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
    """What the per-op child answers to ``request``, asked in an interpreter of its own."""
    from onboard import proc

    asked = proc.ask_child(
        sys.executable, "_live_child.py", json.dumps(request), timeout=600, what="per-op child"
    )
    answer: dict[str, Any] = asked.data
    return answer


def test_the_index_child_records_without_importing_dynamo(tmp_path: Path) -> None:
    """The index child runs the per-op code after its import hook: the same answers
    as a plain interpreter gives, without the seconds of importing torch._dynamo
    that torch's wrappers of its Python kernels would spend on a first call."""
    from onboard import proc
    from onboard.children import onboard_answer

    source = (proc.CHILDREN / "_live_index_child.py").read_text()
    prelude = source[: source.index("import torch  # noqa: E402")]
    script = (
        prelude
        + "import torch\n"
        + (proc.CHILDREN / "_live_child.py").read_text()
        + "\nprint('DYNAMO', 'torch._dynamo' in sys.modules)\n"
    )
    hooked_child = tmp_path / "hooked_child.py"
    hooked_child.write_text(script)
    request = {
        "entries": ["torch.add", "torch.trunc", "F.gelu", "torch.Tensor.add_", "torch.sum"],
        "ops": ["aten::add.Tensor"],
        "record": True,
        "group_overloads": True,
    }
    out = subprocess.run(
        proc.child_command(sys.executable, hooked_child, json.dumps(request)),
        capture_output=True, text=True, timeout=600, check=True,
    ).stdout  # fmt: skip
    assert "DYNAMO False" in out.splitlines()
    [hooked], garbled = onboard_answer.read(out)
    assert garbled == 0
    plain = _ask_one_child(request)
    assert [e["top_ops"] for e in hooked["entries"]] == [
        ["aten::add"], ["aten::trunc"], ["aten::gelu"], ["aten::add_"], ["aten::sum"]
    ]  # fmt: skip
    assert hooked["entries"] == plain["entries"]
    assert hooked["python_kernels"] == plain["python_kernels"]
    assert hooked["dumps"] == plain["dumps"]


@pytest.mark.slow
def test_live_index_answers_as_a_child_asked_about_one_op(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onboard.report import Reporter
    from onboard.workflows.opsource.context import TreeContext
    from onboard.workflows.opsource.live_index import LiveIndex
    from onboard.workflows.where.live import narrowed, op_request

    cache_root = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_root))
    ws = tmp_path / "ws"
    make_clone_workspace(ws)
    first = Reporter(verbose=True)
    where(WhereRequest.parse("trunc", workspace=str(ws)), first)
    assert any("indexing every op" in m for m in first.messages)
    _wait_for_index(cache_root, first.messages)
    # Ops never asked are answered from the index: no child.
    for op in ("aten::mm.out", "abs", "torch.nn.functional.relu6"):
        reporter = Reporter()
        where(WhereRequest.parse(op, workspace=str(ws)), reporter)
        assert not any(m.startswith("Asking the installed torch") for m in reporter.messages)
    # What the index holds is what a child asked about that op alone answers.
    index = LiveIndex(sys.executable, f"{installed_version()}:{installed_commit()}", Reporter())
    yaml_functions = [f for f in TreeContext.open(str(ws), None, Reporter()).yaml().functions]
    groups: dict[str, list[NativeEntry]] = {}
    for f in yaml_functions:
        groups.setdefault(f.base, []).append(f)
    for base in ("mm", "abs", "hardtanh"):
        request = op_request(base, groups[base])
        assert index.lookup(base, request) == _ask_one_child(request), base
    mm_out = [f for f in groups["mm"] if f.name == "mm.out"]
    narrow = op_request("mm", mm_out)
    whole = index.lookup("mm", op_request("mm", groups["mm"]))
    assert whole is not None
    # (a child asked about mm.out alone also dumps the ops its entry points reach: unused)
    assert narrowed(whole, narrow) == narrowed(_ask_one_child(narrow), narrow)
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
        where(WhereRequest.parse("trunc", workspace=str(clone_ws), python=str(no_torch)))
    assert "No module named 'torch'" in info.value.message
    assert "import torch" in (info.value.next_step or "")
    index = LiveIndex(str(no_torch), f"{installed_version()}:{installed_commit()}", Reporter())
    assert not index.building.exists() and not index.path.exists()


def test_the_index_child_writes_the_format_its_reader_accepts() -> None:
    import re as _re

    from onboard import proc
    from onboard.workflows.opsource import live_index

    child = (proc.CHILDREN / "_live_index_child.py").read_text()
    written = _re.search(r"^FORMAT = (\d+)", child, _re.M)
    assert written is not None and int(written.group(1)) == live_index.FORMAT


def test_an_entry_point_with_no_recorded_op_says_why_without_v(
    clone_ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    assert run_cli(cli, ["where", "scatter_add", "--workspace", str(clone_ws)]) == 0
    out = capsys.readouterr().out
    unknown = [ln for ln in out.splitlines() if ln.rstrip().endswith("-> ?")]
    # scatter_add's index must be an integer tensor (the schema's dummy arguments are
    # float meta tensors) and it takes an int dim: no op on (t, t) either
    assert unknown
    meta = torch.empty(2, device="meta")
    with pytest.raises(TypeError) as info:
        torch.scatter_add(meta, meta)  # type: ignore[call-overload]
    assert f"failed: TypeError: {info.value}" in out
    assert out.count("? = not recorded:") == len(unknown)


# --- Python names whose call on meta tensors fails ------------------------------------


def test_a_python_name_whose_meta_call_fails_keeps_the_table_of_its_binding(
    reference_ws: Path,
) -> None:
    import torch

    meta = torch.empty(2, 2, device="meta")
    with pytest.raises(NotImplementedError):  # no Meta kernel: the call onboard makes fails
        torch.masked_select(meta, meta.bool())
    result = where(WhereRequest.parse("torch.masked_select", workspace=str(reference_ws)))
    assert result.op == "masked_select"
    keys = {r.key for r in result.dispatch if r.op == "aten::masked_select"}
    dump = torch._C._dispatch_dump("aten::masked_select")
    expected = {ln.split(":", 1)[0] for ln in dump.splitlines() if "registered at" in ln}
    assert keys and keys == expected - {"debug"}
    assert any(
        n.startswith("Calling torch.masked_select on meta tensors failed") for n in result.notes
    )
    # torch.fft.fftfreq is torch._C._fft.fft_fftfreq: the yaml's fft_fftfreq, not "fftfreq"
    fftfreq = where(WhereRequest.parse("torch.fft.fftfreq", workspace=str(reference_ws)))
    assert torch.fft.fftfreq.__name__ == "fft_fftfreq"
    assert fftfreq.op == "fft_fftfreq"
    assert {r.op for r in fftfreq.dispatch} == {"aten::fft_fftfreq", "aten::fft_fftfreq.out"}


def test_an_in_place_method_is_its_in_place_op(reference_ws: Path) -> None:
    result = where(WhereRequest.parse("Tensor.scatter_add_", workspace=str(reference_ws)))
    assert result.op == "scatter_add_"
    # the in-place op and the structured out= entry it delegates to, not aten::scatter_add
    assert [y.name for y in result.yaml_entries] == ["scatter_add_", "scatter_add.out"]
    assert "aten::scatter_add" not in {r.op for r in result.dispatch}
    res = CliRunner().invoke(
        cli, ["where", "Tensor.scatter_add_", "--workspace", str(reference_ws)]
    )
    assert res.output.startswith("Tensor.scatter_add_ -> aten::scatter_add_ ")


def test_the_opinfo_named_as_the_python_function(reference_ws: Path) -> None:
    import ast

    source = (find_torch_dir() / "testing/_internal/common_methods_invocations.py").read_text()
    lines = {
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "OpInfo"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "nn.functional.gelu"
    }
    assert len(lines) == 1
    for query in ("torch.nn.functional.gelu", "gelu"):
        result = where(WhereRequest.parse(query, workspace=str(reference_ws)))
        assert lines <= {o.line for o in result.opinfo}, query


def test_output_differentiability_is_not_a_formula(reference_ws: Path) -> None:
    import yaml

    path = reference_ws / "pytorch" / "tools/autograd/derivatives.yaml"
    entries = yaml.safe_load(path.read_text())
    expected = {
        e["name"]: e["output_differentiability"] for e in entries if e["name"].startswith("any(")
    }
    result = where(WhereRequest.parse("any", workspace=str(reference_ws)))
    found = {d.name: d for d in result.derivatives}
    for name, flags in expected.items():
        assert "output_differentiability" not in found[name].formulas
        assert found[name].output_differentiability == flags
    # per-key formulas under `dispatch:` are shown under their key, not as one dict
    mean = next(e for e in entries if e["name"].startswith("mean(Tensor self, *"))
    shown = {
        d.name: d
        for d in where(WhereRequest.parse("mean", workspace=str(reference_ws))).derivatives
    }
    formulas = shown[mean["name"]].formulas
    assert "dispatch" not in formulas
    assert formulas["self"] == mean["dispatch"]["Default"]["self"]
    assert (
        formulas["self [AutogradNestedTensor]"] == mean["dispatch"]["AutogradNestedTensor"]["self"]
    )
