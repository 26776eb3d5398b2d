"""CUDA or not, and for which GPU architecture: ``USE_CUDA`` and ``TORCH_CUDA_ARCH_LIST``.

A CUDA build needs both a GPU and nvcc. Only this machine's architectures go
in ``TORCH_CUDA_ARCH_LIST``: each extra one multiplies nvcc time and the size
of the CUDA libraries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from onboard import proc
from onboard.errors import OnboardError
from onboard.workflows.build import machine
from onboard.workflows.build.parts import Choice, Part

if TYPE_CHECKING:
    from onboard.torchenv import TorchEnv


@dataclass(frozen=True, kw_only=True)
class Cuda(Part):
    """Whether the build uses CUDA (``USE_CUDA=1``)."""

    enabled: bool


def choose(env_probe: TorchEnv | None) -> Cuda:
    """``USE_CUDA=1`` with this machine's architectures when a GPU and nvcc are both here."""
    torch = env_probe.torch if env_probe else None
    devices = list(torch.devices) if torch else []
    source = "torch"
    if not devices and (torch is None or not torch.cuda):
        # A CPU-only torch (2.13.0+cpu) cannot see a GPU: ask the driver.
        devices = nvidia_smi_devices()
        source = "nvidia-smi"
    nvcc = machine.find_nvcc()
    gpu_text = ", ".join(f"{d.get('name')} (sm {d.get('capability')})" for d in devices)
    if devices and nvcc.found:
        caps = sorted({str(d.get("capability")) for d in devices if d.get("capability")})
        env = (
            Choice(
                "USE_CUDA",
                "1",
                f"a GPU ({gpu_text}, seen by {source}) and nvcc {nvcc.version} ({nvcc.path}) "
                "are present",
            ),
            Choice(
                "TORCH_CUDA_ARCH_LIST",
                ";".join(caps),
                "only this machine's GPU architecture: each extra architecture multiplies "
                "nvcc time and the size of the CUDA libraries",
            ),
        )
        return Cuda(env=env, enabled=True)
    if devices:
        why = (
            f"a GPU is present ({gpu_text}) but nvcc was not found (looked in "
            "$CUDA_HOME/bin, PATH, /usr/local/cuda/bin): install the CUDA toolkit "
            f"matching torch.version.cuda ({torch.cuda if torch else 'unknown'}) to build "
            "with CUDA"
        )
    elif nvcc.found:
        seen = (
            f"torch {torch.version} sees no CUDA device"
            + (f" ({torch.cuda_error})" if torch and torch.cuda_error else "")
            if torch
            else "no torch could be probed"
        )
        why = f"nvcc {nvcc.version} is present ({nvcc.path}) but there is no GPU: {seen}" + (
            ""
            if torch is None or torch.cuda
            else " and it is a CPU-only build; nvidia-smi found no GPU either"
        )
    else:
        why = "there is no GPU and no nvcc on this machine"
    cpu = Choice("USE_CUDA", "0", why + "; a CPU build is smaller and faster")
    return Cuda(env=(cpu,), enabled=False)


def nvidia_smi_devices() -> list[dict[str, str]]:
    """The GPUs the driver lists (index, name, compute capability); none without nvidia-smi."""
    exe = machine.find_tool("nvidia-smi", version_arg="--help")
    if not exe.found or exe.path is None:
        return []
    try:
        result = proc.run(
            [exe.path, "--query-gpu=index,name,compute_cap", "--format=csv,noheader"],
            timeout=60,
            check=False,
        )
    except OnboardError:
        return []
    devices = []
    for line in result.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and re.match(r"^\d+\.\d+$", parts[2]):
            devices.append({"index": parts[0], "name": parts[1], "capability": parts[2]})
    return devices
