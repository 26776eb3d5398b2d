"""Memory and disk: ``MAX_JOBS`` from free memory, and what the build will need.

PyTorch builds run out of memory easily, so the number of jobs is planned from
the memory the kernel says is available, not from the number of cores alone.

Memory model (assumed per job, documented here because MAX_JOBS follows from it):

============== =============== ==============================================
build type     compile per job link of libtorch_cpu (one at a time)
============== =============== ==============================================
Release        2.5 GiB         4 GiB
RelWithDebInfo 3.0 GiB         8 GiB (debug info: the .so exceeds 4 GB, pytorch#61261)
Debug          3.5 GiB         10 GiB (-O0 -g: more and larger objects)
============== =============== ==============================================

plus 1.5 GiB per job for nvcc when USE_CUDA=1 (``DEBUG_CUDA`` makes nvcc run
out of memory first). pytorch#20296 saw a debug build OOM in 5 GB at
MAX_JOBS=1, so a single job is never assumed to fit in less than the
compile figure. Disk: the ``build/`` folder of a CPU build is assumed at
10 / 25 / 35 GiB (Release / RelWithDebInfo / Debug), +10 GiB for CUDA with one
architecture, plus ~2 GiB for the build venv and the compiler cache's limit.
These are estimates for pytorch/pytorch, not measurements of this checkout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from onboard.errors import BadInput
from onboard.jsonable import spec
from onboard.workflows.build import machine
from onboard.workflows.build.build_type import DEBUG, REL_WITH_DEB_INFO, RELEASE
from onboard.workflows.build.machine import GIB
from onboard.workflows.build.parts import Choice, Part

COMPILE_GIB = {RELEASE: 2.5, REL_WITH_DEB_INFO: 3.0, DEBUG: 3.5}
LINK_GIB = {RELEASE: 4.0, REL_WITH_DEB_INFO: 8.0, DEBUG: 10.0}
NVCC_EXTRA_GIB = 1.5
BUILD_DIR_GIB = {RELEASE: 10.0, REL_WITH_DEB_INFO: 25.0, DEBUG: 35.0}
CUDA_BUILD_DIR_GIB = 10.0
VENV_GIB = 2.0


@dataclass(frozen=True)
class Estimate:
    disk_gib: float
    free_disk_gib: float = field(metadata=spec(digits=1))
    compile_gib_per_job: float
    link_gib: float
    available_memory_gib: float = field(metadata=spec(digits=1))
    cores: int
    reason: str


@dataclass(frozen=True, kw_only=True)
class MaxJobs(Part):
    """``MAX_JOBS``, why, and the disk and memory the build is estimated to need."""

    count: int
    reason: str
    estimate: Estimate


def max_jobs(
    checkout: Path, build_type: str, *, use_cuda: bool, requested: int | None, debinfo: bool
) -> MaxJobs:
    """``--jobs`` when given (with a note when it may not fit), else min(cores, what fits)."""
    ncores = machine.cores()
    avail = machine.available_memory()
    per_job = COMPILE_GIB[build_type] + (NVCC_EXTRA_GIB if use_cuda else 0.0)
    link = LINK_GIB[build_type]
    fit = int((avail / GIB) // per_job)
    notes: tuple[str, ...] = ()
    if requested is not None:
        if requested < 1:
            raise BadInput("--jobs must be at least 1.", next_step="Run `onboard build --jobs 2`.")
        jobs = requested
        reason = f"--jobs {requested}"
        if jobs > max(fit, 1):
            notes = (
                f"--jobs {jobs} may run out of memory: {avail / GIB:.1f} GiB available fits "
                f"{max(fit, 1)} jobs at ~{per_job:g} GiB each (pytorch#20296).",
            )
    else:
        jobs = max(1, min(ncores, fit))
        reason = (
            f"min({ncores} cores, {avail / GIB:.1f} GiB available / ~{per_job:g} GiB per "
            f"{build_type} compile job{' with nvcc' if use_cuda else ''} = {fit}) "
            "(assumed per job: 2.5 GiB Release, 3 GiB RelWithDebInfo, 3.5 GiB Debug, "
            "+1.5 GiB with nvcc)"
        )
    disk = BUILD_DIR_GIB[build_type] + (CUDA_BUILD_DIR_GIB if use_cuda else 0.0) + VENV_GIB
    if debinfo:
        disk = BUILD_DIR_GIB[RELEASE] + (CUDA_BUILD_DIR_GIB if use_cuda else 0.0) + VENV_GIB + 1
    estimate = Estimate(
        disk_gib=disk,
        free_disk_gib=machine.free_disk(checkout) / GIB,
        compile_gib_per_job=per_job,
        link_gib=link,
        available_memory_gib=avail / GIB,
        cores=ncores,
        reason=(
            f"Assumed for pytorch/pytorch ({build_type}, "
            f"{'CUDA' if use_cuda else 'CPU'}): build/ ~{disk - VENV_GIB:g} GiB plus "
            f"~{VENV_GIB:g} GiB venv; the link of libtorch_cpu ~{link:g} GiB "
            "(a debug-info libtorch_cpu.so exceeds 4 GB, pytorch#61261)."
        ),
    )
    return MaxJobs(
        env=(Choice("MAX_JOBS", str(jobs), reason),),
        notes=notes,
        count=jobs,
        reason=reason,
        estimate=estimate,
    )
