"""The pre-flight: what must be on this machine before an hour-long build starts.

Compilers, cmake (the version PyTorch's ``CMakeLists.txt`` requires) and ninja,
the submodules, disk and memory. A failed check names its fix; a tool the
checkout needs and this machine lacks is installed into the build venv by the
session instead (``install``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from onboard import git
from onboard.shell import quote
from onboard.workflows.build import machine, requirements
from onboard.workflows.build.machine import Tool
from onboard.workflows.build.memory import Estimate
from onboard.workflows.build.parts import Check, Part

# PyTorch's top-level CMakeLists.txt: cmake_minimum_required(VERSION 3.27 ...).
DEFAULT_MIN_CMAKE = (3, 27)


@dataclass(frozen=True, kw_only=True)
class Preflight(Part):
    """The checks, and the tools the session installs from PyPI (cmake, ninja) when needed."""

    install: tuple[str, ...] = ()


def check(
    *,
    root: Path,
    checkout: Path,
    venv: Path,
    estimate: Estimate,
    jobs: int,
    reqs: requirements.Requirements,
) -> Preflight:
    """Every check, in the order the build would trip over them."""
    checks = compilers()
    install: list[str] = []
    cmake_build = (checkout / "CMakeLists.txt").is_file()
    if cmake_build:
        minimum = min_cmake(checkout)
        for name, at_least, spec in (
            ("cmake", minimum, f"cmake>={_fmt(minimum)}"),
            ("ninja", None, "ninja"),
        ):
            found, needs = tool_from(name, venv, reqs, at_least, spec)
            checks.append(found)
            install += [needs] if needs else []
    else:
        checks.append(Check("cmake", True, "not used: the checkout has no CMakeLists.txt"))
    checks.append(submodules(root, checkout))
    if cmake_build:
        checks += [disk(estimate), memory(estimate, jobs)]
    else:
        # The estimate is PyTorch's CMake build's; a setup.py-only tree needs a fraction
        # of it, so holding it to that would refuse a build that fits.
        unsized = (
            "not checked: the estimate is for PyTorch's CMake build, and the checkout "
            "has no CMakeLists.txt"
        )
        checks += [
            Check("disk", True, f"{unsized} ({estimate.free_disk_gib:.0f} GiB free)"),
            Check("memory", True, f"{unsized} ({estimate.available_memory_gib:.1f} GiB available)"),
        ]
    return Preflight(checks=tuple(checks), install=tuple(install))


def compilers() -> list[Check]:
    checks = []
    for tool in machine.find_compilers():
        if tool.found:
            checks.append(Check(tool.name, True, f"{tool.path}: {tool.first_line}"))
        else:
            checks.append(
                Check(
                    tool.name,
                    False,
                    f"no {tool.name} found ({'$CC' if tool.name.startswith('C ') else '$CXX'}, "
                    "then cc/gcc/clang on PATH).",
                    "`apt-get install build-essential` (Debian/Ubuntu gcc and g++), or set "
                    "CC/CXX to your compiler",
                )
            )
    return checks


def min_cmake(checkout: Path) -> tuple[int, ...]:
    """The cmake version the checkout's ``CMakeLists.txt`` requires."""
    try:
        text = (checkout / "CMakeLists.txt").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return DEFAULT_MIN_CMAKE
    mo = re.search(r"cmake_minimum_required\s*\(\s*VERSION\s+([\d.]+)", text, re.IGNORECASE)
    found = machine.version_tuple(mo.group(1)) if mo else None
    return found or DEFAULT_MIN_CMAKE


def _fmt(version: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in version)


def tool_from(
    name: str,
    venv: Path,
    reqs: requirements.Requirements,
    minimum: tuple[int, ...] | None,
    pypi_spec: str,
) -> tuple[Check, str | None]:
    """Which ``name`` the build will run: the venv's, the requirements', or the system's;
    and the spec the session installs from PyPI when none of them will do."""
    venv_exe = venv / "bin" / name
    at_least = f" >= {_fmt(minimum)}" if minimum else ""
    files = " / ".join(reqs.files)
    if venv_exe.exists():
        tool = machine.tool_at(name, str(venv_exe))
        fix = (
            f"Remove the build venv (`rm -rf {quote(venv)}`) so the session reinstalls "
            f"{pypi_spec} from PyPI"
        )
        return _version_check(name, tool, minimum, "the build venv's", fix=fix), None
    spec = requirements.spec_of(list(reqs.lines), name)
    if spec is not None:
        if minimum and not requirements.spec_allows_at_least(spec, minimum):
            return Check(
                name,
                False,
                f"{files} asks for `{spec}`, which cannot give {name}{at_least} "
                "(what CMakeLists.txt requires).",
                f"Change that line to `{pypi_spec}` (`pip install cmake` gives 4.x).",
            ), None
        found = f"`{spec}` from {files}, installed from PyPI into the build venv by the session"
        return Check(name, True, found), None
    system = machine.find_tool(name)
    sys_version = system.version_tuple()
    if system.found and (minimum is None or (sys_version is not None and sys_version >= minimum)):
        return Check(name, True, f"{system.path} ({name} {system.version})"), None
    found = f"{system.path} is {name} {system.version}" if system.found else f"no {name} on PATH"
    return Check(
        name,
        True,
        f"{found}{', older than ' + _fmt(minimum) if minimum and system.found else ''}: the "
        f"session installs `{pypi_spec}` from PyPI into the build venv",
    ), pypi_spec


def _version_check(
    name: str, tool: Tool, minimum: tuple[int, ...] | None, where: str, *, fix: str
) -> Check:
    version = tool.version_tuple()
    if not tool.found:
        return Check(name, False, f"{where} {name} does not run.", fix + ".")
    if minimum and (version is None or version < minimum):
        return Check(
            name,
            False,
            f"{where} {name} at {tool.path} is {tool.version or 'of unknown version'}, "
            f"older than the {_fmt(minimum)} that CMakeLists.txt requires.",
            fix + ".",
        )
    return Check(name, True, f"{where} {tool.path} ({name} {tool.version})")


def submodules(root: Path, checkout: Path) -> Check:
    """PyTorch's CMake needs every submodule checked out (``.gitmodules``)."""
    if not (checkout / ".gitmodules").is_file():
        return Check("submodules", True, "none declared (no .gitmodules)")
    rows = git.remote.submodule_status(checkout)
    missing = [path for state, _sha, path in rows if state == "-"]
    empty = [
        path
        for state, _sha, path in rows
        if state != "-" and (checkout / path).is_dir() and not any((checkout / path).iterdir())
    ]
    missing += empty
    if missing:
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        return Check(
            "submodules",
            False,
            f"{len(missing)} of {len(rows)} submodules are not checked out ({shown}); "
            "PyTorch's CMake needs them all.",
            f"`onboard setup {quote(root)} --with-submodules` (or `git -C {quote(checkout)} "
            "submodule update --init --recursive --depth 1 --jobs 4`)",
        )
    return Check("submodules", True, f"all {len(rows)} checked out")


def disk(estimate: Estimate) -> Check:
    if estimate.free_disk_gib < estimate.disk_gib:
        return Check(
            "disk",
            False,
            f"{estimate.free_disk_gib:.1f} GiB free where the checkout is, the build needs "
            f"~{estimate.disk_gib:g} GiB.",
            "free space on that disk, or build with `--debinfo FILE` (a Release build with "
            "-g in a few files needs far less)",
        )
    return Check(
        "disk", True, f"{estimate.free_disk_gib:.0f} GiB free, ~{estimate.disk_gib:g} GiB needed"
    )


def memory(estimate: Estimate, jobs: int) -> Check:
    need = max(estimate.link_gib, estimate.compile_gib_per_job)
    if estimate.available_memory_gib < need:
        return Check(
            "memory",
            False,
            f"{estimate.available_memory_gib:.1f} GiB available; one compile job needs "
            f"~{estimate.compile_gib_per_job:g} GiB and the link of libtorch_cpu ~"
            f"{estimate.link_gib:g} GiB.",
            "close other programs or add swap, or use `--debinfo FILE` instead of a "
            "full debug-info build (its link needs ~4 GiB)",
        )
    return Check(
        "memory",
        True,
        f"{estimate.available_memory_gib:.1f} GiB available: {jobs} job(s) x "
        f"~{estimate.compile_gib_per_job:g} GiB, link ~{estimate.link_gib:g} GiB",
    )
