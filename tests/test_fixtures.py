"""Tests of the shared test foundations: guards, repo builder, git servers."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from fixtures.git_server import GitDaemon, SilentServer, closed_port_url
from fixtures.pytorch_repo import (
    CPP_CHURN_FILES,
    FIRST_PR_NUMBER,
    LINEAR_ALGEBRA_CPP,
    MERGEBOT_NAME,
    MM_CHECK_LINE,
    PY_CHURN_FILES,
    REGRESSION_MODULE,
    REPRO_SCRIPT,
    RepoInfo,
    build_pytorch_repo,
    git,
)

RepoBuilder = Callable[..., RepoInfo]
DEFAULT: dict[str, Any] = {"commits": 20, "tags": {"v2.12.0": 5, "v2.13.0": 15}}
TESTS_DIR = Path(__file__).resolve().parent

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # PyYAML without libyaml
    _Loader = yaml.SafeLoader


def _load_yaml(path: Path) -> Any:
    with path.open("rb") as fh:
        return yaml.load(fh, Loader=_Loader)  # noqa: S506 - a safe loader


# --------------------------------------------------------------------------
# Wheel location


def test_torch_wheel_dir_is_found_without_importing_torch(torch_wheel_dir: Path) -> None:
    assert (torch_wheel_dir / "__init__.py").is_file()
    assert (torch_wheel_dir / "include" / "ATen").is_dir()
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(TESTS_DIR)!r})\n"
        "from fixtures.pytorch_repo import find_torch_dir\n"
        "print(find_torch_dir())\n"
        "assert 'torch' not in sys.modules, 'find_torch_dir imported torch'\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert Path(out.strip()) == torch_wheel_dir


# --------------------------------------------------------------------------
# Tree content


def test_seeded_repo_has_the_wheels_real_yaml(
    pytorch_repo_builder: RepoBuilder, torch_wheel_dir: Path
) -> None:
    repo = pytorch_repo_builder(**DEFAULT).path
    native = repo / "aten/src/ATen/native/native_functions.yaml"
    packaged = torch_wheel_dir.parent / "torchgen/packaged"
    assert native.read_bytes() == (packaged / "ATen/native/native_functions.yaml").read_bytes()

    entries = _load_yaml(native)
    assert len(entries) > 2000
    by_name = {e["func"].split("(", 1)[0]: e for e in entries}
    trunc_out = by_name["trunc.out"]
    assert trunc_out["structured"] is True
    assert trunc_out["structured_inherits"] == "TensorIteratorBase"
    assert by_name["trunc"]["structured_delegate"] == "trunc.out"
    assert by_name["mm"]["structured_delegate"] == "mm.out"

    tags = {t["tag"] for t in _load_yaml(repo / "aten/src/ATen/native/tags.yaml")}
    assert {"core", "pointwise"} <= tags
    derivs = _load_yaml(repo / "tools/autograd/derivatives.yaml")
    trunc_d = next(d for d in derivs if d["name"].startswith("trunc(Tensor self)"))
    assert trunc_d["self"] == "zeros_like(grad)"
    assert trunc_d["result"] == "auto_element_wise"


def test_seeded_repo_layout(pytorch_repo_builder: RepoBuilder) -> None:
    info = pytorch_repo_builder(**DEFAULT)
    repo = info.path
    tracked = set(git("ls-files", cwd=repo).splitlines())
    for path in (
        "aten/src/ATen/native/UnaryOps.h",
        "aten/src/ATen/native/UnaryOps.cpp",
        "aten/src/ATen/native/cpu/UnaryOpsKernel.cpp",
        "aten/src/ATen/native/cuda/UnaryFractionKernels.cu",
        LINEAR_ALGEBRA_CPP,
        "c10/util/Exception.h",
        "c10/macros/Macros.h",
        "c10/core/TensorImpl.h",
        "torch/csrc/Exceptions.h",
        "torch/__init__.py",
        "torch/nn/functional.py",
        "torch/_torch_docs.py",
        "torch/_tensor_docs.py",
        "torch/overrides.py",
        "version.txt",
        "CMakeLists.txt",
        "setup.py",
        "CONTRIBUTING.md",
        ".github/PULL_REQUEST_TEMPLATE.md",
        "third_party/README.md",
    ):
        assert path in tracked, path
    # Generated/installed paths are not in git, as in pytorch/pytorch.
    assert "torch/version.py" not in tracked
    assert not any(p.startswith(("torch/include/", "torchgen/packaged/")) for p in tracked)
    assert "c10/macros/cmake_macros.h" not in tracked

    assert (
        "DECLARE_DISPATCH(unary_fn, trunc_stub)"
        in (repo / "aten/src/ATen/native/UnaryOps.h").read_text()
    )
    unary_cpp = (repo / "aten/src/ATen/native/UnaryOps.cpp").read_text()
    for needle in ("TORCH_META_FUNC(trunc)", "TORCH_IMPL_FUNC(trunc_out)", "TORCH_CHECK("):
        assert needle in unary_cpp
    assert "DEFINE_DISPATCH(trunc_stub);" in unary_cpp
    kernel = (repo / "aten/src/ATen/native/cpu/UnaryOpsKernel.cpp").read_text()
    assert "REGISTER_DISPATCH(trunc_stub" in kernel
    assert "inline namespace CPU_CAPABILITY" in kernel
    assert "gpu_kernel(" in (repo / "aten/src/ATen/native/cuda/UnaryFractionKernels.cu").read_text()
    assert "Fixes #ISSUE_NUMBER" in (repo / ".github/PULL_REQUEST_TEMPLATE.md").read_text()

    # LinearAlgebra.cpp:204 is the mm shape check the wheel's error points at.
    lines = (repo / LINEAR_ALGEBRA_CPP).read_text().splitlines()
    line = lines[MM_CHECK_LINE - 1]
    assert "TORCH_CHECK(" in line
    assert '"mat1 and mat2 shapes cannot be multiplied ("' in line
    enclosing = next(
        ln for ln in reversed(lines[: MM_CHECK_LINE - 1]) if ln.startswith("TORCH_META_FUNC(")
    )
    assert enclosing.startswith("TORCH_META_FUNC(mm)")

    # Bounded: "a few MB".
    size = sum(f.stat().st_size for f in repo.rglob("*") if f.is_file() and ".git" not in f.parts)
    assert 1_000_000 < size < 8_000_000


def test_tiny_repo_is_valid_for_torchgen(pytorch_repo_builder: RepoBuilder) -> None:
    repo = pytorch_repo_builder(commits=3, seed_from_wheel=False).path
    from torchgen.gen import parse_native_yaml

    parsed = parse_native_yaml(
        str(repo / "aten/src/ATen/native/native_functions.yaml"),
        str(repo / "aten/src/ATen/native/tags.yaml"),
    )
    names = {str(f.func.name) for f in parsed.native_functions}
    assert {"trunc", "trunc_", "trunc.out", "mm", "mm.out"} <= names
    size = sum(f.stat().st_size for f in repo.rglob("*") if f.is_file() and ".git" not in f.parts)
    assert size < 100_000
    assert (repo / LINEAR_ALGEBRA_CPP).read_text().splitlines()[MM_CHECK_LINE - 1].count(
        "mat1 and mat2 shapes cannot be multiplied"
    ) == 1


def test_extra_files_land_in_the_first_commit(tmp_path: Path) -> None:
    info = build_pytorch_repo(
        tmp_path / "r",
        commits=3,
        seed_from_wheel=False,
        extra_files={"torch/_extra.py": "X = 1\n", "version.txt": "9.9.9\n"},
    )
    assert git("show", f"{info.commits[0]}:torch/_extra.py", cwd=info.path) == "X = 1"
    assert (info.path / "version.txt").read_text() == "9.9.9\n"


# --------------------------------------------------------------------------
# History


def test_history_length_order_and_tags(pytorch_repo_builder: RepoBuilder) -> None:
    info = pytorch_repo_builder(**DEFAULT)
    repo = info.path
    assert len(info.commits) == 20
    assert git("rev-list", "--reverse", "main", cwd=repo).splitlines() == list(info.commits)
    assert git("rev-parse", "HEAD", cwd=repo) == info.head == info.commits[-1]
    assert git("symbolic-ref", "--short", "HEAD", cwd=repo) == "main"
    assert git("status", "--porcelain", cwd=repo) == ""
    assert set(git("tag", cwd=repo).splitlines()) == {"v2.12.0", "v2.13.0"}
    for tag, idx in DEFAULT["tags"].items():
        assert git("cat-file", "-t", tag, cwd=repo) == "tag"  # annotated
        assert git("rev-parse", f"{tag}^{{commit}}", cwd=repo) == info.commits[idx]
        assert info.tags[tag] == info.commits[idx]
    assert git("describe", "--tags", info.commits[17], cwd=repo).startswith("v2.13.0-2-g")
    cfg = git("config", "--get-regexp", "^uploadpack\\.", cwd=repo)
    assert "uploadpack.allowanysha1inwant true" in cfg
    assert "uploadpack.allowreachablesha1inwant true" in cfg


def test_merge_bot_messages_dates_and_changes(pytorch_repo_builder: RepoBuilder) -> None:
    info = pytorch_repo_builder(**DEFAULT)
    raw = git(
        "log",
        "--reverse",
        "--format=%x1e%H%x00%ct%x00%cn%x00%an%x00%B%x00",
        "--name-only",
        cwd=info.path,
    )
    records = [r for r in raw.split("\x1e") if r.strip()]
    assert len(records) == 20
    last_ts = 0
    touched: list[str] = []
    for i, record in enumerate(records):
        sha, ts, committer, author, message, files = record.split("\x00")
        assert sha == info.commits[i]
        assert int(ts) > last_ts
        last_ts = int(ts)
        assert committer == MERGEBOT_NAME
        assert author
        pr = FIRST_PR_NUMBER + i
        assert info.pr_numbers[i] == pr
        subject, _, body = message.strip().partition("\n\n")
        assert re.fullmatch(rf".+ \(#{pr}\)", subject), subject
        tail = body.strip().splitlines()[-2:]
        assert tail[0] == f"Pull Request resolved: https://github.com/pytorch/pytorch/pull/{pr}"
        assert re.fullmatch(r"Approved by: https://github\.com/[\w-]+", tail[1]), tail[1]
        changed = files.split()
        if i == 0:
            assert len(changed) > 100
        else:
            assert len(changed) == 1, changed
            touched.extend(changed)
    assert all(p in PY_CHURN_FILES + CPP_CHURN_FILES for p in touched)
    py = sum(p.startswith("torch/") and p.endswith(".py") for p in touched)
    cpp = sum(p.endswith((".cpp", ".cu")) for p in touched)
    assert py > cpp > 0


def test_same_arguments_give_same_shas(tmp_path: Path) -> None:
    kwargs: dict[str, Any] = {
        "commits": 6,
        "tags": {"v1": 2},
        "regression_at": 3,
        "seed_from_wheel": False,
    }
    a = build_pytorch_repo(tmp_path / "a", **kwargs)
    b = build_pytorch_repo(tmp_path / "b", **kwargs)
    assert a.commits == b.commits and a.tags == b.tags
    assert a.regression_sha == a.commits[3]


def test_bad_arguments_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="tag 'v9'"):
        build_pytorch_repo(tmp_path / "a", commits=3, tags={"v9": 3}, seed_from_wheel=False)
    with pytest.raises(ValueError, match="regression_at"):
        build_pytorch_repo(tmp_path / "b", commits=3, regression_at=5, seed_from_wheel=False)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x").write_text("")
    with pytest.raises(FileExistsError):
        build_pytorch_repo(tmp_path / "c", commits=1, seed_from_wheel=False)


def test_benchmark_sized_history_is_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[list[str]] = []
    real_run = subprocess.run

    def counted(args: list[str], *rest: Any, **kwargs: Any) -> Any:
        runs.append(list(args))
        return real_run(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "run", counted)
    info = build_pytorch_repo(
        tmp_path / "big", commits=4096, tags={"v2.13.0": 4000}, regression_at=3001
    )
    monkeypatch.undo()
    assert git("rev-list", "--count", "HEAD", cwd=info.path) == "4096"
    assert git("rev-parse", "v2.13.0^{commit}", cwd=info.path) == info.commits[4000]
    # Not a clock (benchmarks measure speed): the history is one `git fast-import`,
    # not a `git commit` per commit creeping back in, which takes minutes.
    assert [a[1] for a in runs if a[0] == "git"].count("fast-import") == 1
    assert len(runs) < 10, runs


# --------------------------------------------------------------------------
# Regression commit


def _run_repro(checkout: Path, repro: Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    return subprocess.run([sys.executable, str(repro)], env=env, cwd=checkout).returncode


def test_regression_commit_flips_the_repro(
    pytorch_repo_factory: RepoBuilder, tmp_path: Path
) -> None:
    k = 7
    info = pytorch_repo_factory(commits=12, regression_at=k, seed_from_wheel=False)
    assert info.regression_sha == info.commits[k]
    repro = tmp_path / "repro.py"
    repro.write_text(REPRO_SCRIPT)
    codes = {}
    for idx in (0, k - 1, k, len(info.commits) - 1):
        wt = tmp_path / f"wt{idx}"
        git("worktree", "add", "-q", "--detach", wt, info.commits[idx], cwd=info.path)
        codes[idx] = _run_repro(wt, repro)
    assert codes == {0: 0, k - 1: 0, k: 1, 11: 1}
    # Python-only: the regression commit touches exactly that module.
    changed = git(
        "diff-tree", "--no-commit-id", "--name-only", "-r", info.commits[k], cwd=info.path
    )
    assert changed == REGRESSION_MODULE


def test_git_bisect_run_finds_the_regression(
    pytorch_repo_factory: RepoBuilder, tmp_path: Path
) -> None:
    k = 13
    info = pytorch_repo_factory(commits=20, regression_at=k, seed_from_wheel=False)
    repro = tmp_path / "repro.py"
    repro.write_text(REPRO_SCRIPT)
    repo = info.path
    git("bisect", "start", info.head, info.commits[0], cwd=repo)
    proc = subprocess.run(
        ["git", "bisect", "run", sys.executable, str(repro)],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(repo)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"{info.commits[k]} is the first bad commit" in proc.stdout


def test_seeded_regression_runs_overlaid_on_installed_torch(
    pytorch_repo_factory: RepoBuilder, tmp_path: Path
) -> None:
    """A seeded tree's real torch/__init__.py needs torch._C, so its Python
    files are run overlaid on the installed torch (see RepoInfo)."""
    k = 4
    info = pytorch_repo_factory(commits=6, regression_at=k)
    checkouts = []
    for idx in (k - 1, k):
        wt = tmp_path / f"wt{idx}"
        git("worktree", "add", "-q", "--detach", wt, info.commits[idx], cwd=info.path)
        checkouts.append(str(wt / "torch"))
    code = textwrap.dedent(
        """
        import importlib, sys
        import torch
        results = []
        for overlay in sys.argv[1:]:
            torch.__path__.insert(0, overlay)
            sys.modules.pop("torch._onboard_regression", None)
            r = importlib.import_module("torch._onboard_regression")
            assert r.__file__.startswith(overlay), r.__file__
            results.append(r.check())
            torch.__path__.remove(overlay)
        print(results)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *checkouts], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[True, False]"


# --------------------------------------------------------------------------
# Private copies


def test_pytorch_repo_is_a_private_copy(
    pytorch_repo: RepoInfo, pytorch_repo_builder: RepoBuilder, tmp_path: Path
) -> None:
    shared = pytorch_repo_builder(**DEFAULT)
    assert pytorch_repo.commits == shared.commits
    assert pytorch_repo.path != shared.path
    assert pytorch_repo.path.is_relative_to(tmp_path)
    (pytorch_repo.path / "version.txt").write_text("mutated\n")
    git("commit", "-qam", "mutate", cwd=pytorch_repo.path)
    assert git("rev-parse", "HEAD", cwd=shared.path) == shared.head
    assert (shared.path / "version.txt").read_text() == "2.13.0a0\n"


# --------------------------------------------------------------------------
# git daemon


def _git_out(*args: str | Path, cwd: Path | None = None, timeout: float = 30) -> str:
    return subprocess.run(
        ["git", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
    ).stdout.strip()


def test_fetch_by_sha_over_git_daemon(
    git_daemon: GitDaemon, pytorch_repo_builder: RepoBuilder, tmp_path: Path
) -> None:
    info = pytorch_repo_builder(**DEFAULT)
    url = git_daemon.serve(info.path, "pytorch.git")
    assert url == f"git://127.0.0.1:{git_daemon.port}/pytorch.git"
    refs = _git_out("ls-remote", url)
    assert f"{info.head}\trefs/heads/main" in refs
    assert "refs/tags/v2.13.0" in refs

    # As tools/nightly.py does: a commit that is no branch tip, by sha.
    sha = info.commits[7]
    clone = tmp_path / "clone"
    _git_out("init", "-q", clone)
    _git_out("remote", "add", "origin", url, cwd=clone)
    _git_out("fetch", "-q", "--depth", "1", "origin", sha, cwd=clone)
    assert _git_out("rev-parse", "FETCH_HEAD", cwd=clone) == sha
    assert _git_out("rev-list", "--count", "FETCH_HEAD", cwd=clone) == "1"
    assert _git_out("rev-parse", "--is-shallow-repository", cwd=clone) == "true"
    _git_out("checkout", "-q", "--detach", "FETCH_HEAD", cwd=clone)
    assert (clone / "aten/src/ATen/native/native_functions.yaml").is_file()


def test_git_daemon_stop_is_reliable(tmp_path: Path, pytorch_repo_builder: RepoBuilder) -> None:
    info = pytorch_repo_builder(commits=2, seed_from_wheel=False)
    daemon = GitDaemon(tmp_path / "served").start()
    url = daemon.serve(info.path, "tiny.git")
    assert daemon.running
    _git_out("ls-remote", url)
    port = daemon.port
    assert port is not None
    daemon.stop()
    daemon.stop()  # idempotent
    assert not daemon.running
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    with pytest.raises(subprocess.CalledProcessError):
        _git_out("ls-remote", url)


def test_closed_port_url_refuses() -> None:
    url = closed_port_url("pytorch.git")
    assert url.startswith("git://127.0.0.1:")
    proc = subprocess.run(["git", "ls-remote", url], capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0


def test_silent_server_accepts_and_never_answers() -> None:
    with SilentServer() as server:
        assert server.port is not None
        with socket.create_connection(("127.0.0.1", server.port), timeout=2) as conn:
            conn.settimeout(0.3)
            conn.sendall(b"0032git-upload-pack /pytorch.git\0host=127.0.0.1\0")
            with pytest.raises(TimeoutError):
                conn.recv(1)
        with pytest.raises(subprocess.TimeoutExpired):
            subprocess.run(["git", "ls-remote", server.url()], capture_output=True, timeout=1)
        assert server.wait_accepted(2, timeout=30) >= 2


# --------------------------------------------------------------------------
# Guards


def test_network_guard_blocks_non_loopback() -> None:
    blocked = [
        lambda: socket.create_connection(("192.0.2.1", 80), timeout=0.5),
        lambda: socket.create_connection(("example.com", 443), timeout=0.5),
    ]
    for make in blocked:
        with pytest.raises(OSError, match="network access blocked"):
            make()
    for family, addr in (
        (socket.AF_INET, ("8.8.8.8", 53)),
        (socket.AF_INET, ("10.1.2.3", 9)),
        (socket.AF_INET6, ("2001:db8::1", 80, 0, 0)),
    ):
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            with socket.socket(family, kind) as s:
                with pytest.raises(OSError, match="network access blocked"):
                    s.connect(addr)
                with pytest.raises(OSError, match="network access blocked"):
                    s.connect_ex(addr)


def test_network_guard_allows_loopback_and_unix(tmp_path: Path) -> None:
    with SilentServer() as server:
        assert server.port is not None
        socket.create_connection(("127.0.0.1", server.port), timeout=2).close()
        socket.create_connection(("localhost", server.port), timeout=2).close()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            assert s.connect_ex(("127.0.0.1", server.port)) == 0
    path = tmp_path / "s"
    if len(str(path)) > 100:
        path = Path(f"/tmp/onboard-test-{os.getpid()}.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
        srv.bind(str(path))
        srv.listen(1)
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as cli:
                cli.connect(str(path))
        finally:
            path.unlink()


def test_home_guard_points_home_at_tmp(isolated_home: Path, tmp_path: Path) -> None:
    assert isolated_home.is_relative_to(tmp_path)
    assert os.environ["HOME"] == str(isolated_home)
    assert Path.home() == isolated_home
    assert Path(os.path.expanduser("~/x")) == isolated_home / "x"
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        assert Path(os.environ[name]).is_relative_to(tmp_path), name
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "ONBOARD_WORKSPACE"):
        assert name not in os.environ
    assert os.environ["GIT_CONFIG_NOSYSTEM"] == "1"
    assert os.environ["GIT_TERMINAL_PROMPT"] == "0"
    assert os.environ["TZ"] == "UTC"
    # git's global config now lives in the fake home.
    subprocess.run(["git", "config", "--global", "user.name", "Someone"], check=True)
    assert "Someone" in (isolated_home / ".gitconfig").read_text()
    ident = _git_out("var", "GIT_AUTHOR_IDENT")
    assert ident == "Onboard Tester <tester@onboard.invalid> 1735689600 +0000"


def test_home_guard_fails_a_session_that_writes_to_home(tmp_path: Path) -> None:
    """Run an inner pytest session whose test writes into the HOME it started
    with: the session must fail and say so."""
    inner = tmp_path / "inner"
    shutil.copytree(TESTS_DIR / "fixtures", inner / "fixtures")
    shutil.copy(TESTS_DIR / "conftest.py", inner / "conftest.py")
    start_home = tmp_path / "start-home"
    start_home.mkdir()
    (inner / "test_leak.py").write_text(
        "import os\n"
        "from pathlib import Path\n\n"
        "def test_leak():\n"
        f"    Path({str(start_home)!r}, '.leaked').write_text('x')\n"
        "    assert os.environ['HOME'] != " + repr(str(start_home)) + "\n"
    )
    env = {**os.environ, "HOME": str(start_home)}
    env.pop("ONBOARD_TESTS_ALLOW_HOME_CHANGES", None)
    proc = subprocess.run(
        # Its own --basetemp: otherwise the inner session rotates (deletes) the
        # old numbered temp dirs of pytest-of-<user>, slow and unkind to other runs.
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(tmp_path / "inner-tmp"),
            str(inner),
        ],
        cwd=inner,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "1 passed" in proc.stdout, proc.stdout + proc.stderr
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, proc.stdout
    assert "REAL HOME DIRECTORY MODIFIED" in proc.stdout
    assert ".leaked" in proc.stdout


# --------------------------------------------------------------------------
# CI: a skip is a failure (fixtures/ci_skips.py)

_SAMPLE = """
import pytest

def test_runs():
    pass

def test_skips():
    pytest.skip("redis-server is not installed")

@pytest.mark.gpu
def test_needs_a_gpu():
    pytest.skip("no GPU here")

@pytest.mark.xfail(reason="known")
def test_expected_failure():
    assert False
"""


@pytest.mark.parametrize("ci", [False, True])
def test_a_skip_fails_in_ci_unless_the_test_needs_a_gpu(tmp_path: Path, ci: bool) -> None:
    from fixtures import ci_skips

    (tmp_path / "test_sample.py").write_text(_SAMPLE)
    env = {k: v for k, v in os.environ.items() if k != ci_skips.ENV}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent)
    if ci:
        env[ci_skips.ENV] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "fixtures.ci_skips", "-p", "no:cacheprovider",
         "-p", "no:xdist", "-q", "-rfEs", "test_sample.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    out = proc.stdout
    if ci:
        assert proc.returncode == 1, out
        assert "1 failed, 1 passed, 1 skipped, 1 xfailed" in out
        assert "FAILED test_sample.py::test_skips" in out and "redis-server is not installed" in out
    else:
        assert proc.returncode == 0, out
        assert "1 passed, 2 skipped, 1 xfailed" in out
        assert "SKIPPED [1] test_sample.py:8: redis-server is not installed" in out  # -rs


def test_a_misspelt_marker_is_an_error_not_a_fast_test(tmp_path: Path) -> None:
    """`--strict-markers` (pyproject.toml): `@pytest.mark.slwo` would otherwise run
    an end-to-end check in the fast suite, unnoticed."""
    root = Path(__file__).resolve().parent.parent
    (tmp_path / "test_typo.py").write_text(
        "import pytest\n\n@pytest.mark.slwo\ndef test_x():\n    pass\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(root / "pyproject.toml"), "-q", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode != 0
    assert "'slwo' not found in `markers` configuration option" in out.stdout + out.stderr
