"""The label PyTorch requires on every PR, suggested from the touched paths.

The merge bot refuses a PR without a `release notes: <area>` or
`topic: not user facing` label; contributors without label rights ask the bot
with a comment `@pytorchbot label "..."` (docs/pytorch-facts.md, PR facts). The
suggestion is a starting point: the PR's reviewers have the last word.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from onboard.jsonable import spec

NOT_USER_FACING = "topic: not user facing"

# Paths whose changes users never see: tests, docs, CI and developer tooling.
_NOT_USER_FACING_PREFIXES = (
    "test/",
    "docs/",
    ".github/",
    ".ci/",
    ".circleci/",
    "scripts/",
    "benchmarks/",
    "torch/testing/_internal/",
    "tools/",  # except tools/autograd/, matched as autograd first
)
_NOT_USER_FACING_FILES = (
    ".lintrunner.toml",
    ".gitignore",
    ".clang-format",
    ".clang-tidy",
    ".flake8",
    "CODEOWNERS",
    "pyproject.toml",
    "mypy.ini",
    "mypy-strict.ini",
)

# (path prefix, area), first match wins; areas are the suffixes of PyTorch's
# `release notes: <area>` labels.
_AREAS: tuple[tuple[str, str], ...] = (
    ("tools/autograd/", "autograd"),
    ("torch/autograd/", "autograd"),
    ("torch/csrc/autograd/", "autograd"),
    ("torch/linalg/", "linalg"),
    ("aten/src/ATen/native/LinearAlgebra", "linalg"),
    ("aten/src/ATen/native/BatchLinearAlgebra", "linalg"),
    ("torch/csrc/api/include/torch/linalg", "linalg"),
    ("torch/cuda/", "cuda"),
    ("torch/csrc/cuda/", "cuda"),
    ("c10/cuda/", "cuda"),
    ("aten/src/ATen/cuda/", "cuda"),
    ("aten/src/ATen/native/cuda/", "cuda"),
    ("aten/src/ATen/native/mps/", "mps"),
    ("aten/src/ATen/mps/", "mps"),
    ("torch/mps/", "mps"),
    ("aten/src/ATen/native/sparse/", "sparse"),
    ("torch/sparse/", "sparse"),
    ("aten/src/ATen/native/quantized/", "quantization"),
    ("torch/ao/", "quantization"),
    ("torch/nn/", "nn"),
    ("torch/csrc/api/include/torch/nn/", "nn"),
    ("torch/optim/", "optim"),
    ("torch/fx/", "fx"),
    ("torch/onnx/", "onnx"),
    ("torch/jit/", "jit"),
    ("torch/csrc/jit/", "jit"),
    ("torch/utils/data/", "dataloader"),
    # The Python frontend: the torch namespace, its C++ bindings and ATen's op registry.
    ("aten/src/ATen/native/", "python_frontend"),
    ("torch/csrc/utils/", "python_frontend"),
    ("torch/_torch_docs.py", "python_frontend"),
    ("torch/_tensor_docs.py", "python_frontend"),
    ("torch/_tensor.py", "python_frontend"),
    ("torch/functional.py", "python_frontend"),
    ("torch/overrides.py", "python_frontend"),
    ("torch/__init__.py", "python_frontend"),
)
FALLBACK_AREA = "python_frontend"


@dataclass(frozen=True)
class LabelSuggestion:
    label: str
    reason: str
    alternatives: tuple[str, ...] = field(default=())
    # user-facing paths no rule knew
    unmatched: tuple[str, ...] = field(default=(), metadata=spec(key="unmatched_paths"))

    @property
    def bot_comment(self) -> str:
        return f'@pytorchbot label "{self.label}"'

    def json_extra(self) -> dict[str, object]:
        return {"bot_comment": self.bot_comment}


def is_user_facing(path: str) -> bool:
    if path.startswith("tools/autograd/"):
        return True
    if path in _NOT_USER_FACING_FILES or path.startswith(_NOT_USER_FACING_PREFIXES):
        return False
    # Markdown and reStructuredText outside the package are documentation.
    return not (path.endswith((".md", ".rst")) and not path.startswith("torch/"))


def area_of(path: str) -> str | None:
    for prefix, area in _AREAS:
        if path.startswith(prefix):
            return area
    if path.endswith((".cu", ".cuh")):
        return "cuda"
    if path.startswith("torch/") and path.count("/") == 1:
        return "python_frontend"  # torch/<module>.py: the torch namespace
    return None


def suggest_label(paths: list[str]) -> LabelSuggestion:
    facing = [p for p in paths if is_user_facing(p)]
    if not facing:
        return LabelSuggestion(
            NOT_USER_FACING, "only tests, docs or tooling changed (no user-visible behaviour)"
        )
    counts: Counter[str] = Counter()
    unmatched: list[str] = []
    for path in facing:
        area = area_of(path)
        if area is None:
            unmatched.append(path)
        else:
            counts[area] += 1
    if not counts:
        return LabelSuggestion(
            f"release notes: {FALLBACK_AREA}",
            "no area rule matched the changed paths; check the list of `release notes:` "
            "labels on GitHub and pick the closest",
            unmatched=tuple(unmatched),
        )
    order = [area for _, area in _AREAS]
    ranked = sorted(
        counts, key=lambda a: (-counts[a], order.index(a) if a in order else len(order))
    )
    best = ranked[0]
    files = counts[best]
    return LabelSuggestion(
        f"release notes: {best}",
        f"{files} of the {len(facing)} user-facing changed file(s) are in the {best} area",
        alternatives=tuple(f"release notes: {a}" for a in ranked[1:]),
        unmatched=tuple(unmatched),
    )
