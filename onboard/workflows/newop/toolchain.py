"""The compilers an op check drives: the workspace's torch, the C++ compile, nvcc.

One place for the interpreter's torch and torchgen folders, the flags that make
an out-of-tree object match the wheel's ABI (docs/pytorch-facts.md: "Checking a
scaffolded op without building PyTorch"), the compile child, and the
compile-only nvcc check of a ``.cu`` file. New-op verify and the practice
judge use the very same functions.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import proc, torchenv
from onboard.errors import OnboardError
from onboard.render import render

if TYPE_CHECKING:
    from onboard.workspace import Workspace

from onboard.workflows.newop.steps import (
    FAILED,
    NOT_CHECKED,
    PASSED,
    Step,
    fingerprint,
    first_compiler_error,
    write_if_changed,
)

CODEGEN_TIMEOUT = 600.0
COMPILE_TIMEOUT = 900.0
CXX_FLAGS = (
    "-O2",
    "-Wno-psabi",
    # DispatchStub's layout must match the wheel's, which has AVX2/AVX512 slots.
    "-DHAVE_AVX2_CPU_DEFINITION",
    "-DHAVE_AVX512_CPU_DEFINITION",
    "-DAT_PER_OPERATOR_HEADERS",
)
# Stand-ins for CUDA library headers a CPU machine lacks (templates/newop/verify/).
CUDA_STANDINS = {
    "cusparse.h": "cusparse.h.j2",
    "cublas_v2.h": "cublas_v2.h.j2",
    "cublasLt.h": "cublasLt.h.j2",
    "cusolver_common.h": "cusolver_common.h.j2",
    "cusolverDn.h": "cusolverDn.h.j2",
    "c10/cuda/impl/cuda_cmake_macros.h": "cuda_cmake_macros.h.j2",
}
NVCC_STEP = "CUDA kernel compiles (nvcc)"


@dataclass(frozen=True)
class Env:
    python: str
    torch_dir: Path
    torchgen_dir: Path


def workspace_env(ws: Workspace) -> Env:
    """The torch and torchgen of the workspace's interpreter, asked from its own
    folder (never the checkout, whose torch/ would shadow the installed one)."""
    neutral = ws.root / ".onboard"
    neutral.mkdir(parents=True, exist_ok=True)
    return locate_env(ws.python or sys.executable, neutral)


def locate_env(python: str, cwd: Path) -> Env:
    # cwd: not the checkout, whose torch/ folder would shadow the installed package.
    found = torchenv.find_packages(
        python, "torch", "torchgen", cwd=cwd, what=f"Locating torch for {python}"
    )
    torch_dir, torchgen_dir = found.folders["torch"], found.folders["torchgen"]
    if torch_dir is None or torchgen_dir is None:
        raise OnboardError(
            f"{python} has no torch (or no torchgen), so the scaffold cannot be checked "
            "against it.",
            next_step="Run `onboard doctor` to see what that interpreter has.",
        )
    return Env(python, torch_dir, torchgen_dir)


def compile_child(
    env: Env, request: dict[str, Any], build: Path, jobs: int
) -> tuple[proc.Result, dict[str, Any] | None]:
    """Build ``request["sources"]`` with torch.utils.cpp_extension.load in a child of
    the workspace interpreter, load it and run the checks the request names."""
    # By path: it imports _oracle_checks.py from its own folder (no PYTHONSAFEPATH,
    # which would hide it; a script's folder, not the cwd, leads sys.path).
    try:
        asked = proc.ask_child(
            env.python,
            "_compile_child.py",
            json.dumps(request),
            by_path=True,
            cwd=build,
            timeout=COMPILE_TIMEOUT,
            extra_env={
                # The stub shim leaves the AVX2/AVX512 slots empty: run the DEFAULT kernel.
                "ATEN_CPU_CAPABILITY": "default",
                "MAX_JOBS": str(max(1, jobs)),
                "TORCH_EXTENSIONS_DIR": str(build),
            },
            what="the out-of-tree compile",
        )
    except proc.NoAnswer as exc:
        return exc.result, None
    return asked.result, asked.data


def kernel_unit(glue: Path, kernel: Path) -> Path:
    """A translation unit that builds a native/cpu/ file as ATen's build does for DEFAULT."""
    path = glue / "kernel_default.cpp"
    write_if_changed(path, render("newop/verify/kernel_default.cpp.j2", kernel_path=str(kernel)))
    return path


def stub_shim(header_include: str, stubs: list[str]) -> str:
    return render("newop/verify/stub_shim.cpp.j2", header_include=header_include, stubs=stubs)


def _virtual_arch(nvcc: str) -> list[str]:
    """``-arch=compute_X -code=compute_X`` for the oldest architecture nvcc knows: PTX
    only, so the check skips ptxas (register allocation says nothing about the code)."""
    listed = proc.run([nvcc, "--list-gpu-arch"], timeout=60, check=False).stdout.split()
    archs = sorted(
        (a for a in listed if a.startswith("compute_") and a[8:].isdigit()),
        key=lambda a: int(a[8:]),
    )
    return [f"-arch={archs[0]}", f"-code={archs[0]}"] if archs else []


def nvcc_step(
    *,
    checkout: Path,
    cu: str | None,
    cache: Path,
    env: Env,
    include_dirs: list[Path],
    inputs: list[Path],
    defines: tuple[str, ...] = (),
) -> Step:
    """Compile-only check of a .cu file with nvcc: ``-ptx`` runs cicc, whose front end
    parses and checks the whole file (host functions and the templates they
    instantiate included, so an error in the launcher is caught), then generates
    unoptimised PTX; not cudafe++'s host lowering, the host compiler or ptxas."""
    import time

    start = time.monotonic()
    nvcc = proc.which("nvcc")
    if nvcc is None:
        return Step(NVCC_STEP, NOT_CHECKED, "nvcc is not on PATH")
    if not cu or not (checkout / cu).is_file():
        return Step(NVCC_STEP, FAILED, "the .cu file is missing", cu)
    standins = cache / "cuda-standins"
    for header, template in CUDA_STANDINS.items():
        write_if_changed(standins / header, render(f"newop/verify/{template}"))
    # -Xcicc -O0: the device code is generated but not optimised (a third of nvcc's time;
    # the errors a kernel can have come from the front end, before optimisation).
    # -ptx, not --cuda: --cuda adds cudafe++'s host lowering (as long again as cicc),
    # which reports nothing the front end has not already checked.
    args = [nvcc, "-std=c++20", "-x", "cu", "-ptx", "-Xcicc", "-O0", str(checkout / cu)]
    args += ["-o", os.devnull]
    for folder in (*include_dirs, standins):
        args += ["-I", str(folder)]
    args += [
        "-isystem",
        str(env.torch_dir / "include"),
        "-isystem",
        str(env.torch_dir / "include" / "torch" / "csrc" / "api" / "include"),
        "--expt-relaxed-constexpr",
        "--expt-extended-lambda",
        "-DHAVE_AVX2_CPU_DEFINITION",
        "-DHAVE_AVX512_CPU_DEFINITION",
        *defines,
    ]
    version = proc.run([nvcc, "--version"], timeout=60, check=False).stdout
    key = fingerprint(checkout / cu, *inputs, " ".join(args), version, env.torch_dir)
    stamp = cache / "nvcc-ok"
    if stamp.is_file() and stamp.read_text() == key:
        # cached=True: the report adds "(cached)" (tasks/newop_checks.py), once.
        return Step(NVCC_STEP, PASSED, f"{cu} compiles", cached=True)
    args[1:1] = _virtual_arch(nvcc)
    # background: the CPU compile beside it is the longer chain (parse, compile, checks).
    result = proc.run(
        args, cwd=cache, timeout=COMPILE_TIMEOUT, check=False, what="nvcc", background=True
    )
    seconds = time.monotonic() - start
    if result.returncode != 0:
        where, message = first_compiler_error(result.stderr + result.stdout, checkout)
        return Step(NVCC_STEP, FAILED, message, where or cu, seconds)
    stamp.write_text(key)
    return Step(
        NVCC_STEP,
        PASSED,
        f"{cu} compiles with nvcc (the front end on host and device code and unoptimised "
        "PTX; no host compile, no machine code; stand-ins for cuBLAS/cuSPARSE/cuSOLVER "
        "headers)",
        seconds=seconds,
    )
