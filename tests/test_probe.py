"""The torch probe (onboard.torchenv) and the ELF reader (onboard.linkage), on the real wheel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from onboard import linkage, torchenv
from onboard.torchenv import classify, parse_config

RELEASE_SHA = "cf30153c4c131c8164ee7798e5022d810682e2cb"
NIGHTLY_SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="session")
def doctor_json(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`onboard doctor --json` on this machine's interpreter, run once."""
    proc = subprocess.run(
        [sys.executable, "-m", "onboard", "doctor", "--json"],
        cwd=tmp_path_factory.mktemp("doctor-cwd"),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


@pytest.fixture(scope="session")
def installed_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        pytest.fail("these tests need torch installed in the interpreter running them")


# --- classification ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "git_version", "kind", "sha", "tag"),
    [
        ("2.13.0+cpu", RELEASE_SHA, "release", RELEASE_SHA, "v2.13.0"),
        ("2.13.0", RELEASE_SHA, "release", RELEASE_SHA, "v2.13.0"),
        ("2.13.0+cu128", RELEASE_SHA, "release", RELEASE_SHA, "v2.13.0"),
        ("2.12.0rc3", RELEASE_SHA, "release", RELEASE_SHA, "v2.12.0rc3"),
        ("2.14.0.dev20260101+cpu", NIGHTLY_SHA, "nightly", NIGHTLY_SHA, None),
        ("2.14.0.dev20260101", NIGHTLY_SHA, "nightly", NIGHTLY_SHA, None),
        ("2.13.0a0+gitcf30153", RELEASE_SHA, "local", RELEASE_SHA, None),
        ("2.13.0a0+gitcf30153", "Unknown", "local", "cf30153", None),
        ("2.13.0", "Unknown", "unknown", None, None),
        ("2.13.0", None, "unknown", None, None),
        ("2.13.0a0", NIGHTLY_SHA, "unknown", NIGHTLY_SHA, None),  # a tree without a tag
    ],
)
def test_classify(
    version: str, git_version: str | None, kind: str, sha: str | None, tag: str | None
) -> None:
    commit = classify(version, git_version)
    assert (commit.kind, commit.sha, commit.tag) == (kind, sha, tag)


def test_parse_config() -> None:
    text = (
        "PyTorch built with:\n"
        "  - GCC 13.3\n"
        "  - C++ Version: 202002\n"
        "  - CPU capability usage: AVX2\n"
        "  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, COMMIT_SHA=abc, "
        "CXX_COMPILER=/opt/rh/gcc-toolset-13/root/usr/bin/c++, CXX_FLAGS= -O2 -fPIC, "
        "USE_CUDA=0, USE_CUDNN=OFF, USE_MKLDNN=ON, \n"
    )
    settings = parse_config(text)
    assert settings["BUILD_TYPE"] == "Release"
    assert settings["COMPILER"] == "GCC 13.3"
    assert settings["CXX_VERSION"] == "202002"
    assert settings["CXX_COMPILER"] == "/opt/rh/gcc-toolset-13/root/usr/bin/c++"
    assert settings["CXX_FLAGS"] == "-O2 -fPIC"
    assert settings["USE_CUDA"] == "0" and settings["USE_MKLDNN"] == "ON"
    assert parse_config("") == {}


# --- the real wheel, through `onboard doctor --json` ------------------------------------


def test_doctor_json_reports_this_machines_torch(
    doctor_json: dict[str, Any], installed_version: str
) -> None:
    assert doctor_json["ok"] is True
    assert doctor_json["findings"] == []
    facts = doctor_json["facts"]
    assert facts["python"]["executable"] == sys.executable
    t = facts["torch"]
    assert t["version"] == installed_version
    assert t["build_prefix"]["prefix"] == "/__w/pytorch/pytorch"
    assert "__FILE__" in t["build_prefix"]["method"]
    assert t["build_prefix"]["source_paths"] > 1000
    assert t["debug_info"] is False  # release wheels carry no DWARF
    assert "onboard build" in t["debug_info_summary"]
    assert t["editable"] is False
    assert t["wheel_tags"] and t["wheel_tags"][0].startswith("cp")
    assert facts["numpy"]


def test_doctor_json_on_the_2_13_cpu_wheel(
    doctor_json: dict[str, Any], installed_version: str
) -> None:
    if installed_version != "2.13.0+cpu":
        pytest.skip(f"the pinned facts are for torch 2.13.0+cpu, this is {installed_version}")
    t = doctor_json["facts"]["torch"]
    assert t["git_version"] == RELEASE_SHA
    assert t["commit"] == {"kind": "release", "sha": RELEASE_SHA, "tag": "v2.13.0", "note": ""}
    assert t["cxx11_abi"] is True
    assert t["cuda"]["version"] is None and t["cuda"]["available"] is False
    assert t["cuda"]["summary"] == "no CUDA (CPU-only build)"
    assert t["cudnn"] is None
    assert t["build_type"] == "Release"
    assert t["use"]["USE_CUDA"] == "0"
    assert t["wheel_tags"][0].endswith("manylinux_2_28_x86_64")


def test_probe_never_imports_the_torch_of_the_folder_onboard_runs_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `cd WS/pytorch; onboard ...`: the checkout's torch/ has no compiled
    # libraries, and a child started there would import it ("no usable torch").
    checkout = tmp_path / "pytorch"
    (checkout / "torch").mkdir(parents=True)
    (checkout / "torch" / "__init__.py").write_text("raise ImportError('the checkout')\n")
    monkeypatch.chdir(checkout)
    env = torchenv.probe(None)
    assert env.import_error is None and env.torch is not None
    assert str(checkout) not in env.sys_path and "" not in env.sys_path
    assert not [c for c in env.candidates if c.startswith(str(checkout))]
    assert Path(env.python.cwd) == torchenv.neutral_cwd()
    assert list(torchenv.neutral_cwd().iterdir()) == []
    assert torchenv.shadowing_tree(checkout) == checkout / "torch"
    # an explicit cwd is used, and still kept off sys.path (PYTHONSAFEPATH)
    env = torchenv.probe(None, cwd=checkout)
    assert env.torch is not None and env.python.cwd == str(checkout)


def test_find_packages_finds_without_importing(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.find_spec("torch")  # this interpreter's answer, asked here
    assert spec is not None and spec.submodule_search_locations
    installed = Path(list(spec.submodule_search_locations)[0])
    found = torchenv.find_packages(sys.executable, "torch", "torchgen", "no_such_package_xyz")
    assert found.folders["torch"] == installed
    assert found.folders["torchgen"] == installed.parent / "torchgen"
    assert found.folders["no_such_package_xyz"] is None
    assert found.python_version == "{}.{}".format(*sys.version_info[:2])
    # A folder whose torch/ raises on import: found (not imported) when not isolated,
    # as a plain run there sees it; kept out when isolated, as the probe does.
    checkout = tmp_path / "pytorch"
    (checkout / "torch").mkdir(parents=True)
    (checkout / "torch" / "__init__.py").write_text("raise ImportError('the checkout')\n")
    plain = torchenv.find_packages(sys.executable, "torch", cwd=checkout, isolate=False)
    assert plain.folders["torch"] == checkout / "torch"
    assert torchenv.find_packages(sys.executable, "torch", cwd=checkout).folders["torch"] == (
        installed
    )


def test_an_interpreter_without_torch_is_no_ab_side(tmp_path: Path) -> None:
    from onboard.errors import BadInput
    from onboard.workflows.ab import sides

    venv = tmp_path / "venv"  # this interpreter, without the packages installed in it
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    bare = str(venv / "bin" / "python")
    with pytest.raises(BadInput) as exc:
        sides.torch_dir(bare, tmp_path)
    assert exc.value.message == f"{bare} cannot be an A/B side: it has no torch."
    assert f"onboard doctor --python {bare}" in (exc.value.next_step or "")
    with pytest.raises(BadInput) as exc:
        sides.torch_dir(str(tmp_path / "no-python"), tmp_path)
    assert "cannot be an A/B side: it failed:" in exc.value.message


def test_build_prefix_scan_is_cached(isolated_home: Path, torch_wheel_dir: Path) -> None:
    lib = torchenv.find_library(torch_wheel_dir)
    assert lib is not None
    first = torchenv.scan_build_prefix(lib)
    cached = list((isolated_home / ".cache" / "onboard").glob("prefix-*.json"))
    assert len(cached) == 1
    assert torchenv.scan_build_prefix(lib) == first
    assert "aten/src/ATen/native/LinearAlgebra.cpp" in first.source_paths


# --- linkage on the real wheel --------------------------------------------------------------


def test_linkage_of_the_real_extension(torch_wheel_dir: Path) -> None:
    ext = next(torch_wheel_dir.glob("_C.*.so"))
    link = linkage.read_linkage(ext)
    assert link is not None
    assert "libtorch_python.so" in link.needed
    assert "$ORIGIN/lib" in link.runpath
    assert link.libpython is None  # manylinux extensions never link libpython
    assert linkage.tag_python_version(linkage.extension_tag(ext.name)) == "{}.{}".format(
        *sys.version_info[:2]
    )
    py = linkage.read_linkage(torch_wheel_dir / "lib" / "libtorch_python.so")
    assert py is not None and "PyList_New" in py.python_symbols


def test_abi_twin_in_the_real_libc10(torch_wheel_dir: Path) -> None:
    # The old-ABI spelling of a function the wheel's libc10 exports with std::__cxx11.
    old = "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs"
    twin = linkage.find_abi_twin(old, [torch_wheel_dir / "lib" / "libc10.so"])
    assert twin is not None
    assert "__cxx11" in twin.found
    assert twin.wanted_cxx11 is False


@pytest.mark.parametrize(
    ("mangled", "prefix"),
    [
        ("_ZN3c106detail14torchCheckFailEPKcS2_jRKSs", "_ZN3c106detail14torchCheckFail"),
        ("_ZNK2at10TensorBase4sizeEl", "_ZNK2at10TensorBase4size"),
        ("_Z3fooi", "_Z3foo"),
        ("PyList_New", None),
    ],
)
def test_name_prefix(mangled: str, prefix: str | None) -> None:
    assert linkage.name_prefix(mangled) == prefix


def test_extension_tags() -> None:
    assert (
        linkage.extension_tag("_C.cpython-39-x86_64-linux-gnu.so") == "cpython-39-x86_64-linux-gnu"
    )
    assert linkage.tag_python_version("cpython-313t-x86_64-linux-gnu") == "3.13t"
    assert linkage.extension_tag("_C.abi3.so") == "abi3"
    assert linkage.tag_python_version("abi3") is None
    assert linkage.version_key("GLIBCXX_3.4.9") < linkage.version_key("GLIBCXX_3.4.32")
