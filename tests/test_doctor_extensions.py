"""`onboard doctor --import` / `-- python script.py`, and `locate` on an ImportError:
real extensions, compiled here with the system compiler, that fail to load against
the installed torch the ways users meet (the C++ ABI, a function this torch lacks,
another Python, a library the loader cannot find).

Each extension is a few lines of C/C++ that declare the torch function they call
instead of including torch's headers, so all of them build in a second or two; they
are compiled once per session."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from fixtures.pytorch_repo import find_torch_dir
from opsource_helpers import (
    cache_fixture,  # noqa: F401 (a pytest fixture)
    clone_ws_fixture,  # noqa: F401 (a pytest fixture)
    shared_cache_fixture,  # noqa: F401 (a pytest fixture)
)

from onboard import torchenv
from onboard.cli import cli
from onboard.crash import run_cli
from onboard.report import Reporter
from onboard.torchenv import TorchEnv
from onboard.workflows.doctor import diagnose, extension
from onboard.workflows.locate import IMPORT_FAILED, LocateRequest, locate

SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
TORCH_LIB = find_torch_dir() / "lib"

_MODULE = """
static PyMethodDef methods[] = {{"run", run, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "%(name)s", NULL, -1, methods};
PyMODINIT_FUNC PyInit_%(name)s(void) { return PyModule_Create(&def); }
"""
SOURCES = {
    # Built with the old std::string ABI against this C++11-ABI torch.
    "ext_abi.cpp": """#include <Python.h>
#include <string>
namespace c10 { namespace detail {
[[noreturn]] void torchCheckFail(const char*, const char*, unsigned int, const std::string&);
} }
static PyObject* run(PyObject*, PyObject*) {
  c10::detail::torchCheckFail("run", __FILE__, __LINE__, std::string("boom"));
}
extern "C" {"""
    + _MODULE % {"name": "ext_abi"}
    + "}\n",
    # Calls an at:: function no torch 2.13 library defines.
    "ext_missing.cpp": """#include <Python.h>
#include <cstdint>
namespace at { class Tensor; namespace native {
int64_t onboard_removed_op(const at::Tensor& self, int64_t dim);
} }
static PyObject* run(PyObject* self, PyObject*) {
  return PyLong_FromLongLong(
      at::native::onboard_removed_op(*reinterpret_cast<const at::Tensor*>(self), 0));
}
extern "C" {"""
    + _MODULE % {"name": "ext_missing"}
    + "}\n",
    # Uses C API that Python 3.11 removed (PyFrame_BlockSetup, <= 3.10).
    "ext_old.c": """#include <Python.h>
void PyFrame_BlockSetup(PyFrameObject*, int, int, int);
static PyObject* run(PyObject* self, PyObject* args) {
  PyFrame_BlockSetup(NULL, 0, 0, 0);
  Py_RETURN_NONE;
}
"""
    + _MODULE % {"name": "ext_old"},
    "libonboard_gone.c": "int onboard_gone(void) { return 1; }\n",
    "ext_needs.c": """#include <Python.h>
int onboard_gone(void);
static PyObject* run(PyObject* self, PyObject* args) { return PyLong_FromLong(onboard_gone()); }
"""
    + _MODULE % {"name": "ext_needs"},
    "ext_good.c": """#include <Python.h>
static PyObject* run(PyObject* self, PyObject* args) { Py_RETURN_NONE; }
"""
    + _MODULE % {"name": "ext_good"},
}


@pytest.fixture(scope="session", name="ext_dir")
def ext_dir_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (shutil.which("gcc") and shutil.which("g++")):
        pytest.skip("gcc/g++ are needed to compile the test extensions")
    out = tmp_path_factory.mktemp("extensions")
    for name, text in SOURCES.items():
        (out / name).write_text(text)
    include = ["-I", sysconfig.get_paths()["include"]]
    torch_link = ["-L", str(TORCH_LIB), "-lc10", "-ltorch_cpu", f"-Wl,-rpath,{TORCH_LIB}"]
    builds = [
        ["g++", "-D_GLIBCXX_USE_CXX11_ABI=0", *include, "ext_abi.cpp", "-o", f"ext_abi{SUFFIX}",
         *torch_link],
        ["g++", *include, "ext_missing.cpp", "-o", f"ext_missing{SUFFIX}", *torch_link],
        ["gcc", *include, "ext_old.c", "-o", "ext_old.so"],
        # The same module named for Python 3.10: this Python never even finds it.
        ["gcc", *include, "ext_old.c", "-o", "ext_py310.cpython-310-x86_64-linux-gnu.so"],
        ["gcc", "libonboard_gone.c", "-o", "libonboard_gone.so"],
        ["gcc", *include, "ext_needs.c", "-o", f"ext_needs{SUFFIX}", "-L.", "-lonboard_gone"],
        # Needs torch's libc10.so but has no RUNPATH to torch/lib.
        ["g++", *include, "ext_abi.cpp", "-o", f"ext_norpath{SUFFIX}", "-Wl,--no-as-needed",
         "-L", str(TORCH_LIB), "-lc10"],
        ["gcc", *include, "ext_good.c", "-o", f"ext_good{SUFFIX}"],
    ]  # fmt: skip
    for argv in builds:
        subprocess.run([argv[0], "-shared", "-fPIC", "-O0", *argv[1:]], cwd=out, check=True)
    (out / "libonboard_gone.so").unlink()  # built, linked against, then gone
    return out


@pytest.fixture(scope="module", name="env")
def env_fixture() -> TorchEnv:
    return torchenv.probe(sys.executable)


def _explain(env: TorchEnv, ext_dir: Path, module: str) -> extension.ImportAttempt:
    return extension.attempt_import(sys.executable, module, str(ext_dir))


def test_old_cxx_abi_extension(ext_dir: Path) -> None:
    report = diagnose(sys.executable, None, Reporter(), cwd=ext_dir, import_module="ext_abi")
    assert report.exit_code == 1
    finding = report.finding("extension-cxx-abi-mismatch")
    assert finding is not None, [f.id for f in report.findings]
    assert finding.title == (
        f"ext_abi{SUFFIX} was compiled with the old std::string ABI (_GLIBCXX_USE_CXX11_ABI=0), "
        "torch's libc10.so with the C++11 ABI (_GLIBCXX_USE_CXX11_ABI=1)"
    )
    assert "c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string" in (
        finding.why
    )
    assert finding.fix.startswith(f"Drop -D_GLIBCXX_USE_CXX11_ABI=0 from ext_abi{SUFFIX}'s")
    assert report.facts["extension"]["what"] == "import ext_abi"
    assert not report.facts["extension"]["ok"]


def test_function_this_torch_does_not_define(env: TorchEnv, ext_dir: Path, tmp_path: Path) -> None:
    # Installed as a package that says which torch it was built for.
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy2(ext_dir / f"ext_missing{SUFFIX}", site)
    info = site / "onboard_ext_missing-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: onboard-ext-missing\nVersion: 1.0\n"
        "Requires-Dist: torch==2.12.0\nRequires-Dist: numpy\n"
    )
    (info / "RECORD").write_text(f"ext_missing{SUFFIX},,\n")
    attempt = extension.attempt_import(sys.executable, "ext_missing", str(site))
    assert attempt.distribution is not None
    assert attempt.distribution["requires"] == ["torch==2.12.0"]
    [finding] = extension.explain(env, attempt, sys.executable, str(site))
    assert finding.id == "extension-symbol-missing"
    assert "`at::native::onboard_removed_op(at::Tensor const&, long)`" in finding.why
    assert "was built for torch==2.12.0" in finding.why
    assert "headers do not declare `at::native::onboard_removed_op`" in finding.why
    assert "onboard-ext-missing 1.0" in finding.fix
    assert "Reinstall torch" not in finding.fix


def _import_error(folder: Path, module: str) -> str:
    """What `import module` really raises in a fresh interpreter with ``folder`` on its path."""
    code = f"import sys\nsys.path.insert(0, {str(folder)!r})\nimport {module}\n"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 1, run.stderr
    return run.stderr.strip().splitlines()[-1].split(": ", 1)[1]


PY = platform.python_version()  # the interpreter the extensions are imported into

# One module each, explained: (module, finding id, its title, words in its why, words in
# its fix, words its fix must not have).
EXPLAINED = [
    pytest.param(
        "ext_old", "extension-python-mismatch",
        f"ext_old.so was built for another Python, this interpreter is Python {PY}",
        ("missing in this Python", "PyFrame_BlockSetup"),
        ("Rebuild ext_old.so for this Python", "torch itself is fine"),
        "pip install --force-reinstall", id="calls-c-api-this-python-removed",
    ),
    pytest.param(
        "ext_py310", "extension-python-mismatch",
        "ext_py310.cpython-310-x86_64-linux-gnu.so was built for Python 3.10, this interpreter "
        f"is Python {PY}", ("is named for cpython-310-x86_64-linux-gnu (Python 3.10)",),
        ("or run it with the Python 3.10 it was built for",), None, id="named-for-python-3.10",
    ),
    pytest.param(
        "ext_needs", "library-missing",
        f"ext_needs{SUFFIX} needs libonboard_gone.so, which the loader cannot find",
        (str(TORCH_LIB),), ("LD_LIBRARY_PATH",), None, id="a-library-it-links-is-gone",
    ),
    pytest.param(
        "ext_nowhere", "extension-not-found",
        "`import ext_nowhere`: there is no module ext_nowhere where this interpreter looks",
        (), ("PYTHONPATH",), None, id="a-module-that-is-nowhere",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("module", "finding_id", "title", "why", "fix", "not_in_fix"), EXPLAINED)
def test_an_extension_that_does_not_import_is_explained(
    env: TorchEnv,
    ext_dir: Path,
    module: str,
    finding_id: str,
    title: str,
    why: tuple[str, ...],
    fix: tuple[str, ...],
    not_in_fix: str | None,
) -> None:
    [finding] = extension.explain(env, _explain(env, ext_dir, module), sys.executable, str(ext_dir))
    assert (finding.id, finding.title) == (finding_id, title)
    assert finding.needs_action
    # it starts from what the import really raised
    assert finding.why.startswith(f"`import {module}` fails with: {_import_error(ext_dir, module)}")
    for words in why:
        assert words in finding.why
    for words in fix:
        assert words in finding.fix
    assert not_in_fix is None or not_in_fix not in finding.fix


def test_torch_library_without_rpath_through_a_script(ext_dir: Path, tmp_path: Path) -> None:
    # The C++11-ABI build of ext_abi (it links), without a RUNPATH to torch/lib.
    shutil.copy2(ext_dir / f"ext_norpath{SUFFIX}", tmp_path / f"ext_abi{SUFFIX}")
    script = tmp_path / "use_ext.py"
    script.write_text("import ext_abi  # before torch: nothing has loaded libc10.so\n")
    report = diagnose(None, None, Reporter(), cwd=tmp_path, command=[sys.executable, str(script)])
    finding = report.finding("extension-torch-library-not-found")
    assert finding is not None, [f.id for f in report.findings]
    assert finding.title.endswith(
        f"needs torch's own libc10.so, and the loader does not look in {TORCH_LIB}"
    )
    assert "Import torch before ext_abi" in finding.fix


def test_a_script_that_leaves_a_child_running_is_read_when_it_exits(
    ext_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The script's child sleeps on after the script failed: the answer is what the
    # script printed, read when it exits; the child is stopped, not waited for.
    from fixtures.events import gone

    monkeypatch.setattr(extension, "IMPORT_TIMEOUT", 30.0)
    shutil.copy2(ext_dir / f"ext_norpath{SUFFIX}", tmp_path / f"ext_abi{SUFFIX}")
    marker = tmp_path / "child.pid"
    script = tmp_path / "use_ext.py"
    script.write_text(
        "import subprocess, sys\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
        "import ext_abi\n"
    )
    report = diagnose(None, None, Reporter(), cwd=tmp_path, command=[sys.executable, str(script)])
    assert report.finding("extension-torch-library-not-found") is not None
    assert gone(int(marker.read_text()), 10)


def test_working_extension(env: TorchEnv, ext_dir: Path) -> None:
    [ok] = extension.explain(env, _explain(env, ext_dir, "ext_good"), sys.executable, str(ext_dir))
    assert ok.id == "extension-import-ok" and not ok.needs_action


def test_doctor_cli_runs_the_script(
    ext_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = ext_dir / "use_ext_cli.py"  # beside the extension: its folder is on sys.path
    script.write_text("import torch\nimport ext_abi\n")
    monkeypatch.chdir(tmp_path)
    code = run_cli(
        cli, ["doctor", "--json", "--python", sys.executable, "--", "python", str(script)]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [f["id"] for f in data["findings"] if f["severity"] == "error"] == [
        "extension-cxx-abi-mismatch"
    ]
    assert data["facts"]["extension"]["what"] == f"{sys.executable} {script}"


def test_doctor_cli_refuses_both_forms(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(cli, ["doctor", "--import", "x", "--", "python", "x.py"]) == 2
    assert run_cli(cli, ["doctor", "--import", "not a module"]) == 2


def test_locate_routes_the_import_error_to_the_doctor(
    ext_dir: Path, clone_ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = ext_dir / "use_ext_locate.py"
    script.write_text("import torch\nimport ext_abi\n")
    monkeypatch.chdir(tmp_path)
    result = locate(LocateRequest(command=[sys.executable, str(script)], workspace=str(clone_ws)))
    assert result.verdict == IMPORT_FAILED and result.exit_code == 1
    assert [f.id for f in result.diagnosis] == ["extension-cxx-abi-mismatch"]
    assert result.next_step == (
        f"Check it again after the fix: `onboard doctor -- {sys.executable} {script}`."
    )


def test_locate_on_torch_shadowed_by_a_checkout(
    clone_ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python run from a checkout's root imports its torch/ (no compiled libraries):
    # OSError: .../torch/lib/libtorch_global_deps.so: cannot open shared object file,
    # raised where torch/__init__.py loads it (_load_global_deps) with ctypes.
    tree = tmp_path / "pytorch"
    (tree / "torch").mkdir(parents=True)
    (tree / "setup.py").write_text("")
    (tree / "torch/__init__.py").write_text(
        "import ctypes, os\n"
        "ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib', 'libtorch_global_deps.so'))\n"
    )
    monkeypatch.chdir(tree)
    result = locate(
        LocateRequest(command=[sys.executable, "-c", "import torch"], workspace=str(clone_ws))
    )
    assert result.verdict == IMPORT_FAILED
    assert "libtorch_global_deps.so" in (result.message or "")
    assert "torch-shadowed" in [f.id for f in result.diagnosis]
