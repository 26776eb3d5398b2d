"""Which of PyTorch's tests cover a change, ranked, each with why and its command.

The rules are those of PyTorch's own target determination
(tools/testing/target_determination/heuristics/) that work offline (a test file the
change edits, file-path keywords, the public-bindings rule: any torch/ change runs
test/test_public_bindings.py), plus the one CI gets from the OpInfo database: a
changed op is tested by every OpInfo-driven test file, each through its entry
(``python test/test_ops.py -k trunc``; unittest's -k, repeatable, matches the test
names, which carry the OpInfo's formatted_name: test_dtypes_trunc_cpu_float32).

Which test files take which ops, from PyTorch's test/ (each file's ``@ops(...)``):
test/test_ops.py (op_db and its python_ref_db refs), test/test_unary_ufuncs.py
(unary_ufuncs), test/test_binary_ufuncs.py (binary_ufuncs), test/test_reductions.py
(reduction_ops), test/test_spectral_ops.py (spectral_funcs), test/test_ops_gradients.py
(op_db at float64/complex128: gradcheck of ops that support autograd),
test/test_ops_fwd_gradients.py (forward AD), test/test_decomp.py and test/test_meta.py
(op_db), test/test_ops_jit.py (op_db through TorchScript).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from onboard.workflows.tests.opinfo import OpInfoEntry, OpInfoIndex
from onboard.workflows.tests.result import ChangedOp, Selected

PUBLIC_BINDINGS = "test/test_public_bindings.py"
TEST_OPS = "test/test_ops.py"

# (test file, the list its @ops takes, what it checks, score): the OpInfo-driven files.
OPINFO_FILES: tuple[tuple[str, str, str, int], ...] = (
    (TEST_OPS, "op_db", "samples against references, dtypes, out=, variants", 90),
    ("test/test_unary_ufuncs.py", "unary_ufuncs", "unary ufunc numerics against NumPy", 88),
    ("test/test_binary_ufuncs.py", "binary_ufuncs", "binary ufunc numerics and type promotion", 88),
    ("test/test_reductions.py", "reduction_ops", "reduction dims, keepdim, empty inputs", 88),
    ("test/test_spectral_ops.py", "spectral_funcs", "FFTs against NumPy", 88),
    ("test/test_ops_gradients.py", "autograd", "gradcheck and gradgradcheck (float64)", 80),
    ("test/test_ops_fwd_gradients.py", "forward_ad", "forward-mode AD", 70),
    ("test/test_decomp.py", "op_db", "its decomposition against the kernel", 62),
    ("test/test_meta.py", "op_db", "its meta (shape-only) kernel", 62),
    ("test/test_ops_jit.py", "op_db", "the op through TorchScript", 50),
)

# torch/<package>/ (or a source path) -> the suite that owns it.
PACKAGE_SUITES = (
    ("torch/nn/", "test/test_nn.py"),
    ("torch/autograd/", "test/test_autograd.py"),
    ("torch/csrc/autograd/", "test/test_autograd.py"),
    ("tools/autograd/derivatives.yaml", "test/test_autograd.py"),
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
# Path parts too common to say anything about which test covers a file.
_STOP_WORDS = frozenset(
    ("torch", "aten", "src", "native", "csrc", "cpu", "cuda", "include", "tools", "test",
     "tests", "init", "utils", "util", "impl", "common", "core", "ops", "op", "functional",
     "base", "py", "cpp", "cu")
)  # fmt: skip
_ADDED_TEST = re.compile(r"^\+\s*def (test_\w+)\s*\(", re.M)
_OWNER = re.compile(r"#\s*Owner\(s\):\s*\[(?P<labels>[^\]]*)\]")
OWNER_EXTRA_CAP = 4  # tests selected by their Owner(s) header alone, per area


@dataclass
class _Pick:
    test: str
    score: int
    reasons: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    k: list[str] = field(default_factory=list)  # -k patterns


class Picker:
    """Collects the tests, their reasons and -k patterns, then ranks them."""

    def __init__(self, checkout: Path) -> None:
        self.checkout = checkout
        self.picks: dict[str, _Pick] = {}
        self.full = (checkout / "test").is_dir()

    def add(
        self,
        test: str,
        score: int,
        reason: str,
        *,
        ops: Sequence[str] = (),
        k: Sequence[str] = (),
    ) -> None:
        pick = self.picks.setdefault(test, _Pick(test, score))
        pick.score = max(pick.score, score)
        if reason not in pick.reasons:
            pick.reasons.append(reason)
        pick.ops.extend(o for o in ops if o not in pick.ops)
        pick.k.extend(p for p in k if p not in pick.k)

    def present(self, test: str) -> bool:
        return (self.checkout / test).exists()

    def ranked(self) -> list[Selected]:
        order = sorted(self.picks.values(), key=lambda p: (-p.score, p.test))
        return [
            Selected(
                test=p.test,
                command=command_for(p.test, p.k),
                reasons=tuple(p.reasons),
                ops=tuple(p.ops),
                rank=i,
                present=self.present(p.test),
                also=alternatives(p.test, p.k),
            )
            for i, p in enumerate(order, 1)
        ]


def command_for(test: str, k: Sequence[str]) -> tuple[str, ...]:
    """How PyTorch's CONTRIBUTING.md runs one test file (``python test/test_x.py``,
    with unittest's ``-k`` once per pattern); a folder through pytest."""
    if test.endswith("/"):
        return ("python", "-m", "pytest", test, *_pytest_k(k))
    flags = [a for pattern in k for a in ("-k", pattern)]
    return ("python", test, *flags)


def alternatives(test: str, k: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """The same through test/run_test.py (as CI runs it: the file's name under test/)
    and through pytest."""
    if test.endswith("/") or not test.startswith("test/"):
        return ()
    name = test.removeprefix("test/").removesuffix(".py")
    run_test = ("python", "test/run_test.py", "-i", name)
    pytest = ("python", "-m", "pytest", test, *_pytest_k(k))
    return (run_test, pytest)


def _pytest_k(k: Sequence[str]) -> tuple[str, ...]:
    return ("-k", " or ".join(k)) if k else ()


# --- the rules ---


def add_op_tests(picker: Picker, changed: Sequence[ChangedOp], index: OpInfoIndex) -> None:
    """Every OpInfo-driven test file that takes a changed op, through its entries."""
    for op in changed:
        entries = [e for name in op.opinfos for e in index.named(name) if e.name == name]
        if not entries:
            why = (
                f"op `{op.base}` has no OpInfo entry yet: test_ops.py tests an op through "
                "one (add it to op_db in torch/testing/_internal/common_methods_invocations.py)"
            )
            picker.add(TEST_OPS, 85, why, k=[op.base])
            continue
        for test, which, checks, score in OPINFO_FILES:
            took = [e for e in entries if _takes(which, e)]
            if not took:
                continue
            names = sorted({e.name for e in took})
            label = ", ".join(f"{e.kind} `{e.name}`" for e in took[:3])
            picker.add(
                test,
                score,
                f"op `{op.base}` changed; its OpInfo {label} is tested here: {checks}",
                ops=names,
                k=sorted({e.test_name for e in took}),
            )


def _takes(which: str, entry: OpInfoEntry) -> bool:
    if which == "op_db":
        return True
    if which == "autograd":
        return entry.autograd
    if which == "forward_ad":
        return entry.forward_ad
    return which in entry.lists


def add_path_rules(picker: Picker, path: str, status: str, diff: str) -> None:
    """The rules that look at the path: an edited test, the public bindings, the
    package's suite, the torch/x.py -> test/test_x.py name and file-path keywords."""
    p = Path(path)
    if path.startswith("test/") and p.suffix == ".py":
        if status == "D":
            return
        added = sorted(set(_ADDED_TEST.findall(diff)))
        if p.name.startswith("test_"):
            why = "the change edits this test file"
            if added:
                why += f" (adds or changes {', '.join(added)})"
            picker.add(path, 100, why, k=added)
        return
    if path.startswith("torch/") and p.suffix in (".py", ".pyi"):
        picker.add(
            PUBLIC_BINDINGS,
            65,
            f"{path} is under torch/: PyTorch's public-bindings rule runs "
            "test_public_bindings for any torch/ change (every public name needs a "
            "__module__ and an __all__ entry)",
        )
    for prefix, suite in PACKAGE_SUITES:
        if path.startswith(prefix) and (not picker.full or picker.present(suite)):
            picker.add(suite, 75, f"suite owning {prefix.rstrip('/')}")
    if not picker.full:
        return
    for suite in _named_tests(path):
        if picker.present(suite):
            picker.add(suite, 72, f"named after {path}")
    for word in keywords(path):
        for suite in (f"test/test_{word}.py", f"test/{word}/"):
            if picker.present(suite):
                picker.add(suite, 55, f"file-path keyword `{word}` of {path}")


def _named_tests(path: str) -> list[str]:
    p = Path(path)
    if not path.startswith("torch/") or p.suffix != ".py":
        return []
    parent = p.parent.parent if p.stem == "__init__" else p.parent
    stem = p.parent.name if p.stem == "__init__" else p.stem
    if stem == "torch":
        return []
    names = [stem] if not stem.startswith("_") else [stem, stem.lstrip("_")]
    sub = parent.relative_to("torch") if parent.is_relative_to("torch") else Path(".")
    out = []
    for name in names:
        if not name:
            continue
        if str(sub) != ".":
            out.append((Path("test") / sub / f"test_{name}.py").as_posix())
        out.append(f"test/test_{name}.py")
    return out


def keywords(path: str) -> list[str]:
    """The words of a path that can name a test (``torch/nn/modules/conv.py``: nn,
    modules, conv)."""
    words: list[str] = []
    parts = Path(path).with_suffix("").parts
    for part in parts:
        for word in re.split(r"[^A-Za-z0-9]+", part):
            word = word.lower()
            if len(word) > 2 and word not in _STOP_WORDS and word not in words:
                words.append(word)
    return words


def add_owner_rule(picker: Picker, paths: Sequence[str]) -> None:
    """In a full checkout, the test files whose ``# Owner(s): ["module: X"]`` header
    names the area a changed path is in: a reason for a test already picked, and at
    most ``OWNER_EXTRA_CAP`` more per area."""
    if not picker.full:
        return
    areas: dict[str, str] = {}
    for path in paths:
        parts = Path(path).parts
        if len(parts) > 2 and parts[0] == "torch":
            areas.setdefault(parts[1].lstrip("_"), path)
    if not areas:
        return
    owners = read_owners(picker.checkout)
    for area, path in areas.items():
        label = f"module: {area}"
        extra = 0
        for test, labels in owners.items():
            if label not in labels:
                continue
            if test in picker.picks:
                picker.add(test, 0, f"its Owner(s) header is `{label}`, the area of {path}")
            elif extra < OWNER_EXTRA_CAP:
                extra += 1
                picker.add(test, 40, f"its Owner(s) header is `{label}`, the area of {path}")


def read_owners(checkout: Path) -> dict[str, list[str]]:
    """test file -> the labels of its ``# Owner(s):`` first line (PyTorch's
    test files all start with one: test/test_ops.py has ["module: unknown"])."""
    owners: dict[str, list[str]] = {}
    for test in sorted((checkout / "test").glob("test_*.py")):
        try:
            with test.open("rb") as fh:
                head = fh.read(300).decode("utf-8", "replace")
        except OSError:
            continue
        mo = _OWNER.search(head)
        if mo:
            labels = [x.strip().strip("'\"") for x in mo.group("labels").split(",")]
            owners[test.relative_to(checkout).as_posix()] = [x for x in labels if x]
    return owners
