"""`onboard locate`: the trace parser (on real output of the installed torch), the
check index, and the three input forms on a full-checkout-like and a
reference-like workspace."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from opsource_helpers import (
    DATA,
    cache_fixture,  # noqa: F401 (a pytest fixture)
    clone_ws_fixture,  # noqa: F401 (a pytest fixture)
    installed_commit,
    make_clone_workspace,
    private_cache_fixture,  # noqa: F401 (a pytest fixture)
    reference_ws_fixture,  # noqa: F401 (a pytest fixture)
    shared_cache_fixture,  # noqa: F401 (a pytest fixture)
)

from onboard.cli import cli
from onboard.crash import run_cli
from onboard.errors import BadInput, NoWorkspace
from onboard.workflows.locate import (
    FOUND,
    MATCHED,
    NO_ERROR,
    NO_MATCH,
    NOT_TORCH,
    LocateRequest,
    locate,
)
from onboard.workflows.opsource import checks, cpp_trace

MM_MESSAGE = "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
LINALG = "aten/src/ATen/native/LinearAlgebra.cpp"


# --- the parser, on output captured from the installed torch -----------------


def test_parse_real_mm_trace() -> None:
    trace = cpp_trace.parse((DATA / "mm_shape_error.txt").read_text())
    assert trace.exc_type == "RuntimeError"
    assert trace.message == MM_MESSAGE
    assert trace.raised == cpp_trace.Site(
        "raised", "/__w/pytorch/pytorch/aten/src/ATen/native/LinearAlgebra.cpp", 204, "meta"
    )
    assert trace.python_frames[-1].line == 5
    assert trace.python_frames[-1].text == "print(torch.mm(a, b))"
    layers = [
        cpp_trace.classify(f.symbol, f.file).layer
        for f in reversed(trace.cpp_frames)
        if cpp_trace.classify(f.symbol, f.file).layer
    ]
    # caller first: binding, dispatcher, autograd, dispatcher, backend wrapper, meta, check
    assert layers[:7] == [
        "python binding",
        "dispatcher",
        "autograd",
        "autograd",
        "dispatcher",
        "backend wrapper",
        "meta",
    ]
    assert set(layers[7:]) == {"check"}
    wrapper = next(f for f in trace.cpp_frames if "wrapper_CPU_mm" in f.symbol)
    role = cpp_trace.classify(wrapper.symbol, wrapper.file)
    assert (role.backend, role.op, role.glue, wrapper.file) == (
        "CPU",
        "mm",
        True,
        "RegisterCPU_0.cpp",
    )


def test_parse_real_warning_and_header_check() -> None:
    trace = cpp_trace.parse((DATA / "view_infer_with_warning.txt").read_text())
    assert trace.message == "only one dimension can be inferred"
    assert trace.raised is not None and trace.raised.path.endswith("aten/src/ATen/InferSize.h")
    assert (trace.raised.line, trace.raised.func) == (30, "infer_size_impl")
    triggered = [s for s in trace.sites if s.kind == "triggered"]
    assert len(triggered) == 1
    assert triggered[0].path.endswith("aten/src/ATen/native/TensorShape.cpp")
    assert trace.warnings and trace.warnings[0][0] == "UserWarning"


def test_parse_legacy_frames_and_internal_assert() -> None:
    text = (
        "RuntimeError: t.is_contiguous() INTERNAL ASSERT FAILED at "
        '"/__w/pytorch/pytorch/aten/src/ATen/native/Foo.cpp":12, please report a bug to PyTorch.\n'
        "frame #0: c10::detail::torchInternalAssertFail(char const*, char const*, unsigned int, "
        "char const*, std::string const&) + 0x60 (0x7f00 in /x/lib/libc10.so)\n"
        "frame #1: at::native::foo(at::Tensor const&) + 0x1 (0x7f01 in /x/lib/libtorch_cpu.so)\n"
    )
    trace = cpp_trace.parse(text)
    assert trace.raised == cpp_trace.Site(
        "internal_assert", "/__w/pytorch/pytorch/aten/src/ATen/native/Foo.cpp", 12
    )
    assert [f.index for f in trace.cpp_frames] == [0, 1]
    assert cpp_trace.classify(trace.cpp_frames[1].symbol).layer == "kernel"
    assert cpp_trace.classify(trace.cpp_frames[0].symbol).layer == "check"


# --- the check index -----------------------------------------------------------


def test_scan_cpp_literal_pieces() -> None:
    text = (
        "#define TORCH_CHECK(cond, ...) \\\n"
        "  if (!(cond)) ::c10::detail::torchCheckFail(__func__, __FILE__, __LINE__, __VA_ARGS__)\n"
        "void f() {\n"
        '  TORCH_CHECK(a == "x(", "first " "joined", n, // a comment, with a comma\n'
        '      " and \\"quoted\\" ", m);\n'
        "  TORCH_CHECK_EQ(a, b);\n"
        '  TORCH_CHECK_WITH(IndexError, i < n, "index ", i, " is out of bounds");\n'
        '  TORCH_WARN("deprecated: ", what);\n'
        "}\n"
    )
    record = checks.scan_cpp(text)
    # Every argument's literals are kept: the family (read from the #define) says which
    # arguments are the message.
    assert record["s"] == [
        [4, "TORCH_CHECK", [["x("], ["first joined"], [], [' and "quoted" '], []], None],
        [7, "TORCH_CHECK_WITH", [[], [], ["index "], [], [" is out of bounds"]], "IndexError"],
        [8, "TORCH_WARN", [["deprecated: "], []], None],
    ]
    assert [d[1] for d in record["d"]] == ["TORCH_CHECK"]


def test_scan_python_fstring_pieces() -> None:
    text = (
        "def g(x):\n"
        "    if x:\n"
        '        raise ValueError(f"expected {x!r} to be "\n'
        "                         'positive, got {}'.format(x))\n"
        '    torch._check(x, lambda: f"size {x} too big")\n'
    )
    assert checks.scan_python(text) == [
        [3, "ValueError", ["expected ", " to be positive, got "]],
        [5, "torch._check", ["size ", " too big"]],
    ]


def test_match_pieces_in_order() -> None:
    pieces = ["mat1 and mat2 shapes cannot be multiplied (", "x", " and ", "x", ")"]
    matched, missed = checks.match_pieces(MM_MESSAGE, pieces)
    assert (matched, missed) == (51, 0)
    # the same pieces out of order do not all match
    matched, missed = checks.match_pieces(MM_MESSAGE, [")", "mat1 and mat2"])
    assert missed == len("mat1 and mat2")


# --- the three forms on a full (fixture) checkout ------------------------------


def test_locate_command_walks_the_chain_cli(clone_ws: Path, tmp_path: Path) -> None:
    script = tmp_path / "repro.py"
    script.write_text("import torch\n\nout = torch.mm(torch.randn(2, 3), torch.randn(4, 5))\n")
    proc = subprocess.run(
        [
            sys.executable, "-m", "onboard", "locate", "--json", "--workspace", str(clone_ws),
            "--", sys.executable, str(script),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["verdict"] == FOUND
    assert data["check"]["label"] == f"{LINALG}:204"
    assert data["check_function"] == "meta"
    assert "mat1 and mat2 shapes cannot be multiplied" in data["check"]["text"]
    assert data["check"]["url"] == (
        f"https://github.com/pytorch/pytorch/blob/{installed_commit()}/{LINALG}#L204"
    )
    layers = [layer["layer"] for layer in data["chain"]]
    assert layers[0] == "python" and data["chain"][0]["location"]["line"] == 3
    for expected in (
        "python binding",
        "autograd",
        "dispatcher",
        "backend wrapper",
        "meta",
        "check",
    ):
        assert expected in layers
    assert layers.index("python binding") < layers.index("autograd") < layers.index("meta")
    meta = data["chain"][layers.index("meta")]
    assert meta["location"]["label"] == f"{LINALG}:201"  # TORCH_META_FUNC(mm)
    autograd = data["chain"][layers.index("autograd")]
    assert any(r["path"] == "tools/autograd/derivatives.yaml" for r in autograd["related"])


def test_locate_pasted_trace(clone_ws: Path) -> None:
    result = locate(
        LocateRequest(text=(DATA / "mm_shape_error.txt").read_text(), workspace=str(clone_ws))
    )
    assert result.verdict == FOUND and result.exit_code == 0
    assert result.check is not None and result.check.label == f"{LINALG}:204"
    assert [layer.layer for layer in result.chain][-2:] == ["meta", "check"]
    assert result.chain[-1].name == "TORCH_CHECK"


def test_locate_message_on_full_checkout(clone_ws: Path) -> None:
    result = locate(LocateRequest(message=MM_MESSAGE, workspace=str(clone_ws)))
    assert result.verdict == MATCHED
    best = result.candidates[0]
    assert best.location.label == f"{LINALG}:204"
    assert best.function == "TORCH_META_FUNC(mm)"
    # addmm's check has the same words but fewer literal pieces: ranked below
    assert [c.location.line for c in result.candidates][:2] == [204, 119]


def test_a_check_index_of_the_wrong_shape_is_rebuilt_silently(
    clone_ws: Path, private_cache: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from onboard.cache import matches

    assert (
        locate(LocateRequest(message=MM_MESSAGE, workspace=str(clone_ws))).verdict == MATCHED
    )  # built
    (entry,) = private_cache().glob("checks-*.json")
    data = json.loads(entry.read_text())
    # valid JSON, wrong types: message pieces as one string, a line as text
    data["files"][LINALG] = [["204", "TORCH_CHECK", "mat1 and mat2 shapes"]]
    entry.write_text(json.dumps(data))
    assert run_cli(cli, ["locate", "--workspace", str(clone_ws), "--json", MM_MESSAGE]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["candidates"][0]["location"]["line"] == 204
    assert "Traceback" not in err
    assert matches(json.loads(entry.read_text()), checks.SHAPE)


def test_a_command_run_inside_the_checkout_is_told_why_torch_breaks(
    clone_ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The user's command runs where they stand (as without onboard): there,
    # Python imports the checkout's uncompiled torch/; the answer says so.
    monkeypatch.chdir(clone_ws / "pytorch")
    result = locate(
        LocateRequest(command=[sys.executable, "-c", "import torch"], workspace=str(clone_ws))
    )
    assert result.command_exit != 0
    assert any("imports it instead of the installed torch" in x for x in result.limitations)
    monkeypatch.chdir(clone_ws)
    elsewhere = locate(
        LocateRequest(command=[sys.executable, "-c", "import torch"], workspace=str(clone_ws))
    )
    assert elsewhere.command_exit == 0 and not elsewhere.limitations


def test_locate_message_cli_json(clone_ws: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(
        cli,
        ["locate", "--json", "--workspace", str(clone_ws),
         "trunc is not supported for complex inputs, got dtype ComplexFloat"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["candidates"][0]["location"]["path"] == "aten/src/ATen/native/UnaryOps.cpp"
    assert data["candidates"][0]["function"] == "TORCH_META_FUNC(trunc)"


def test_locate_stdin_cli(clone_ws: Path) -> None:
    res = CliRunner().invoke(
        cli,
        ["locate", "--workspace", str(clone_ws), "-"],
        input=(DATA / "mm_shape_error.txt").read_text(),
    )
    assert res.exit_code == 0, res.output
    assert f"{LINALG}:204" in res.output


def test_check_index_follows_new_files(tmp_path: Path) -> None:
    """A check added after the index was built is found without --refresh."""
    root = tmp_path / "ws"
    make_clone_workspace(root)
    message = "onboard test: frobnicate expects 3 dims, got 5"
    assert locate(LocateRequest(message=message, workspace=str(root))).verdict == NO_MATCH
    new = root / "pytorch/aten/src/ATen/native/sparse/Frobnicate.cpp"
    new.parent.mkdir(parents=True)
    new.write_text(
        "namespace at::native {\n"
        "void frobnicate(const Tensor& t) {\n"
        '  TORCH_CHECK(t.dim() == 3, "onboard test: frobnicate expects 3 dims, got ", t.dim());\n'
        "}\n"
        "} // namespace at::native\n"
    )
    result = locate(LocateRequest(message=message, workspace=str(root)))
    assert result.verdict == MATCHED
    assert result.candidates[0].location.label == "aten/src/ATen/native/sparse/Frobnicate.cpp:3"
    assert result.candidates[0].function == "frobnicate"


# --- the reference-like tree: checks that live in headers -----------------------


def test_locate_message_on_reference_tree_header_check(reference_ws: Path) -> None:
    result = locate(
        LocateRequest(message="only one dimension can be inferred", workspace=str(reference_ws))
    )
    assert result.verdict == MATCHED
    best = result.candidates[0]
    # The binary says InferSize.h:30; the installed header's guard line is not counted.
    assert best.location.label == "aten/src/ATen/InferSize.h:30"
    assert best.location.in_checkout
    assert "only one dimension can be inferred" in (best.location.text or "")


def test_locate_pasted_trace_on_reference_tree(reference_ws: Path) -> None:
    result = locate(
        LocateRequest(
            text=(DATA / "view_infer_with_warning.txt").read_text(), workspace=str(reference_ws)
        )
    )
    assert result.verdict == FOUND
    assert result.check is not None and result.check.label == "aten/src/ATen/InferSize.h:30"
    assert "TORCH_CHECK(!infer_dim" in (result.check.text or "")
    assert result.warnings[0].location.path == "aten/src/ATen/native/TensorShape.cpp"
    assert result.warnings[0].category == "UserWarning"
    assert (result.warnings[0].message or "").startswith("The use of `x.T` on tensors")


def test_locate_cpp_site_on_reference_tree_says_what_is_missing(reference_ws: Path) -> None:
    result = locate(
        LocateRequest(text=(DATA / "mm_shape_error.txt").read_text(), workspace=str(reference_ws))
    )
    assert result.verdict == FOUND
    assert result.check is not None and not result.check.in_checkout
    assert result.check.url and result.check.url.endswith(f"{LINALG}#L204")
    assert result.limitations and "needs a full checkout" in result.limitations[0]


def test_python_raise_in_torch(clone_ws: Path) -> None:
    # real output: F.interpolate(..., size=3, scale_factor=2.0) raises in torch/nn/functional.py
    result = locate(
        LocateRequest(
            text=(DATA / "interpolate_value_error.txt").read_text(), workspace=str(clone_ws)
        )
    )
    assert result.verdict == FOUND and result.exc_type == "ValueError"
    assert result.check is not None and result.check.path == "torch/nn/functional.py"
    assert result.check.in_checkout  # the fixture holds the wheel's functional.py
    assert (result.check.text or "").strip().startswith("raise ValueError(")
    assert result.check_function == "interpolate"
    assert [layer.layer for layer in result.chain] == ["python", "python"]


def test_warning_only(clone_ws: Path) -> None:
    # real output: x.T on a 3-D tensor warns from TensorShape.cpp (TORCH_WARN_ONCE)
    result = locate(
        LocateRequest(text=(DATA / "transpose_warning.txt").read_text(), workspace=str(clone_ws))
    )
    assert result.verdict == FOUND and result.exc_type == "UserWarning"
    assert result.check is not None
    assert result.check.path == "aten/src/ATen/native/TensorShape.cpp"
    assert not result.check.in_checkout and result.check.url


# --- bad and empty inputs ---------------------------------------------------------


def test_message_matching_nothing(clone_ws: Path) -> None:
    result = locate(
        LocateRequest(message="the flux capacitor is not charged", workspace=str(clone_ws))
    )
    assert result.verdict == NO_MATCH and result.exit_code == 1
    assert result.next_step and "onboard locate -- python repro.py" in result.next_step


def test_traceback_that_never_enters_torch(clone_ws: Path) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 7, in <module>\n'
        "    ratio = hits / total\n"
        "ZeroDivisionError: division by zero\n"
    )
    result = locate(LocateRequest(text=text, workspace=str(clone_ws)))
    assert result.verdict == NOT_TORCH and result.exit_code == 1
    assert result.explanation and "never enters torch" in result.explanation
    assert "/home/u/train.py:7" in result.explanation


def test_command_that_succeeds(clone_ws: Path) -> None:
    result = locate(
        LocateRequest(command=[sys.executable, "-c", "print('fine')"], workspace=str(clone_ws))
    )
    assert result.verdict == NO_ERROR and result.exit_code == 1
    assert result.explanation and "exited 0" in result.explanation


def test_empty_message_is_bad_input(clone_ws: Path) -> None:
    with pytest.raises(BadInput):
        locate(LocateRequest(message="   ", workspace=str(clone_ws)))


@pytest.mark.parametrize(
    "args",
    [
        ["locate"],  # nothing to locate
        ["locate", "some message", "--", "python", "x.py"],  # both forms
        ["locate", "--"],  # no command after --
    ],
)
def test_bad_cli_inputs_exit_2(clone_ws: Path, args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "onboard", *args[:1], "--workspace", str(clone_ws), *args[1:]],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "onboard locate" in proc.stderr


def test_no_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NoWorkspace):
        locate(LocateRequest(message=MM_MESSAGE))
    assert run_cli(cli, ["locate", MM_MESSAGE]) == 1


def test_message_matching_nothing_cli_exit_1(
    clone_ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["locate", "--json", "--workspace", str(clone_ws), "no torch check says this"]
    assert run_cli(cli, argv) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == NO_MATCH and not data["ok"]


# --- message-only answers say how sure they are (real errors of the installed torch) ---

_REAL_ERRORS = """
import json, torch
out = {}
def grab(key, fn):
    try:
        fn()
    except Exception as exc:
        out[key] = [type(exc).__name__, str(exc)]
grab("view", lambda: torch.arange(6).view(4, 2))
grab("sgd", lambda: torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=-0.1))
grab("buffer", lambda: torch.nn.Module().register_buffer("a.b", None))
print(json.dumps(out))
"""
# Files of the wheel put back at their repo paths (repo path, path under site-packages).
_TRUTH_TREE = (
    ("c10/util/Exception.h", "torch/include/c10/util/Exception.h"),
    ("c10/core/SymBool.h", "torch/include/c10/core/SymBool.h"),
    ("torch/csrc/Exceptions.h", "torch/include/torch/csrc/Exceptions.h"),
    ("aten/src/ATen/InferSize.h", "torch/include/ATen/InferSize.h"),
    (
        "torch/csrc/api/include/torch/optim/sgd.h",
        "torch/include/torch/csrc/api/include/torch/optim/sgd.h",
    ),
    ("torch/optim/sgd.py", "torch/optim/sgd.py"),
    ("torch/optim/adam.py", "torch/optim/adam.py"),
    ("torch/nn/modules/module.py", "torch/nn/modules/module.py"),
    ("torch/__init__.py", "torch/__init__.py"),
)


@pytest.fixture(scope="module", name="real_errors")
def real_errors_fixture() -> dict[str, list[str]]:
    """What the installed torch raises, with the C++ site it names (TORCH_SHOW_CPP_STACKTRACES)."""
    import os

    proc = subprocess.run(
        [sys.executable, "-c", _REAL_ERRORS],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TORCH_SHOW_CPP_STACKTRACES": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    data: dict[str, list[str]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return data


@pytest.fixture(scope="module", name="truth_ws")
def truth_ws_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A full-checkout-like workspace holding just the files these errors come from."""
    import shutil

    from fixtures.pytorch_repo import find_torch_dir, git
    from opsource_helpers import save_workspace

    root = tmp_path_factory.mktemp("ws-truth") / "ws"
    tree = root / "pytorch"
    site = find_torch_dir().parent
    for rel, wheel in _TRUTH_TREE:
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(site / wheel, tree / rel)
    git("init", "-q", tree)
    git("add", "-A", cwd=tree)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "tree", cwd=tree)
    save_workspace(root, "clone")
    return root


def _line_of(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if needle in text)


def test_header_check_macro_ties_are_said(
    truth_ws: Path, real_errors: dict[str, list[str]]
) -> None:
    exc_type, text = real_errors["view"]
    binary = cpp_trace.parse(text)  # the binary's own answer, to check against
    assert binary.raised is not None and binary.raised.path.endswith("ATen/InferSize.h")
    message = text.splitlines()[0]
    result = locate(LocateRequest(message=f"{exc_type}: {message}", workspace=str(truth_ws)))
    assert result.verdict == MATCHED
    best = [c for c in result.candidates if c.tied]
    # The TORCH_MAYBE_SYM_CHECK the binary names is among the best, not missed...
    assert f"aten/src/ATen/InferSize.h:{binary.raised.line}" in [c.location.label for c in best]
    assert {c.macro for c in best} >= {"TORCH_MAYBE_SYM_CHECK", "TORCH_CHECK"}
    # ...and the answer says it cannot tell them apart, and how to get a certain one.
    assert result.confidence == "low" and result.exit_code == 1
    assert result.blind_spots[0] == (
        f"{len(best)} sites match equally in aten/src/ATen/InferSize.h"
    )
    assert result.next_step and "onboard locate -- python repro.py" in result.next_step


def test_python_raise_ranked_by_exception_type(
    truth_ws: Path, real_errors: dict[str, list[str]]
) -> None:
    exc_type, message = real_errors["sgd"]
    assert (exc_type, message) == ("ValueError", "Invalid learning rate: -0.1")
    result = locate(LocateRequest(message=f"{exc_type}: {message}", workspace=str(truth_ws)))
    sgd = _line_of(truth_ws / "pytorch/torch/optim/sgd.py", 'f"Invalid learning rate: {lr}"')
    best = [c.location.label for c in result.candidates if c.tied]
    assert f"torch/optim/sgd.py:{sgd}" in best
    assert all(c.raises == "ValueError" for c in result.candidates if c.tied)
    frontend = next(c for c in result.candidates if c.location.path.endswith("optim/sgd.h"))
    assert not frontend.tied
    assert "raises RuntimeError, not ValueError" in frontend.reasons
    assert result.candidates.index(frontend) > result.candidates.index(
        next(c for c in result.candidates if c.location.path == "torch/optim/sgd.py")
    )


def test_keyerror_message_as_printed_is_found_for_sure(
    truth_ws: Path, real_errors: dict[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    exc_type, message = real_errors["buffer"]
    assert exc_type == "KeyError" and message.startswith("'")  # repr() of its argument
    argv = ["locate", "--json", "--workspace", str(truth_ws), f"{exc_type}: {message}"]
    assert run_cli(cli, argv) == 0
    data = json.loads(capsys.readouterr().out)
    line = _line_of(truth_ws / "pytorch/torch/nn/modules/module.py", "buffer name can\\'t contain")
    assert data["candidates"][0]["location"]["label"] == f"torch/nn/modules/module.py:{line}"
    assert data["candidates"][0]["raises"] == "KeyError"
    assert data["confidence"] == "high" and data["blind_spots"] == []


def test_reference_tree_says_what_was_not_searched(reference_ws: Path) -> None:
    result = locate(LocateRequest(message=MM_MESSAGE, workspace=str(reference_ws)))
    assert result.exit_code == 1
    assert any(".cpp/.cu files were not searched" in s for s in result.blind_spots)
    header = locate(
        LocateRequest(message="only one dimension can be inferred", workspace=str(reference_ws))
    )
    # torch/_prims_common's torch._check says the same words as InferSize.h's TORCH_CHECK.
    assert header.verdict == MATCHED and header.confidence == "low"
    assert [c.location.label for c in header.candidates if c.tied] == [
        "aten/src/ATen/InferSize.h:30",
        f"torch/_prims_common/__init__.py:{header.candidates[1].location.line}",
    ]
    assert header.exit_code == 1  # a partial answer is not a plain success


def test_pasted_traceback_offers_the_exact_command(
    truth_ws: Path, real_errors: dict[str, list[str]], tmp_path: Path
) -> None:
    script = tmp_path / "repro.py"
    script.write_text("import torch\ntorch.arange(6).view(4, 2)\n")
    exc_type, text = real_errors["view"]
    pasted = (
        "Traceback (most recent call last):\n"
        f'  File "{script}", line 2, in <module>\n'
        "    torch.arange(6).view(4, 2)\n"
        f"{exc_type}: {text.splitlines()[0]}\n"
    )
    result = locate(LocateRequest(text=pasted, workspace=str(truth_ws)))
    assert result.verdict == MATCHED and result.confidence == "low"
    assert result.next_step is not None
    assert f"`onboard locate -- {sys.executable} {script}`" in result.next_step


def test_command_that_fails_before_python_runs(clone_ws: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.py"
    result = locate(LocateRequest(command=[sys.executable, str(missing)], workspace=str(clone_ws)))
    assert result.verdict == "command_failed" and result.exit_code == 1
    assert result.explanation and "failed (exit 2)" in result.explanation
    assert "can't open file" in result.explanation
    assert "No exception" not in result.explanation


def test_control_characters_from_input_are_escaped(clone_ws: Path) -> None:
    pasted = "RuntimeError: \x1b]0;owned\x07mat1 and mat2 shapes \x1b[2Jcannot be multiplied\n"
    res = CliRunner().invoke(cli, ["locate", "--workspace", str(clone_ws), "-"], input=pasted)
    assert "\x1b" not in res.output and "\x07" not in res.output
    assert "\\x1b]0;owned\\x07" in res.output


def test_the_check_index_has_the_shape_its_reader_accepts(tmp_path: Path) -> None:
    """A fresh index must pass the shape check on read, or every run rebuilds it."""
    from onboard.cache import matches
    from onboard.report import Reporter
    from onboard.workflows.opsource import checks

    header = tmp_path / "c10/util/Exception.h"
    header.parent.mkdir(parents=True)
    header.write_text(
        "#define TORCH_CHECK(cond, ...) if (!(cond)) ::c10::detail::torchCheckFail(__VA_ARGS__)\n"
        'inline void f(int n) { TORCH_CHECK(n > 0, "n must be positive, got ", n); }\n'
    )
    module = tmp_path / "torch/optim/sgd.py"
    module.parent.mkdir(parents=True)
    module.write_text('def f(lr):\n    raise ValueError(f"Invalid learning rate: {lr}")\n')
    data = checks._build(tmp_path, Reporter())
    assert data["files"]["c10/util/Exception.h"]["s"] and data["files"]["c10/util/Exception.h"]["d"]
    assert data["files"]["torch/optim/sgd.py"]["s"]
    assert matches(data, checks.SHAPE)


def test_a_command_that_leaves_a_child_running_is_answered_when_it_exits(
    clone_ws: Path, tmp_path: Path
) -> None:
    # The script raises and exits; its own child sleeps on. The answer is what the
    # script printed: locate neither waits for the child until its timeout nor
    # leaves it running.
    from fixtures.events import gone

    marker = tmp_path / "child.pid"
    script = tmp_path / "leaves_a_child.py"
    script.write_text(
        "import subprocess, sys, torch\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
        "torch.ones(2, 3) @ torch.ones(4, 5)\n"
    )
    result = locate(
        LocateRequest(command=[sys.executable, str(script)], workspace=str(clone_ws), timeout=60)
    )
    assert result.verdict in (FOUND, MATCHED) and result.command_exit == 1
    assert result.message and MM_MESSAGE in result.message
    child = int(marker.read_text())
    assert gone(child, 10)
    # What onboard did is a note, not a limit of the answer.
    assert any("left 1 process running" in x and str(child) in x for x in result.notes), (
        result.notes
    )
    assert not any("left" in x for x in result.limitations)
