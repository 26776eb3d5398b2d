"""Waits on a CUDA device: ``torch.cuda.synchronize()`` / ``Stream.synchronize()``
/ ``Event.synchronize()`` / a device-to-host copy, blocked in the CUDA runtime
(``cudaDeviceSynchronize``, ``cudaStreamSynchronize``, ``cudaEventSynchronize``,
``cudaMemcpy``) under torch's c10::cuda / at::cuda frames. Named from the
stacks; the device's own state (a kernel that never ends, a peer in NCCL) is
not read here, and without a GPU on this machine nothing of it was checked."""

from __future__ import annotations

from onboard.workflows.stuck.diagnoses.common import Context, at, thread_label
from onboard.workflows.stuck.model import NATIVE, Diagnosis, Picture

_CUDA_WAITS = (
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cuStreamSynchronize",
    "cuCtxSynchronize",
    "cuEventSynchronize",
    "c10::cuda::device_synchronize",
    "c10::cuda::stream_synchronize",
)


def diagnose(pictures: list[Picture], context: Context) -> list[Diagnosis]:
    found = []
    for picture in pictures:
        for thread in picture.threads:
            wait = next(
                (
                    f
                    for f in reversed(thread.frames)
                    if f.kind == NATIVE and f.function.startswith(_CUDA_WAITS)
                ),
                None,
            )
            if wait is None:
                continue
            caller = thread.last_python
            torch_frame = next(
                (
                    f
                    for f in reversed(thread.frames)
                    if f.kind == NATIVE and f.in_torch_library and "cuda" in f.function.lower()
                ),
                None,
            )
            found.append(
                Diagnosis(
                    kind="cuda",
                    title=f"CUDA: waiting for the device in {wait.function}",
                    where=((picture.pid, thread.tid),),
                    evidence=(
                        f"{thread_label(picture, thread)} waits in {wait.function}"
                        + (f" under {torch_frame.function}" if torch_frame else "")
                        + f", called from {at(caller)}",
                    ),
                    meaning=(
                        "The host waits for work queued on the GPU to finish: a kernel still "
                        "running (or never ending), or a collective (NCCL) on that stream "
                        "waiting for its peers. The stacks show the host side only."
                    ),
                    try_next=(
                        "Run with CUDA_LAUNCH_BLOCKING=1 to see which kernel it waits on.",
                        "`nvidia-smi` shows whether the GPU is busy; for NCCL, "
                        "TORCH_NCCL_DUMP_ON_TIMEOUT=1 dumps the flight recorder.",
                    ),
                    sites=tuple(
                        f.where for f in (caller, torch_frame) if f is not None and f.where
                    ),
                    checked=context.gpu,
                    unchecked_why=""
                    if context.gpu
                    else "no CUDA device on this machine: named from the stacks, not checked",
                )
            )
    return found
