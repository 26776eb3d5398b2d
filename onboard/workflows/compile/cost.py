"""Failures and cost, from the trace's ``compilation_metrics`` (one per compile,
``torch/_dynamo/utils.py`` ``CompilationMetrics``) and ``dynamo_error`` artifacts (the
exception's traceback, ``torch/_dynamo/convert_frame.py``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from onboard.workflows.compile import recompiles
from onboard.workflows.compile.result import Failure, FrameCost, Place
from onboard.workflows.compile.sources import TorchSources, deciding_frame, traceback_frames
from onboard.workflows.compile.trace import Process

_LINK = re.compile(r"/gb/gb(\d+)\.html")
# The graph caches a compile looks in: AOTAutograd's and Inductor's FX graph cache.
_CACHES = ("aotautograd_local", "inductor_fx_local", "aotautograd_remote", "inductor_fx_remote")
_HITS = tuple(f"{c}_cache_hit_count" for c in _CACHES)
_MISSES = tuple(f"{c}_cache_miss_count" for c in _CACHES)

# What torch documents for cutting a failure down (torch/_dynamo/config.py repro_after
# and repro_level; the troubleshooting page of torch.compile).
_MINIFY_BACKEND = (
    'TORCHDYNAMO_REPRO_AFTER="dynamo" {cmd}   # writes minifier_launcher.py under '
    "torch_compile_debug/; run it to cut the graph down"
)
_MINIFY_AOT = (
    'TORCHDYNAMO_REPRO_AFTER="aot" {cmd}   # Inductor failed: minifies after AOTAutograd '
    "(minifier_launcher.py under torch_compile_debug/)"
)
_VERBOSE = (
    'TORCHDYNAMO_VERBOSE=1 TORCH_LOGS="+dynamo" {cmd}   # dynamo\'s internal stack: the '
    "minifier cuts down graphs, and this failed while tracing, before any graph"
)


def metrics(process: Process) -> list[dict[str, Any]]:
    return [r.body for r in process.of_kind("compilation_metrics") if isinstance(r.body, dict)]


def failures(
    processes: list[Process], sources: TorchSources, command: str, backend: str | None
) -> list[Failure]:
    """Compiles that raised, not the graph breaks dynamo recovered from (a frame it
    skipped after a break has a graph break record too) nor the recompile limit."""
    out: list[Failure] = []
    for process in processes:
        broke = {r.compile_id for r in process.artifacts("dynamo_graph_break_reason")}
        errors = {r.compile_id: r.payload or "" for r in process.artifacts("dynamo_error")}
        frames = recompiles.frames_of(process)
        for m in metrics(process):
            kind = m.get("fail_type")
            reason = str(m.get("fail_reason") or "")
            cid = str(m.get("compile_id") or "")
            if not kind or recompiles.LIMIT_TEXT in reason.lower():
                continue
            if kind == "Unsupported" and cid in broke:
                continue
            frame = frames.get(recompiles.frame_id(cid))
            function = m.get("co_name") or (frame.function if frame else "?")
            user = None
            if m.get("fail_user_frame_filename"):
                path, line = str(m["fail_user_frame_filename"]), int(m["fail_user_frame_lineno"])
                user = Place(path, line, "", sources.line_text(Path(path), line))
            raised = _raised_at(errors.get(cid, ""), sources, kind)
            ids = _LINK.findall(reason)
            out.append(
                Failure(
                    kind=str(kind),
                    message=_first_paragraph(reason),
                    function=str(function),
                    compile_id=cid,
                    user=user,
                    raised_at=raised,
                    registry=sources.entry(f"GB{ids[0]}") if ids else None,
                    minifier=_minifier(str(kind), backend, m, command),
                )
            )
    return out


def _raised_at(traceback_text: str, sources: TorchSources, kind: str) -> Place | None:
    if not traceback_text:
        return None
    if kind == "BackendCompilerFailed":
        # The backend's own frame raised (the last frame of the traceback).
        frames = traceback_frames(traceback_text.split("\nThe above exception", 1)[0])
        if frames:
            path, line, func, code = frames[-1]
            if "/torch/" in path.replace("\\", "/"):
                return sources.place(path, line, func)
            return Place(path, line, func, code)
    frame = deciding_frame(traceback_text)
    return sources.place(*frame) if frame else None


def _minifier(kind: str, backend: str | None, m: dict[str, Any], command: str) -> str:
    if kind == "BackendCompilerFailed":
        inductor = (backend or "") == "inductor" or m.get("inductor_compile_time_s") is not None
        return (_MINIFY_AOT if inductor else _MINIFY_BACKEND).format(cmd=command)
    return _VERBOSE.format(cmd=command)


def _first_paragraph(text: str) -> str:
    return text.strip().split("\n\n", 1)[0].strip()


def frames(processes: list[Process]) -> list[FrameCost]:
    """Per compiled function (resume functions apart): compiles, graphs, ops, time."""
    grouped: dict[tuple[str, str, int], FrameCost] = {}
    for process in processes:
        known = recompiles.frames_of(process)
        for m in metrics(process):
            frame = known.get(recompiles.frame_id(m.get("compile_id")))
            name = m.get("co_name") or (frame.function if frame else None)
            if not name:
                continue
            path = m.get("co_filename") or (frame.path if frame else "")
            line = m.get("co_firstlineno") or (frame.line if frame else 0)
            key = (str(name), str(path), int(line))
            cost = grouped.setdefault(key, FrameCost(str(name), str(path), int(line), 0, 0))
            cost.compiles += 1
            ops = m.get("graph_op_count")
            if m.get("has_guarded_code") and ops is not None:
                cost.graphs += 1
                cost.ops_per_graph.append(int(ops))
            cost.compile_seconds += float(m.get("entire_frame_compile_time_s") or 0.0)
            cost.cache_hits += sum(int(m.get(k) or 0) for k in _HITS)
            cost.cache_misses += sum(int(m.get(k) or 0) for k in _MISSES)
    return list(grouped.values())


def not_checked(processes: list[Process]) -> list[str]:
    """What needs a GPU: said, not guessed, when the run had none."""
    ms = [m for p in processes for m in metrics(p)]
    cuda = any(m.get("cuda_version") for m in ms)
    triton = any(m.get("triton_version") for m in ms)
    said = []
    if not cuda:
        said.append(
            "CUDA graphs (mode='reduce-overhead'): this run's torch has no CUDA, so no "
            "graph was captured or replayed."
        )
    skipped = sorted(
        {str(m["cudagraph_skip_reason"]) for m in ms if m.get("cudagraph_skip_reason")}
    )
    said += [f"CUDA graphs skipped: {s}" for s in skipped]
    if not triton:
        said.append(
            "Triton kernels: Triton is not in this run (Inductor generates C++ for the "
            "CPU), so no GPU kernel was compiled or timed."
        )
    return said
