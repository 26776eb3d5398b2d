"""Which of PyTorch's tests cover a change.

PyTorch's test files run directly (`python test/test_nn.py -k name`,
CONTRIBUTING.md "Unit testing"). An op's behaviour is tested through its
OpInfo entry by `test/test_ops.py` (plus test_decomp / test_meta): `-k NAME`
selects it. A path maps to a test file only when that file is in the checkout;
an op gets its OpInfo line even in a checkout without test/ (the tree rebuilt
from a wheel has none), marked as not present.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from onboard import git
from onboard.shell import quote
from onboard.workflows.pr.change import Change

NATIVE_FUNCTIONS = "aten/src/ATen/native/native_functions.yaml"
DERIVATIVES = "tools/autograd/derivatives.yaml"
NEW_OP_BRANCH = re.compile(r"^onboard/new-op-(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")
_ADDED_FUNC = re.compile(r"^\+- func:\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)[.(]")

# torch/<package>/ -> the suite that owns it (checked for presence).
_PACKAGE_SUITES = (
    ("torch/nn/", "test/test_nn.py"),
    ("torch/autograd/", "test/test_autograd.py"),
    ("torch/csrc/autograd/", "test/test_autograd.py"),
    (DERIVATIVES, "test/test_autograd.py"),
    ("torch/optim/", "test/test_optim.py"),
    ("torch/linalg/", "test/test_linalg.py"),
    ("aten/src/ATen/native/LinearAlgebra", "test/test_linalg.py"),
    ("aten/src/ATen/native/BatchLinearAlgebra", "test/test_linalg.py"),
    ("torch/fx/", "test/test_fx.py"),
    ("torch/cuda/", "test/test_cuda.py"),
    ("torch/sparse/", "test/test_sparse.py"),
    ("torch/utils/data/", "test/test_dataloader.py"),
    ("torch/_dynamo/", "test/dynamo/"),
    ("torch/_inductor/", "test/inductor/"),
    ("torch/onnx/", "test/onnx/"),
)


@dataclass(frozen=True)
class TestCommand:
    command: str  # "python test/test_ops.py -k trunc"
    reason: str  # why: "new op `trunc` (OpInfo tests)"
    present: bool  # the test file is in this checkout


def ops_in_change(change: Change) -> list[str]:
    """Op names the change adds: the `onboard new-op` branch name, then new
    `- func:` entries in native_functions.yaml."""
    names: list[str] = []
    match = NEW_OP_BRANCH.match(change.branch)
    if match:
        names.append(match.group("name"))
    if NATIVE_FUNCTIONS in change.paths:
        diff = git.history.diff_text(
            change.repo, change.merge_base, change.head, [NATIVE_FUNCTIONS]
        )
        for line in diff.splitlines():
            m = _ADDED_FUNC.match(line)
            if m:
                # trunc_, trunc.out and trunc are one OpInfo: `-k trunc` selects them all.
                base = m.group("name").rstrip("_")
                if base and base not in names:
                    names.append(base)
    return names


def tests_for(change: Change) -> list[TestCommand]:
    repo = change.repo
    found: dict[str, TestCommand] = {}

    def add(command: str, reason: str, present: bool) -> None:
        found.setdefault(command, TestCommand(command, reason, present))

    for op in ops_in_change(change):
        present = (repo / "test/test_ops.py").is_file()
        add(f"python test/test_ops.py -k {op}", f"op `{op}`: its OpInfo tests", present)
    for path in change.existing_paths:
        for suite, reason in _suites_for(path):
            target = repo / suite
            if not target.exists():
                continue
            if suite.endswith("/"):
                add(f"python -m pytest {quote(suite)}", reason, True)
            else:
                add(f"python {quote(suite)}", reason, True)
    return list(found.values())


def _suites_for(path: str) -> list[tuple[str, str]]:
    suites: list[tuple[str, str]] = []
    p = Path(path)
    if path.startswith("test/") and p.name.startswith("test_") and p.suffix == ".py":
        suites.append((path, "changed test file"))
        return suites
    if path.startswith("torch/") and p.suffix == ".py":
        stem = p.stem
        if stem == "__init__":
            stem = p.parent.name
        names = [stem] if not stem.startswith("_") else [stem, stem.lstrip("_")]
        sub = p.parent.relative_to("torch")
        for name in names:
            if name:
                if str(sub) != ".":
                    suites.append(
                        ((Path("test") / sub / f"test_{name}.py").as_posix(), f"tests for {path}")
                    )
                suites.append((f"test/test_{name}.py", f"tests for {path}"))
    for prefix, suite in _PACKAGE_SUITES:
        if path.startswith(prefix):
            suites.append((suite, f"suite owning {prefix.rstrip('/')}"))
    return suites
