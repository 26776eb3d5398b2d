"""Recompilations, from the trace's ``recompile_reasons`` artifacts (one per
recompile: the guard that failed for each cached entry, as
``torch/_dynamo/guards.py`` ``get_and_maybe_log_recompilation_reasons`` writes them:
``"2/0: n == 1   # return x * n  # a.py:10 in g"``), grouped per function, with
the recompile limit (a compile that failed with "Dynamo recompile limit exceeded")
and the fix torch documents for each kind of guard (the recompilation page of the
torch.compile programming model, linked from that message)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from onboard.workflows.compile.result import FailedGuard, Place, Recompiled
from onboard.workflows.compile.trace import Process, Record

_ENTRY = re.compile(r"^(?P<id>\d+/\d+): (?P<guard>.*)$", re.S)
_STACK_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
LIMIT_TEXT = "recompile limit exceeded"

_FIXES = {
    "size": "A size that changes: mark it dynamic before the call "
    "(`torch._dynamo.mark_dynamic(x, DIM)`), or compile with `dynamic=True`; torch "
    "also makes it dynamic by itself on the second size (automatic dynamic shapes).",
    "stride": "A layout that changes (a transposed or sliced input): pass contiguous "
    "inputs (`.contiguous()`), or compile with `dynamic=True`.",
    "dtype": "A dtype that changes: each dtype is its own graph; convert the input to "
    "one dtype before the compiled call.",
    "device": "A device that changes: keep the input on one device for the compiled call.",
    "grad": "requires_grad that changes: call the compiled function the same way each "
    "time (or under one torch.no_grad() setting).",
    "constant": "A Python value the graph was specialised on: move the constant out of "
    "the signature (a closure, a global or functools.partial), pass it as a tensor, or, "
    "for an int, compile with `dynamic=True` / `torch._dynamo.mark_dynamic` on a tensor "
    "sized by it.",
    "length": "A list or tuple whose length changes: pass a fixed number of items, or "
    "one stacked tensor.",
    "type": "An argument whose type changes: call it with one type each time.",
    "identity": "A different object (a new module, function or object each call): "
    "create it once and reuse it, or compile the module itself.",
    "mode": "A global torch setting that changes (grad mode, autocast, a torch.function "
    "mode): call the compiled function under one setting.",
    "other": "See the guard: torch compiled for the value it had and checks it on each "
    "call; keep it the same between calls.",
}


def kind_of(guard: str) -> str:
    text = guard.lower()
    if "size mismatch" in text:
        return "size"
    if "stride mismatch" in text:
        return "stride"
    if "dtype mismatch" in text:
        return "dtype"
    if "device mismatch" in text:
        return "device"
    if "requires_grad mismatch" in text:
        return "grad"
    if "grad_mode" in text or "dispatch key set mismatch" in text or "global state" in text:
        return "mode"
    if "check_type_id" in text or "type(" in text:
        return "type"
    if "check_obj_id" in text or " is " in text:
        return "identity"
    if text.startswith("len(") or "len(" in text.split("==")[0]:
        return "length"
    if "==" in text or "!=" in text:
        return "constant"
    return "other"


def fix_for(kind: str) -> str:
    return _FIXES.get(kind, _FIXES["other"])


@dataclass
class Reason:
    guard: str  # the failed guard, without the cache entry id and torch's comment
    at: Place | None  # the user line it came from


def reasons(record: Record) -> list[Reason]:
    """The failed guards one recompilation lists (one per cached entry), newest first."""
    text = record.payload or ""
    try:
        data = json.loads(text)
        items = [str(x) for x in data] if isinstance(data, list) else [str(data)]
    except ValueError:  # one reason is written as its text
        items = [text]
    return [r for r in (_reason(item) for item in items) if r is not None]


def _reason(item: str) -> Reason | None:
    m = _ENTRY.match(item.strip())
    body = m["guard"] if m else item.strip()
    if not body:
        return None
    first, _, rest = body.partition("\n")
    guard = first.split("  #", 1)[0].strip() or first.strip()
    at = None
    frames = _STACK_FRAME.findall(rest)
    if frames:
        path, line, func = frames[-1]
        at = Place(path, int(line), func)
    return Reason(guard, at)


@dataclass
class Frame:
    function: str
    path: str
    line: int


def frames_of(process: Process) -> dict[int, Frame]:
    """frame id -> the function it is, from the compiles' metrics (or their start)."""
    found: dict[int, Frame] = {}
    for record in process.of_kind("dynamo_start"):
        stack = (record.body or {}).get("stack") or []
        if record.frame_id is not None and stack:
            top = stack[-1]
            path = process.strings.get(top.get("filename"), str(top.get("filename")))
            found.setdefault(record.frame_id, Frame(str(top.get("name")), path, top.get("line", 0)))
    for record in process.of_kind("compilation_metrics"):
        m = record.body or {}
        fid = frame_id(m.get("compile_id"))
        if fid >= 0 and m.get("co_name"):
            found[fid] = Frame(
                m["co_name"], m.get("co_filename") or "", m.get("co_firstlineno") or 0
            )
    return found


def frame_id(compile_id: object) -> int:
    """The frame of a compile id (``"2/1"`` -> 2); -1 when there is none."""
    if not isinstance(compile_id, str) or "/" not in compile_id:
        return -1
    head = compile_id.split("/", 1)[0].strip("[]!")
    return int(head) if head.isdigit() else -1


def collect(processes: list[Process]) -> list[Recompiled]:
    grouped: dict[tuple[str, str, int], Recompiled] = {}
    for process in processes:
        frames = frames_of(process)
        for record in process.artifacts("recompile_reasons"):
            frame = frames.get(record.frame_id if record.frame_id is not None else -1)
            if frame is None:
                continue
            group = _group(grouped, frame)
            group.recompiles += 1
            for reason in reasons(record):
                _count(group, reason)
        for record in process.of_kind("compilation_metrics"):
            m = record.body or {}
            if LIMIT_TEXT not in str(m.get("fail_reason") or "").lower():
                continue
            frame = frames.get(frame_id(m.get("compile_id")))
            if frame is None:
                continue
            group = _group(grouped, frame)
            group.limit_hit = True
            limit = _limit(m)
            group.limit_note = (
                f"torch hit the recompile limit ({limit}): from then on, a call of "
                f"{frame.function} that none of its {limit} compiled versions fits runs "
                "eagerly (uncompiled), and a version that still fits runs compiled"
            )
    return list(grouped.values())


def _group(grouped: dict[tuple[str, str, int], Recompiled], frame: Frame) -> Recompiled:
    key = (frame.function, frame.path, frame.line)
    if key not in grouped:
        grouped[key] = Recompiled(frame.function, frame.path, frame.line, 0)
    return grouped[key]


def _count(group: Recompiled, reason: Reason) -> None:
    for seen in group.guards:
        if seen.guard == reason.guard:
            seen.count += 1
            return
    kind = kind_of(reason.guard)
    group.guards.append(FailedGuard(reason.guard, kind, 1, fix_for(kind), reason.at))


def _limit(metrics: dict[str, object]) -> str:
    m = re.search(r"currently set to (\d+)", str(metrics.get("fail_reason") or ""))
    return m.group(1) if m else "recompile_limit"
