"""The checkout's requirements, installed into the build venv without torch.

The first of ``requirements-build.txt`` and ``requirements.txt`` the checkout
has is read with its ``-r`` includes; the line naming torch is dropped so the
build venv never gets torch from PyPI (the checkout is the torch it builds).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from onboard.workflows.build import machine
from onboard.workflows.build.parts import Part

REQUIREMENT_FILES = ("requirements-build.txt", "requirements.txt")


@dataclass(frozen=True, kw_only=True)
class Requirements(Part):
    """The first requirements file the checkout has, its lines, and what the session installs."""

    files: tuple[str, ...]
    lines: tuple[str, ...]  # every requirement line (-r includes inlined)
    kept: tuple[str, ...]  # the lines the session installs (torch dropped)
    dropped: tuple[str, ...]


def choose(checkout: Path) -> Requirements:
    files = tuple(f for f in REQUIREMENT_FILES if (checkout / f).is_file())[:1]
    lines = read_requirements(checkout / files[0]) if files else []
    kept = [ln for ln in lines if ln.startswith("-") or requirement_name(ln) != "torch"]
    dropped = [ln for ln in lines if ln not in kept]
    notes = (
        (
            f"{files[0]} lists {', '.join(dropped)}: not installed, so the build venv never "
            "gets torch from PyPI (the checkout is the torch it installs).",
        )
        if dropped
        else ()
    )
    return Requirements(
        notes=notes, files=files, lines=tuple(lines), kept=tuple(kept), dropped=tuple(dropped)
    )


def requirement_name(line: str) -> str | None:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        return canonicalize_name(Requirement(line).name)
    except InvalidRequirement:
        return None


def read_requirements(path: Path, _seen: set[Path] | None = None) -> list[str]:
    """The requirement lines of ``path`` with ``-r`` includes inlined, comments dropped."""
    seen = _seen if _seen is not None else set()
    path = path.resolve()
    if path in seen or not path.is_file():
        return []
    seen.add(path)
    lines: list[str] = []
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        mo = re.match(r"^(-r|--requirement)[\s=]+(\S+)$", line)
        if mo:
            lines += read_requirements(path.parent / mo.group(2), seen)
            continue
        lines.append(line)
    return lines


def spec_of(lines: list[str], name: str) -> str | None:
    """The requirement line naming ``name`` (None when absent)."""
    for line in lines:
        if not line.startswith("-") and requirement_name(line) == name:
            return line
    return None


def spec_allows_at_least(line: str, minimum: tuple[int, ...]) -> bool:
    """Can ``line`` (``cmake==3.25.1``, ``cmake>=3.27``) install a version >= minimum?"""
    from packaging.requirements import Requirement

    spec = Requirement(line).specifier
    if not str(spec):
        return True
    base = ".".join(str(p) for p in minimum)
    probes = [
        base,
        f"{minimum[0]}.{minimum[1] + 1}",
        f"{minimum[0]}.99",
        f"{minimum[0] + 1}.0",
        f"{minimum[0] + 1}.99",
        f"{minimum[0] + 9}.0",
    ]
    pinned = [s.version for s in spec if s.operator in ("==", "===", "~=", ">=", ">")]
    probes += [v for v in pinned if (machine.version_tuple(v) or (0,)) >= minimum]
    return any(spec.contains(v, prereleases=True) for v in probes)
