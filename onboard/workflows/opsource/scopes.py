"""The C++ scope a line of a file sits in (``at::native``, ``at::TensorIteratorBase``),
read from the ``namespace X {`` / ``struct X {`` / ``class X {`` blocks open above it.

A frame names its function with its scope (``at::native::dot``); the kernel index
knows definitions by their last name only (``dot``), and ``at::cuda::blas::dot`` in
aten/src/ATen/cuda/CUDABlas.h has that name too. A definition is the frame's only
when the scopes agree.
"""

from __future__ import annotations

import re

_ANON = "(anonymous namespace)"
# Comments, string and character literals: their braces are not the code's.
_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'', re.S)
_OPEN = re.compile(
    r"\bnamespace\s+(?P<ns>[\w:]*)\s*\{"
    r"|\b(?:struct|class|union)\s+(?:alignas\([^)]*\)\s*)?(?:\w+\s+)*?(?P<cls>\w+)"
    r"(?:\s+final)?\s*(?::[^;{}]*)?\{"
    r"|(?P<brace>[{}])"
)


def scope_at(lines: list[str], line: int) -> str:
    """The namespaces and classes open at ``line`` (1-based), joined by ``::``; an
    anonymous namespace is left out, as ``cpp_trace.classify`` leaves it out of names."""
    text = _NOISE.sub(" ", "\n".join(lines[: max(0, line - 1)]))
    stack: list[str | None] = []
    for mo in _OPEN.finditer(text):
        if mo.group("brace") == "}":
            if stack:
                stack.pop()
        elif mo.group("brace") == "{":
            stack.append(None)
        elif mo.group("cls") is not None:
            stack.append(mo.group("cls"))
        else:
            stack.append(mo.group("ns") or _ANON)
    return "::".join(s for s in stack if s and s != _ANON)


def same_scope(qualified: str, lines: list[str], line: int) -> bool:
    """Whether a definition at ``line`` is ``qualified`` (``at::native::dot``)'s: the
    scope its name carries is the one open there."""
    want = qualified.replace(_ANON + "::", "").rsplit("::", 1)[0] if "::" in qualified else ""
    return scope_at(lines, line) == want
