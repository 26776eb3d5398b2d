"""Graph breaks, from the trace's ``dynamo_graph_break_reason`` artifacts: the text
``log_graph_break`` writes (``torch/_dynamo/symbolic_convert.py``): "Graph break in
user code at FILE:LINE", "Graph Break Reason: ...", torch's explanation and hints,
the registry link (``.../gb/gb0170.html``) and the user's traceback. Each distinct
break (user line and registry entry) is given once, with how often it happened."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from onboard.workflows.compile.result import GraphBreak, Place
from onboard.workflows.compile.sources import TorchSources, deciding_frame, traceback_frames
from onboard.workflows.compile.trace import Process, Record

_AT = re.compile(r"^Graph break .*?in user code at (?P<path>.+):(?P<line>\d+)\s*$", re.M)
_SKIP_AT = re.compile(r"^Graph break: torch\.compile cannot properly resume", re.M)
_REASON = re.compile(r"^Graph Break Reason: (?P<reason>.*)$", re.M)
_LINK = re.compile(r"/gb/gb(\d+)\.html")
_EXPLANATION = re.compile(r"^\s*Explanation: (?P<text>.*)$", re.M)
# torch's hints as this run worded them (the registry's are templates: "`{fn.__name__}`").
_HINT = re.compile(r"^\s*Hint: (?P<text>.*)$", re.M)
# "Encountered graph break when attempting to trace CALL: ...:" and "Failed to handle
# graph break gracefully ...:" wrap the break: its type is on the next line with text.
_WRAPPERS = ("Encountered graph break when attempting", "Failed to handle graph break")
_SKIPPED = "Failed to handle graph break gracefully"
_TRACEBACK = "Traceback (most recent call last):"


@dataclass
class Seen:
    """One graph break as one trace artifact records it."""

    path: str
    line: int
    gb_id: str | None
    reason: str
    explanation: str
    hints: list[str]
    stack: list[tuple[str, int, str, str]]  # the user's frames (path, line, function, code)
    torch_traceback: str  # the exception's traceback through dynamo, when torch wrote it
    compile_id: str | None
    skipped_frame: bool  # dynamo gave up on the whole frame (it ran eagerly)


def parse(record: Record) -> Seen | None:
    text = record.payload or ""
    at = _AT.search(text)
    user_part, _, torch_part = text.partition(_TRACEBACK)
    frames = _user_frames(user_part)
    if at is not None:
        path, line = at["path"], int(at["line"])
    elif frames:  # the skip message names no line: the innermost user frame is it
        path, line = frames[-1][0], frames[-1][1]
    else:
        return None
    ids = _LINK.findall(text)
    return Seen(
        path=path,
        line=line,
        gb_id=f"GB{ids[0]}" if ids else None,
        reason=_reason(text),
        explanation=_explanation(text),
        hints=[m["text"].strip() for m in _HINT.finditer(user_part)],
        stack=frames,
        torch_traceback=_TRACEBACK + torch_part if torch_part else "",
        compile_id=record.compile_id,
        skipped_frame=_SKIPPED in text or bool(_SKIP_AT.search(text)),
    )


def _reason(text: str) -> str:
    m = _REASON.search(text)
    if m is None:
        return ""
    reason = m["reason"].strip()
    if not reason.startswith(_WRAPPERS):
        return reason
    rest = text[m.end() :].splitlines()
    for line in rest:
        if line.strip():
            return line.strip()
    return reason


def _explanation(text: str) -> str:
    m = _EXPLANATION.search(text)
    return m["text"].strip() if m else ""


def _user_frames(text: str) -> list[tuple[str, int, str, str]]:
    """The frames after "User code traceback:" (or "from user code:"), outermost first."""
    for marker in ("User code traceback:", "from user code:", "following user code:"):
        if marker in text:
            return traceback_frames(text.split(marker, 1)[1])
    return []


def collect(processes: list[Process], sources: TorchSources) -> list[GraphBreak]:
    """Each distinct graph break of every process, in the order first seen."""
    found: dict[tuple[str, int, str], GraphBreak] = {}
    for process in processes:
        resumes = _resume_functions(process)
        for record in process.artifacts("dynamo_graph_break_reason"):
            seen = parse(record)
            if seen is None:
                continue
            key = (seen.path, seen.line, seen.gb_id or seen.reason)
            if key in found:
                found[key].count += 1
                continue
            found[key] = _described(seen, sources, resumes)
    return list(found.values())


def _described(seen: Seen, sources: TorchSources, resumes: list[str]) -> GraphBreak:
    entry = sources.entry(seen.gb_id)
    inner = _innermost(seen)
    user = Place(
        seen.path, seen.line, inner[2] if inner else "", _line_of(sources, seen.path, seen.line)
    )
    decided: list[Place] = []
    frame = deciding_frame(seen.torch_traceback) if seen.torch_traceback else None
    if frame is not None:
        decided = [sources.place(*frame)]
    elif entry is not None:
        decided = sources.sites(entry.gb_type)
    if not decided and seen.reason:
        decided = sources.sites(seen.reason)
    stack = [Place(p, ln, fn, code) for p, ln, fn, code in seen.stack]
    top = seen.stack[0] if seen.stack else None
    resumed: list[str] = []
    if seen.skipped_frame:
        uncompiled = (
            f"the whole of {user.function or 'the frame'}: dynamo could not resume after the "
            "break, so it skipped the frame and ran it eagerly"
        )
    else:
        # The break's call runs eagerly; the rest of the frame dynamo traced from
        # goes on in a resume function it compiles (torch/_dynamo/resume_execution.py).
        # Named torch_dynamo_resume_in_{function}_at_{line} for the traced frame.
        names = {f"torch_dynamo_resume_in_{fn}_at_{ln}" for _, ln, fn, _ in seen.stack}
        resumed = [r for r in resumes if r in names]
        what = f"`{user.code}`" if user.code else f"line {seen.line}"
        uncompiled = f"{what} ran eagerly (not compiled)"
        if resumed:
            uncompiled += "; the code after it ran in " + ", ".join(resumed)
        elif top is not None:
            uncompiled += "; the code after it ran eagerly too"
    return GraphBreak(
        user=user,
        reason=entry.gb_type if entry else seen.reason,
        explanation=seen.explanation,
        hints=seen.hints,
        registry=entry,
        decided_by=decided,
        uncompiled=uncompiled,
        resumed_in=resumed,
        stack=stack,
    )


def _innermost(seen: Seen) -> tuple[str, int, str, str] | None:
    for frame in reversed(seen.stack):
        if frame[0] == seen.path and frame[1] == seen.line:
            return frame
    return seen.stack[-1] if seen.stack else None


def _resume_functions(process: Process) -> list[str]:
    names = []
    for record in process.of_kind("compilation_metrics"):
        name = (record.body or {}).get("co_name") or ""
        if name.startswith("torch_dynamo_resume_in_") and name not in names:
            names.append(name)
    return names


def _line_of(sources: TorchSources, path: str, line: int) -> str:
    return sources.line_text(Path(path), line)
