"""What this machine offers a build: cores, memory, disk, and the tools on it.

Every fact here is read (``/proc/meminfo``, ``os.sched_getaffinity``,
``shutil.disk_usage``, ``TOOL --version``), never assumed; the plan turns
them into choices and the pre-flight into errors that name the fix.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from onboard import proc
from onboard.errors import OnboardError
from onboard.jsonable import spec

GIB = 1024**3
_VERSION_RE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class Tool:
    """One executable the build needs: where it is and its version (None: not found)."""

    name: str
    path: str | None
    version: str | None = None
    first_line: str = field(default="", metadata=spec(omit=True))

    @property
    def found(self) -> bool:
        return self.path is not None

    def version_tuple(self) -> tuple[int, ...] | None:
        return version_tuple(self.version)


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    mo = _VERSION_RE.search(text)
    if not mo:
        return None
    return tuple(int(p) for p in mo.groups() if p is not None)


def cores() -> int:
    """CPUs this process may run on (a container's cpuset, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def available_memory() -> int:
    """Bytes the kernel says can be allocated without swapping (MemAvailable)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:  # not Linux: physical memory as the best available answer
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    except (OSError, ValueError, AttributeError):
        return 0


def free_disk(path: Path) -> int:
    """Free bytes on the file system that holds ``path`` (its nearest existing parent)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def find_tool(
    name: str,
    *,
    candidates: tuple[str, ...] = (),
    path: str | None = None,
    version_arg: str = "--version",
) -> Tool:
    """The first of ``candidates`` (default ``name``) found on ``path`` (default PATH).

    The version is read by running it: a broken binary shows up here rather
    than an hour into the build.
    """
    exe = None
    for candidate in candidates or (name,):
        exe = (
            shutil.which(candidate, path=path)
            if not os.path.isabs(candidate)
            else (candidate if os.access(candidate, os.X_OK) else None)
        )
        if exe:
            break
    if exe is None:
        return Tool(name, None)
    return tool_at(name, exe, version_arg=version_arg)


def tool_at(name: str, exe: str, *, version_arg: str = "--version") -> Tool:
    try:
        result = proc.run([exe, version_arg], timeout=60, check=False)
    except OnboardError:
        return Tool(name, None)
    text = (result.stdout or result.stderr).strip()
    first = text.splitlines()[0] if text else ""
    mo = _VERSION_RE.search(first) or _VERSION_RE.search(text)
    return Tool(name, exe, mo.group(0) if mo else None, first)


def find_nvcc() -> Tool:
    """nvcc where PyTorch's CMake looks for it: CUDA_HOME/CUDA_PATH, PATH, /usr/local/cuda."""
    candidates = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(os.path.join(os.environ[var], "bin", "nvcc"))
    candidates += ["nvcc", "/usr/local/cuda/bin/nvcc"]
    return find_tool("nvcc", candidates=tuple(candidates))


def find_compilers() -> tuple[Tool, Tool]:
    """(C compiler, C++ compiler) as CMake would pick them: CC/CXX first, then cc/c++."""
    cc_env, cxx_env = os.environ.get("CC"), os.environ.get("CXX")
    c = find_tool(
        "C compiler", candidates=((cc_env.split()[0],) if cc_env else ("cc", "gcc", "clang"))
    )
    cxx = find_tool(
        "C++ compiler", candidates=((cxx_env.split()[0],) if cxx_env else ("c++", "g++", "clang++"))
    )
    return c, cxx
