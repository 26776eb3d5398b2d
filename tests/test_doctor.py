"""`onboard doctor`: each diagnosis is produced for real, then diagnosed.

Broken states are made, not mocked: a fresh venv without torch; fake `torch`
packages whose `_C` extension is a shared object compiled here with gcc/g++
(named for another SOABI, linked against another libpython, calling a Python
API this interpreter lacks, compiled with the other C++ string ABI, needing a
newer libstdc++); a second torch on PYTHONPATH; Python run from inside a
PyTorch-shaped checkout with a stale build/; a workspace whose checkout moved.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from onboard import workspace as ws_mod
from onboard.cli import cli
from onboard.crash import run_cli
from onboard.jsonable import to_json
from onboard.report import Reporter
from onboard.workflows.doctor import DoctorReport, diagnose
from onboard.workspace import Workspace

EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
# A Python the tests pretend the extension was built for; never the running one.
OTHER = (3, 9) if sys.version_info[:2] != (3, 9) else (3, 8)
OTHER_TAG = f"cpython-{OTHER[0]}{OTHER[1]}-x86_64-linux-gnu"
# In CPython <= 3.9, removed in 3.10 (the old parser API): a symbol this Python lacks.
REMOVED_PY_API = "PyParser_SimpleParseStringFlags"
REAL_COMMIT = "cf30153c4c131c8164ee7798e5022d810682e2cb"

needs_gcc = pytest.mark.skipif(
    shutil.which("gcc") is None or shutil.which("g++") is None,
    reason="gcc/g++ are needed to build the broken extensions",
)
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF/glibc loader")


# --- helpers --------------------------------------------------------------------


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A fresh venv without torch (and without pip: the fastest to make)."""
    venv = tmp_path_factory.mktemp("bare-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


def run_doctor(
    python: str | None, *, workspace: Workspace | None = None, cwd: Path | None = None
) -> DoctorReport:
    return diagnose(python, workspace, Reporter(), cwd=cwd)


def ids(report: DoctorReport) -> list[str]:
    return [f.id for f in report.findings]


def compile_so(src: Path, out: Path, *args: str, cxx: bool = False) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    compiler = "g++" if cxx else "gcc"
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-o", str(out), str(src), *args],
        check=True,
        capture_output=True,
    )
    return out


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def fake_torch(
    root: Path,
    *,
    version: str = "2.13.0",
    git_version: str = REAL_COMMIT,
    cuda: str | None = None,
    init: str | None = None,
) -> Path:
    """A pure-Python torch package under root/ that imports and answers the probe."""
    pkg = root / "torch"
    write(
        pkg / "version.py",
        f"""\
        __version__ = {version!r}
        git_version = {git_version!r}
        cuda = {cuda!r}
        hip = None
        debug = False
        """,
    )
    write(pkg / "_C.py", "_GLIBCXX_USE_CXX11_ABI = True\n")
    write(
        pkg / "__init__.py",
        init
        or """\
        from torch import _C, version
        from torch.version import __version__


        class cuda:
            @staticmethod
            def is_available():
                return False
        """,
    )
    return pkg


def extension_torch(root: Path) -> Path:
    """A torch package whose __init__ imports the compiled _C, as the real one does."""
    pkg = root / "torch"
    write(pkg / "__init__.py", "from torch._C import *  # noqa: F403\n")
    return pkg


# --- 1. no torch ------------------------------------------------------------------


def test_fresh_venv_without_torch(bare_python: str, tmp_path: Path) -> None:
    report = run_doctor(bare_python, cwd=tmp_path)
    assert ids(report) == ["no-torch"]
    finding = report.findings[0]
    assert finding.severity == "error"
    assert f"{bare_python} -m pip install torch" in finding.fix
    assert report.exit_code == 1
    assert to_json(report)["facts"]["torch"] is None


def test_fresh_venv_without_torch_cli(bare_python: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "onboard", "doctor", "--python", bare_python, "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)  # stdout holds the JSON object and nothing else
    assert data["ok"] is False
    assert [f["id"] for f in data["findings"]] == ["no-torch"]
    assert set(data["findings"][0]) == {"id", "severity", "title", "why", "fix", "details"}
    assert data["facts"]["python"]["executable"] == bare_python

    human = subprocess.run(
        [sys.executable, "-m", "onboard", "doctor", "--python", bare_python],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert human.returncode == 1
    assert "not installed in this interpreter" in human.stdout
    assert "why:" in human.stdout and "fix:" in human.stdout


def test_python_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nope" / "bin" / "python")
    assert run_cli(cli, ["doctor", "--python", missing]) == 1
    err = capsys.readouterr().err
    assert f"Error: There is no Python interpreter at {missing}." in err
    assert "--python" in err and "Traceback" not in err

    assert run_cli(cli, ["doctor", "--python", missing, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and missing in data["error"]["message"]


# --- 2. torch's C extension does not import --------------------------------------


# Each builds torch/_C (and what it links) under tmp_path/"site"/"torch" as a user's
# broken install has it.


def _named_for_another_python(tmp_path: Path, pkg: Path) -> None:
    src = write(tmp_path / "src" / "c.c", "void *PyInit__C(void) { return 0; }\n")
    compile_so(src, pkg / f"_C.{OTHER_TAG}.so")


def _linked_against_another_libpython(tmp_path: Path, pkg: Path) -> None:
    # A stub libpython3.9 to link against, left behind like a conda env's one.
    soname = f"libpython{OTHER[0]}.{OTHER[1]}.so.1.0"
    stub_src = write(tmp_path / "src" / "stub.c", "int Py_IsInitialized(void) { return 1; }\n")
    stub = compile_so(stub_src, tmp_path / "elsewhere" / soname, f"-Wl,-soname,{soname}")
    src = write(
        tmp_path / "src" / "c.c",
        "int Py_IsInitialized(void);\n"
        "void *PyInit__C(void) { return (void *)(long)Py_IsInitialized(); }\n",
    )
    compile_so(src, pkg / f"_C{EXT_SUFFIX}", "-Wl,--no-as-needed", str(stub))


def _calls_python_api_this_python_lacks(tmp_path: Path, pkg: Path) -> None:
    src = write(
        tmp_path / "src" / "c.c",
        f"void {REMOVED_PY_API}(void);\n"
        f"void *PyInit__C(void) {{ {REMOVED_PY_API}(); return 0; }}\n",
    )
    compile_so(src, pkg / f"_C{EXT_SUFFIX}")


def _built_with_the_other_cxx_abi(tmp_path: Path, pkg: Path) -> None:
    # torch's libc10 with the C++11 ABI, as the real wheel (CXX11 ABI: yes)...
    lib_src = write(
        tmp_path / "src" / "c10.cpp",
        """\
        #include <string>
        namespace c10 { namespace detail {
        void torchCheckFail(const char* func, const std::string& msg) { (void)func; (void)msg; }
        }}
        """,
    )
    compile_so(
        lib_src,
        pkg / "lib" / "libc10.so",
        "-D_GLIBCXX_USE_CXX11_ABI=1",
        "-Wl,-soname,libc10.so",
        cxx=True,
    )
    # ...and an extension compiled with the old std::string ABI.
    ext_src = write(
        tmp_path / "src" / "ext.cpp",
        """\
        #include <string>
        namespace c10 { namespace detail { void torchCheckFail(const char*, const std::string&); }}
        extern "C" void* PyInit__C(void) {
            c10::detail::torchCheckFail("f", std::string("x"));
            return nullptr;
        }
        """,
    )
    compile_so(
        ext_src,
        pkg / f"_C{EXT_SUFFIX}",
        "-D_GLIBCXX_USE_CXX11_ABI=0",
        f"-L{pkg / 'lib'}",
        "-lc10",
        "-Wl,-rpath,$ORIGIN/lib",
        cxx=True,
    )


def _needs_a_newer_libstdcxx(tmp_path: Path, pkg: Path) -> None:
    # Link against a stub libstdc++.so.6 that defines a version newer than any real
    # one; at run time the loader picks the system libstdc++, which lacks it.
    stub_src = write(tmp_path / "src" / "stub.c", "void onboard_new_runtime(void) {}\n")
    vmap = write(
        tmp_path / "src" / "v.map", "GLIBCXX_3.4.99 { global: onboard_new_runtime; local: *; };\n"
    )
    stub = compile_so(
        stub_src,
        tmp_path / "newgcc" / "libstdc++.so.6",
        "-Wl,-soname,libstdc++.so.6",
        f"-Wl,--version-script={vmap}",
    )
    src = write(
        tmp_path / "src" / "c.c",
        "void onboard_new_runtime(void);\n"
        "void *PyInit__C(void) { onboard_new_runtime(); return 0; }\n",
    )
    compile_so(src, pkg / f"_C{EXT_SUFFIX}", str(stub))


_OTHER = f"{OTHER[0]}.{OTHER[1]}"

# (how torch/_C is broken, the finding, words in its title, in its why, in one of its
# details, in its fix)
BROKEN_C_EXTENSIONS = [
    pytest.param(
        _named_for_another_python, "extension-python-mismatch", (f"built for Python {_OTHER}",),
        (OTHER_TAG, EXT_SUFFIX), (), (), id="named-for-another-python",
    ),
    pytest.param(
        _linked_against_another_libpython, "extension-python-mismatch",
        (f"built for Python {_OTHER}",), (f"DT_NEEDED on libpython{_OTHER}.so.1.0",), (),
        ("--force-reinstall",), id="linked-against-another-libpython",
    ),
    pytest.param(
        _calls_python_api_this_python_lacks, "extension-python-mismatch", (),
        (REMOVED_PY_API, "are missing in this Python"), (), (),
        id="calls-python-api-this-python-lacks",
    ),
    pytest.param(
        _built_with_the_other_cxx_abi, "extension-cxx-abi-mismatch",
        ("old std::string ABI (_GLIBCXX_USE_CXX11_ABI=0)", "libc10.so with the C++11 ABI"),
        ("torchCheckFail",), ("__cxx11",), (), id="built-with-the-other-cxx-abi",
    ),
    pytest.param(
        # the newest version the real libstdc++ has is named in a detail
        _needs_a_newer_libstdcxx, "libstdcxx-too-old", (), ("GLIBCXX_3.4.99", "libstdc++.so.6"),
        ("GLIBCXX_3.4.",), (), id="needs-a-newer-libstdcxx",
    ),
]  # fmt: skip


@needs_gcc
@linux_only
@pytest.mark.parametrize(
    ("build", "finding_id", "title", "why", "detail", "fix"), BROKEN_C_EXTENSIONS
)
def test_torchs_c_extension_that_does_not_import_is_explained(
    build: Callable[[Path, Path], None],
    finding_id: str,
    title: tuple[str, ...],
    why: tuple[str, ...],
    detail: tuple[str, ...],
    fix: tuple[str, ...],
    bare_python: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    build(tmp_path, extension_torch(tmp_path / "site"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    # what `import torch` really raises there (PYTHONPATH is inherited)
    said = (
        subprocess.run(
            [bare_python, "-c", "import torch"], cwd=tmp_path, capture_output=True, text=True
        )
        .stderr.strip()
        .splitlines()[-1]
    )
    assert said.split(": ", 1)[0].endswith("Error"), said

    report = run_doctor(bare_python, cwd=tmp_path)
    assert report.env.import_error is not None
    assert report.env.import_error["message"] == said.split(": ", 1)[1]
    finding = report.finding(finding_id)
    assert finding is not None, ids(report)
    assert [i for i in ids(report) if i.startswith(("extension-", "libstdcxx-"))] == [finding_id]
    for words in title:
        assert words in finding.title
    for words in why:
        assert words in finding.why
    for words in detail:
        assert any(words in d for d in finding.details), finding.details
    for words in fix:
        assert words in finding.fix
    assert report.exit_code == 1


def _other_cpython() -> str | None:
    """Another CPython 3.10+ on this machine (a sibling install or python3.X on PATH)."""
    here = sys.version_info[:2]
    candidates = sorted(Path(sys.base_prefix).parent.glob("*/bin/python3"))
    candidates += [Path(p) for m in range(10, 15) if (p := shutil.which(f"python3.{m}"))]
    for exe in candidates:
        probe = subprocess.run(
            [str(exe), "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
            capture_output=True,
            text=True,
        )
        if probe.returncode != 0:
            continue
        major, minor = (int(x) for x in probe.stdout.split())
        if major == 3 and minor >= 10 and (major, minor) != here:
            return str(exe)
    return None


@linux_only
def test_real_wheel_run_by_another_python(
    torch_wheel_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The classic: torch pip-installed for one Python, imported by another."""
    other = _other_cpython()
    if other is None:
        pytest.skip("no second CPython 3.10+ on this machine")
    monkeypatch.setenv("PYTHONPATH", str(torch_wheel_dir.parent))
    report = run_doctor(other, cwd=tmp_path)
    finding = report.finding("extension-python-mismatch")
    assert finding is not None, ids(report)
    here = "{}.{}".format(*sys.version_info[:2])
    assert f"built for Python {here}" in finding.title
    assert next(torch_wheel_dir.glob("_C.*.so")).name in finding.why
    assert "--force-reinstall" in finding.fix


@linux_only
def test_interpreter_dies_while_importing_torch(
    bare_python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_torch(tmp_path / "site", init="import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    report = run_doctor(bare_python, cwd=tmp_path)
    finding = report.finding("torch-import-crash")
    assert finding is not None, ids(report)
    assert "SIGSEGV" in finding.title
    assert "faulthandler" in finding.fix
    # the facts gathered before the import still arrive
    assert report.facts["python"]["executable"] == bare_python


# --- 3. a second torch, a stale source tree ----------------------------------------


def test_second_torch_on_pythonpath_shadows_the_installed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = fake_torch(tmp_path / "shadow", version="0.0.1")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "shadow"))
    report = run_doctor(None, cwd=tmp_path)
    env = report.env
    assert env.candidates[0] == str(fake)  # import order: PYTHONPATH first
    assert len(env.candidates) == 2
    finding = report.finding("torch-shadowed")
    assert finding is not None, ids(report)
    assert str(fake) in finding.title
    assert "PYTHONPATH" in finding.why and "PYTHONPATH" in finding.fix
    assert report.exit_code == 1


def test_running_python_inside_a_pytorch_checkout(pytorch_repo_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    repo = pytorch_repo_factory(commits=3, seed_from_wheel=True)
    root = repo.path
    # A build made two commits ago in another folder, then copied here.
    write(
        root / "build" / "CMakeCache.txt",
        "CMAKE_PROJECT_NAME:STATIC=Torch\nCMAKE_HOME_DIRECTORY:INTERNAL=/old/place/pytorch\n",
    )
    write(
        root / "torch" / "version.py",
        f"__version__ = '2.13.0a0'\ngit_version = '{repo.commits[0]}'\n",
    )

    report = run_doctor(None, cwd=root)
    # the facts are the installed torch's, seen from a neutral folder
    assert report.env.torch is not None and report.env.import_error is None
    shadow = report.finding("torch-shadowed")
    assert shadow is not None, ids(report)
    assert "a PyTorch source tree" in shadow.title
    assert "current folder" in shadow.why
    assert "no compiled C extension" in shadow.why
    assert "Run Python from another folder (`cd ~`)" in shadow.fix
    stale = report.finding("stale-build")
    assert stale is not None, ids(report)
    assert stale.severity == "warning"
    assert repo.commits[0][:12] in stale.why and repo.head[:12] in stale.why
    assert "/old/place/pytorch" in stale.why
    assert "CMAKE_FRESH=1" in stale.fix
    # the shadowing explains the failed import: no ELF guesswork on top of it
    assert not [i for i in ids(report) if i.startswith("extension-")]


def test_a_torch_built_in_place_in_the_current_folder_is_named(tmp_path: Path) -> None:
    # A checkout built in place (`python setup.py develop` without installing):
    # python from here imports that build, not the installed torch.
    here = tmp_path / "pytorch"
    write(here / "torch" / "__init__.py", "")
    write(here / "torch" / "_C.cpython-311-x86_64-linux-gnu.so", "")
    report = run_doctor(None, cwd=here)
    assert report.env.torch is not None  # the installed one, probed from a neutral folder
    shadow = report.finding("torch-shadowed")
    assert shadow is not None, ids(report)
    assert "so it imports" in shadow.why and "fails" not in shadow.why


# --- 4. workspace --------------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def small_repo(tmp_path: Path) -> tuple[Path, list[str]]:
    repo = tmp_path / "ws" / "pytorch"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for i in range(3):
        (repo / "version.txt").write_text(f"2.13.0a{i}\n")
        _git(repo, "add", "version.txt")
        _git(repo, "commit", "-q", "-m", f"Commit {i} (#{140000 + i})")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    return repo, shas


def _workspace(repo: Path, commit: str, python: str = sys.executable) -> Workspace:
    ws = Workspace(
        root=repo.parent,
        torch_version="2.13.0",
        commit=commit,
        commit_kind="release",
        build_prefix="/__w/pytorch/pytorch",
        python=python,
    )
    ws_mod.save(ws)
    found = ws_mod.find(str(repo.parent))
    assert found is not None
    return found


def test_workspace_checkout_moved_away_from_the_installed_commit(
    small_repo: tuple[Path, list[str]],
    bare_python: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo, shas = small_repo
    fake_torch(tmp_path / "site", git_version=shas[2])
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    ws = _workspace(repo, shas[2], bare_python)
    assert not [
        i
        for i in ids(run_doctor(bare_python, workspace=ws, cwd=tmp_path))
        if i.startswith("workspace-")
    ]

    _git(repo, "switch", "-q", "--detach", shas[0])  # the user checked out something else
    report = run_doctor(bare_python, workspace=ws, cwd=tmp_path)
    finding = report.finding("workspace-checkout-moved")
    assert finding is not None, ids(report)
    assert shas[0] in finding.why and shas[2] in finding.why
    assert f"switch --detach {shas[2]}" in finding.fix
    assert report.facts["workspace"]["head"] == shas[0]


# (the torch installed: version and commit, as an index of small_repo's commits or a sha;
# the workspace's commit and interpreter; the finding, its severity, words in its title
# and fix). small_repo's checkout is at its last commit, shas[2].
WORKSPACE_NOTES = [
    pytest.param(
        "2.13.0", 0, 0, "bare", "workspace-ahead", "info", ("2 commit(s) ahead",), (),
        id="checkout-ahead-of-the-installed-commit",
    ),
    pytest.param(
        # upgraded after setup: torch now comes from a commit the checkout lacks
        "2.14.0", "ab" * 20, 2, "bare", "workspace-other-torch", "error", ("2.13.0", "2.14.0"),
        (), id="torch-upgraded-since-setup",
    ),
    pytest.param(
        "2.13.0", 2, 2, "onboards", "workspace-other-python", "info", (),
        (f"onboard doctor --python {sys.executable}",), id="made-with-another-interpreter",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("version", "torch_commit", "ws_commit", "ws_python", "finding_id", "severity", "title", "fix"),
    WORKSPACE_NOTES,
)
def test_a_workspace_that_does_not_match_the_torch_is_named(
    version: str,
    torch_commit: int | str,
    ws_commit: int,
    ws_python: str,
    finding_id: str,
    severity: str,
    title: tuple[str, ...],
    fix: tuple[str, ...],
    small_repo: tuple[Path, list[str]],
    bare_python: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo, shas = small_repo
    git_version = shas[torch_commit] if isinstance(torch_commit, int) else torch_commit
    fake_torch(tmp_path / "site", version=version, git_version=git_version)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    made_with = bare_python if ws_python == "bare" else sys.executable
    ws = _workspace(repo, shas[ws_commit], made_with)
    report = run_doctor(bare_python, workspace=ws, cwd=tmp_path)
    finding = report.finding(finding_id)
    assert finding is not None and finding.severity == severity, ids(report)
    for words in title:
        assert words in finding.title
    for words in fix:
        assert words in finding.fix
    # the checkout did not move: only a torch from a commit it lacks makes it look moved
    moved = git_version not in shas
    assert ("workspace-checkout-moved" in ids(report)) is moved
    assert finding.needs_action is (severity == "error")  # a note alone fails no script


def test_workspace_option_on_the_cli(small_repo: tuple[Path, list[str]], tmp_path: Path) -> None:
    repo, shas = small_repo
    _workspace(repo, REAL_COMMIT)
    proc = subprocess.run(
        [sys.executable, "-m", "onboard", "doctor", "--workspace", str(repo.parent), "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert [f["id"] for f in data["findings"]] == ["workspace-checkout-moved"]
    assert data["facts"]["workspace"]["head"] == shas[2]


# --- 5. numpy, CUDA, commit kinds ------------------------------------------------------


def test_fake_cuda_build_without_gpu_and_without_numpy(
    bare_python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_torch(tmp_path / "site", version="2.13.0+cu128", cuda="12.8")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    report = run_doctor(bare_python, cwd=tmp_path)
    numpy = report.finding("numpy-missing")
    # optional: a note, with a command that runs in this pip-less venv (ensurepip first)
    assert numpy is not None and numpy.severity == "info", ids(report)
    pip = subprocess.run([bare_python, "-m", "pip", "--version"], capture_output=True)
    ensurepip = subprocess.run([bare_python, "-c", "import ensurepip"], capture_output=True)
    if pip.returncode != 0 and ensurepip.returncode == 0:
        assert f"`{bare_python} -m ensurepip && {bare_python} -m pip install numpy`" in numpy.fix
    elif pip.returncode == 0:
        assert f"`{bare_python} -m pip install numpy`" in numpy.fix
    else:
        assert "neither pip nor ensurepip" in numpy.fix
    cuda = report.finding("cuda-unavailable")
    assert cuda is not None and cuda.severity == "info"
    assert "CUDA 12.8" in cuda.title
    assert report.facts["torch"]["cuda"]["summary"] == "CUDA 12.8 build, but no GPU is usable here"
    assert report.exit_code == 0  # neither the numpy note nor the CUDA note needs action


@pytest.mark.parametrize(
    ("version", "git_version", "finding_id"),
    [
        ("2.14.0.dev20260101+cpu", "0123456789abcdef0123456789abcdef01234567", "commit-nightly"),
        ("2.13.0a0+git0123456", "0123456789abcdef0123456789abcdef01234567", "commit-local"),
        ("2.13.0", "Unknown", "commit-unknown"),
    ],
)
def test_commit_kinds_are_explained(
    version: str,
    git_version: str,
    finding_id: str,
    bare_python: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_torch(tmp_path / "site", version=version, git_version=git_version)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    report = run_doctor(bare_python, cwd=tmp_path)
    finding = report.finding(finding_id)
    assert finding is not None and finding.severity == "info", ids(report)
    assert "onboard setup" in finding.fix
    assert report.facts["torch"]["commit"]["kind"] == finding_id.split("-")[1]


# --- healthy ------------------------------------------------------------------------------


def test_installed_torch_is_healthy(tmp_path: Path) -> None:
    report = run_doctor(None, cwd=tmp_path)
    assert report.findings == (), ids(report)
    assert report.ok and report.exit_code == 0
    rows = dict(report.rows())
    assert rows["CUDA"] == "no CUDA (CPU-only build)"
    assert "onboard build" in rows["debug info"]

    from rich.console import Console

    from onboard.views import doctor as view

    console = Console(record=True, width=120)
    view.render(report, console, verbose=True)
    text = console.export_text()
    assert "No problems found." in text
    assert "/__w/pytorch/pytorch" in text


def test_doctor_through_click_runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["doctor", "--json"], standalone_mode=False)
    assert result.exception is None, result.output
    assert result.return_value == 0
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["findings"] == []
    assert os.environ.get("ONBOARD_WORKSPACE") is None


# --- QA regressions: bad --workspace / --python values are one paragraph, never a crash ---


@pytest.mark.parametrize(
    "config",
    ["[1, 2]", "{}", '{"torch_version": 1, "commit": null, "commit_kind": "release", '
     '"build_prefix": null, "python": "/x"}'],
)  # fmt: skip
def test_broken_workspace_config_is_one_paragraph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str
) -> None:
    (tmp_path / ws_mod.CONFIG_NAME).write_text(config)
    assert run_cli(cli, ["doctor", "--workspace", str(tmp_path), "--json"]) == 1
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert "is not one onboard wrote" in data["error"]["message"]
    assert "onboard setup NEW_DIR" in data["error"]["next_step"]
    assert "Traceback" not in captured.err and "bug in onboard" not in captured.err


def test_workspace_naming_a_non_workspace_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    nowhere = tmp_path / "nowhere"
    assert run_cli(cli, ["doctor", "--workspace", str(nowhere), "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["message"].startswith(f"--workspace names {nowhere}")
    assert "does not exist" in error["message"]

    monkeypatch.setenv("ONBOARD_WORKSPACE", str(tmp_path))
    assert run_cli(cli, ["doctor"]) == 2
    err = capsys.readouterr().err
    assert f"ONBOARD_WORKSPACE names {tmp_path}" in err and "Unset ONBOARD_WORKSPACE" in err


def test_python_that_is_a_folder_or_not_a_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from onboard import proc
    from onboard.errors import OnboardError

    assert run_cli(cli, ["doctor", "--python", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"There is no Python interpreter at {tmp_path}." in err and "bug" not in err
    script = tmp_path / "repro.py"
    script.write_text("print(1)\n")  # mode 0644: exec fails with EACCES, even for root
    with pytest.raises(OnboardError, match="cannot be run"):
        proc.run([str(script)])
    with pytest.raises(OnboardError, match="does not exist"):
        proc.run([sys.executable, "-c", "pass"], cwd=tmp_path / "gone")
