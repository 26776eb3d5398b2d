"""Where an op's DispatchStub and structured kernel are written in the checkout.

The structured-kernel pattern names everything after the op (docs/pytorch-facts.md:
"Anatomy of a structured unary op"): ``DECLARE_DISPATCH(..., NAME_stub)`` in a
header, ``DEFINE_DISPATCH(NAME_stub)`` and ``TORCH_META_FUNC(NAME)`` /
``TORCH_IMPL_FUNC(NAME_out)`` in a .cpp, ``REGISTER_DISPATCH(NAME_stub, ...)``
in a native/cpu/ file and in a .cu file. New-op verify checks they agree; the
practice judge checks the learner's registrations are the only ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

NATIVE = "aten/src/ATen/native"
_SUFFIXES = (".h", ".cpp", ".cu")


def sources(checkout: Path, name: str, first: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(repo path, text) of native sources that mention the op, the files in ``first`` first."""
    seen: dict[str, str] = {}
    for rel in first:
        path = checkout / rel
        if path.is_file() and path.suffix in _SUFFIXES:
            seen[rel] = path.read_text("utf-8", errors="replace")
    native = checkout / NATIVE
    if native.is_dir():
        for path in native.rglob("*"):
            if path.suffix not in _SUFFIXES or not path.is_file():
                continue
            rel = path.relative_to(checkout).as_posix()
            if rel in seen:
                continue
            text = path.read_text("utf-8", errors="replace")
            if f"{name}_stub" in text or f"({name}" in text:
                seen[rel] = text
    return list(seen.items())


def find_all(
    texts: list[tuple[str, str]],
    pattern: str,
    suffixes: tuple[str, ...],
    folder: str | None = None,
) -> list[str]:
    """Every "path:line" where ``pattern`` matches, in files ending with ``suffixes``
    (and under a ``/folder/`` when given)."""
    rx = re.compile(pattern, re.M)
    hits = []
    for rel, text in texts:
        if not rel.endswith(suffixes) or (folder is not None and f"/{folder}/" not in rel):
            continue
        for mo in rx.finditer(text):
            hits.append(f"{rel}:{text.count(chr(10), 0, mo.start()) + 1}")
    return hits


def find(
    texts: list[tuple[str, str]],
    pattern: str,
    suffixes: tuple[str, ...],
    folder: str | None = None,
) -> str | None:
    found = find_all(texts, pattern, suffixes, folder)
    return found[0] if found else None


def registrations(texts: list[tuple[str, str]], stub: str) -> dict[str, list[str]]:
    """Where ``stub`` gets a kernel: {"CPU": [...native/cpu/ sites], "CUDA": [...]}.

    A line that only comments a registration out does not count.
    """
    pattern = rf"^[ \t]*(?:ALSO_)?REGISTER_\w*DISPATCH\(\s*{re.escape(stub)}\s*,"
    # cpu/UnaryOpsKernel.cpp defines and registers many kernels with one macro line,
    # e.g. IMPLEMENT_FLOAT_KERNEL_WITHOUT_AVX512(trunc).
    op = stub.removesuffix("_stub")
    macro = rf"^[ \t]*(?:STATIC_)?IMPLEMENT_\w*KERNEL\w*\(\s*{re.escape(op)}\s*[,)]"
    return {
        "CPU": find_all(texts, pattern, (".cpp",), "cpu")
        + find_all(texts, macro, (".cpp",), "cpu"),
        "CUDA": find_all(texts, pattern, (".cu",)),
    }
