"""Workspaces for the `where` / `locate` tests (shared by tests/test_where.py and test_locate.py).

- a full-checkout-like workspace: the fixture repo (tests/fixtures/pytorch_repo.py,
  seeded from the installed wheel: the real yaml, headers, UnaryOps.cpp,
  LinearAlgebra.cpp with the mm check on line 204) saved as a `clone` workspace;
- a reference-like workspace: the wheel's headers, yaml and a few Python files
  put back at their source-tree paths (as `onboard setup --from-wheel` lays
  them out), committed with git, saved as a `reference` workspace.

Both name the installed torch's commit and the CI build prefix, as `onboard
setup` writes them. Nothing here imports torch.

The fixtures at the end (`shared_cache`, an autouse cache, `private_cache`,
`clone_ws`, `reference_ws`) are used by importing them into the test module (pytest finds
fixtures in a module's namespace, so the autouse one applies to that module
only); each is defined as `*_fixture` with `name=` so a test's parameter does
not shadow the import.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fixtures.pytorch_repo import build_pytorch_repo, find_package_dir, find_torch_dir, git

from onboard import workspace

BUILD_PREFIX = "/__w/pytorch/pytorch"
DATA = Path(__file__).resolve().parent / "data" / "locate"


def installed_commit() -> str:
    """torch.version.git_version, read from torch/version.py without importing torch."""
    text = (find_torch_dir() / "version.py").read_text(encoding="utf-8")
    mo = re.search(r"git_version\s*=\s*['\"]([0-9a-f]{40})['\"]", text)
    assert mo, "the installed torch has no git_version"
    return mo.group(1)


def installed_version() -> str:
    text = (find_torch_dir() / "version.py").read_text(encoding="utf-8")
    mo = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", text)
    assert mo
    return mo.group(1)


def save_workspace(root: Path, checkout_kind: str) -> workspace.Workspace:
    ws = workspace.Workspace(
        root=root,
        torch_version=installed_version(),
        commit=installed_commit(),
        commit_kind="release",
        build_prefix=BUILD_PREFIX,
        python=sys.executable,
        checkout="pytorch",
        checkout_kind=checkout_kind,
    )
    workspace.save(ws)
    return ws


def make_clone_workspace(root: Path) -> workspace.Workspace:
    root.mkdir(parents=True)
    build_pytorch_repo(root / "pytorch", commits=2)
    return save_workspace(root, "clone")


# (wheel path under torch/include, source-tree path)
_HEADER_GLOBS = (
    ("ATen", "aten/src/ATen", "*.h"),
    ("ATen/native", "aten/src/ATen/native", "*.h"),
    ("ATen/native/cpu", "aten/src/ATen/native/cpu", "*.h"),
    ("c10/util", "c10/util", "*.h"),
    ("c10/core", "c10/core", "*.h"),
)
_PYTHON = (
    "torch/_meta_registrations.py",
    "torch/_prims_common/__init__.py",
    "torch/testing/_internal/common_methods_invocations.py",
    "torch/nn/functional.py",
)


def make_reference_workspace(root: Path) -> workspace.Workspace:
    tree = root / "pytorch"
    tree.mkdir(parents=True)
    include = find_torch_dir() / "include"
    for src_dir, dest_dir, pattern in _HEADER_GLOBS:
        dest = tree / dest_dir
        dest.mkdir(parents=True, exist_ok=True)
        for path in sorted((include / src_dir).glob(pattern)):
            shutil.copy2(path, dest / path.name)
    packaged = find_package_dir("torchgen") / "packaged"
    native = tree / "aten/src/ATen/native"
    for name in ("native_functions.yaml", "tags.yaml"):
        shutil.copy2(packaged / "ATen" / "native" / name, native / name)
    (tree / "tools/autograd").mkdir(parents=True)
    shutil.copy2(
        packaged / "autograd" / "derivatives.yaml", tree / "tools/autograd/derivatives.yaml"
    )
    site = find_torch_dir().parent
    for rel in _PYTHON:
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(site / rel, tree / rel)
    git("init", "-q", "-b", "reference", tree)
    git("add", "-A", cwd=tree)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "reference", cwd=tree)
    return save_workspace(root, "reference")


# --- fixtures (module scope: each workspace and the caches are built once) ---


@pytest.fixture(scope="module", name="shared_cache")
def shared_cache_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onboard-cache")


@pytest.fixture(autouse=True, name="_cache")
def cache_fixture(shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One cache per module (still under pytest's tmp): the indexes are built and
    # torchgen parses the yaml once.
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared_cache))


@pytest.fixture(name="private_cache")
def private_cache_fixture(
    shared_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Path]:
    """``private_cache(*leave_out)``: this test's own copy of the module's cache
    (without entries matching the ``leave_out`` globs), as XDG_CACHE_HOME; returns
    its opsource folder, for a test that edits or drops entries."""

    def copy(*leave_out: str) -> Path:
        private = tmp_path / "cache"
        shutil.copytree(shared_cache, private, ignore=shutil.ignore_patterns(*leave_out))
        monkeypatch.setenv("XDG_CACHE_HOME", str(private))
        return private / "onboard" / "opsource"

    return copy


@pytest.fixture(scope="module", name="clone_ws")
def clone_ws_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws-clone") / "ws"
    make_clone_workspace(root)
    return root


@pytest.fixture(scope="module", name="reference_ws")
def reference_ws_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws-ref") / "ws"
    make_reference_workspace(root)
    return root
