"""The parts of a scaffold its author has not written yet: new-op's own placeholders.

`onboard new-op` writes a placeholder wherever the op's author has work to do
(the CPU and CUDA kernels' math, the derivative, REFERENCE, the docstring, the
OpInfo's NumPy reference), each on or under a ``TODO(onboard new-op)`` line. A
part counts as not written while its marker line and the lines after it (up to
a blank line or the next marker, at most ``_AFTER``) are still exactly what the
scaffold wrote, leading and trailing whitespace aside: writing the part changes
them, and deleting the marker says it is done. The scaffold's text is rendered
again from the same templates and family, so nothing has to be remembered.

A placeholder that compiles and agrees with a placeholder REFERENCE passes every
numeric check; only this says that nothing was written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from onboard.render import render
from onboard.workflows.newop import manifest as manifests
from onboard.workflows.newop.plan import DERIVATIVES_YAML, OPINFO, TORCH_DOCS, context, op_files

MARKER = "TODO(onboard new-op)"
_AFTER = 4
# (role in the manifest, its default path, the template, what the author writes there)
_PARTS = (
    ("CPU kernel", None, "newop/kernel_cpu.cpp.j2", "the CPU kernel's math"),
    ("CUDA kernel", None, "newop/kernel_cuda.cu.j2", "the CUDA kernel's math"),
    ("autograd formula", DERIVATIVES_YAML, "newop/derivatives.yaml.j2", "the derivative"),
    ("test", None, "newop/test_op.py.j2", "REFERENCE (the result the op must give)"),
    ("torch.NAME docstring", TORCH_DOCS, "newop/torch_docs.py.j2", "the docstring"),
    ("OpInfo entry", OPINFO, "newop/opinfo.py.j2", "the OpInfo's NumPy reference"),
)


@dataclass(frozen=True)
class Unwritten:
    what: str
    location: str  # path:line of the marker


def _blocks(rendered: str) -> list[list[str]]:
    """Each marker line with the lines after it that hold its placeholder."""
    lines = [ln.strip() for ln in rendered.splitlines()]
    blocks = []
    for i, line in enumerate(lines):
        if MARKER not in line:
            continue
        block = [line]
        for after in lines[i + 1 : i + 1 + _AFTER]:
            if not after or MARKER in after:
                break
            block.append(after)
        blocks.append(block)
    return blocks


def _line_of(lines: list[str], block: list[str]) -> int | None:
    """The 1-based line where ``block`` starts in ``lines`` (both stripped)."""
    n = len(block)
    for i, line in enumerate(lines):
        if line == block[0] and lines[i : i + n] == block:
            return i + 1
    return None


def unwritten(
    checkout: Path,
    manifest: manifests.Manifest,
    read: Callable[[str], str | None] | None = None,
) -> list[Unwritten]:
    """Every placeholder of ``manifest``'s scaffold still as new-op wrote it, in the
    checkout's files (or as ``read(path)`` gives them: a commit's)."""

    def from_disk(rel: str) -> str | None:
        path = checkout / rel
        return path.read_text("utf-8", errors="replace") if path.is_file() else None

    read = read or from_disk
    ctx = context(manifest.name, manifest.family)
    defaults = op_files(manifest.name)
    found = []
    for role, default, template, what in _PARTS:
        rel = manifest.files.get(role) or default or defaults.get(role)
        text = read(rel) if rel else None
        if rel is None or text is None:
            continue
        lines = [ln.strip() for ln in text.splitlines()]
        for block in _blocks(render(template, indent="", **ctx)):
            line = _line_of(lines, block)
            if line is not None:
                found.append(Unwritten(what, f"{rel}:{line}"))
    return found


def summary(found: list[Unwritten]) -> str:
    """One sentence: what is still the scaffold's placeholder, and where."""
    by_what: dict[str, list[str]] = {}
    for item in found:
        by_what.setdefault(item.what, []).append(item.location)
    return "; ".join(f"{what} ({', '.join(where)})" for what, where in by_what.items())
