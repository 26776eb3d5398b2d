"""The build type, as PyTorch's ``setup.py`` and ``tools/setup_helpers/env.py`` read it.

``CMAKE_BUILD_TYPE`` wins; else ``DEBUG=1`` gives Debug, ``REL_WITH_DEB_INFO=1``
RelWithDebInfo, and the default is Release. ``USE_CUSTOM_DEBINFO`` gives -g to
the files it names only. An existing ``build/CMakeCache.txt`` wins over all of
them until ``CMAKE_FRESH=1`` reconfigures.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from onboard.errors import BadInput
from onboard.workflows.build.parts import Choice, Part

RELEASE, REL_WITH_DEB_INFO, DEBUG = "Release", "RelWithDebInfo", "Debug"


@dataclass(frozen=True, kw_only=True)
class BuildType(Part):
    """The CMake build type the variables in ``env`` give."""

    name: str


def choose(checkout: Path, *, debug: bool, debinfo_files: tuple[str, ...]) -> BuildType:
    """``--debug``: Debug; ``--debinfo FILE``: Release with -g in FILE; else RelWithDebInfo."""
    if debug and debinfo_files:
        raise BadInput(
            "--debug and --debinfo cannot be combined: --debug already gives every file -g.",
            next_step="Use `onboard build --debug` for a full debug build, or "
            "`onboard build --debinfo FILE` for a fast build with -g only in FILE.",
        )
    env: list[Choice] = []
    if os.environ.get("CMAKE_BUILD_TYPE"):
        env.append(
            Choice(
                "CMAKE_BUILD_TYPE",
                None,
                f"your environment sets CMAKE_BUILD_TYPE={os.environ['CMAKE_BUILD_TYPE']}, which "
                "wins over DEBUG/REL_WITH_DEB_INFO in setup.py; removed for this build so the "
                "flags below decide",
            )
        )
    if debug:
        env += [
            Choice(
                "DEBUG",
                "1",
                "--debug: -O0 -g everywhere (slowest build, slowest torch, "
                "every local variable visible in gdb)",
            ),
            Choice("REL_WITH_DEB_INFO", None, "DEBUG=1 decides the build type"),
        ]
        return BuildType(env=tuple(env), name=DEBUG)
    if debinfo_files:
        missing = [f for f in debinfo_files if not (checkout / f).is_file()]
        if missing:
            raise BadInput(
                f"--debinfo names files that are not in the checkout {checkout}: "
                f"{', '.join(missing)}.",
                next_step="Give paths relative to the checkout root, e.g. "
                "`--debinfo aten/src/ATen/native/UnaryOps.cpp` (`onboard where OP` finds "
                "an op's files).",
            )
        env += [
            Choice(
                "USE_CUSTOM_DEBINFO",
                ";".join(debinfo_files),
                "--debinfo: an optimised Release build where only these files get -g, so gdb "
                "steps through them while the build and link stay fast",
            ),
            Choice("DEBUG", None, "USE_CUSTOM_DEBINFO builds Release elsewhere"),
            Choice("REL_WITH_DEB_INFO", None, "USE_CUSTOM_DEBINFO builds Release elsewhere"),
        ]
        return BuildType(env=tuple(env), name=RELEASE)
    env += [
        Choice(
            "REL_WITH_DEB_INFO",
            "1",
            "default: optimised code with debug info (-O2 -g): gdb and VS Code show source "
            "lines and stacks at near-release speed (--debug for -O0, --debinfo FILE for -g in "
            "a few files only)",
        ),
        Choice("DEBUG", None, "REL_WITH_DEB_INFO=1 decides the build type"),
    ]
    return BuildType(env=tuple(env), name=REL_WITH_DEB_INFO)


def reconfigure(checkout: Path, build_type: str) -> Part:
    """``CMAKE_FRESH=1`` when ``build/CMakeCache.txt`` was configured as another type."""
    cache = checkout / "build" / "CMakeCache.txt"
    if not cache.is_file():
        return Part()
    text = cache.read_text(encoding="utf-8", errors="replace")
    mo = re.search(r"^CMAKE_BUILD_TYPE:\w+=(.*)$", text, re.MULTILINE)
    old = (mo.group(1).strip() if mo else "") or "(empty)"
    if old == build_type:
        return Part(
            notes=(f"build/CMakeCache.txt is already configured as {old}: an incremental build.",)
        )
    fresh = Choice(
        "CMAKE_FRESH",
        "1",
        f"build/CMakeCache.txt was configured as CMAKE_BUILD_TYPE={old}, and an existing "
        f"cache wins over DEBUG/REL_WITH_DEB_INFO in setup.py: CMAKE_FRESH=1 reconfigures "
        f"as {build_type} (objects of the old type are rebuilt)",
    )
    return Part(env=(fresh,))
