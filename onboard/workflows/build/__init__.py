"""`onboard build`: a debug build of the workspace's checkout in the workspace's nox venv.

``run_build(BuildRequest)`` is the command's entry (``request.py``): ``plan()``
chooses (and explains) the environment, jobs and estimates and runs the
pre-flight; ``build()`` runs the nox session ``build`` (``tasks/build.py``)
with that plan, streams it to a log with a progress bar, and proves afterwards
that the build is the torch in use.
"""

from __future__ import annotations

from onboard.workflows.build.memory import Estimate
from onboard.workflows.build.parts import Check, Choice
from onboard.workflows.build.plan import BuildPlan, plan
from onboard.workflows.build.request import BuildRequest, run_build
from onboard.workflows.build.run import (
    BuildResult,
    CacheStats,
    SetupAndBuild,
    build,
    build_after_setup,
)

__all__ = [
    "BuildPlan",
    "BuildRequest",
    "BuildResult",
    "CacheStats",
    "Check",
    "Choice",
    "Estimate",
    "SetupAndBuild",
    "build",
    "build_after_setup",
    "plan",
    "run_build",
]
