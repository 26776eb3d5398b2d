"""The `--json` keys of `onboard stuck` (onboard/workflows/stuck/), through onboard/jsonable.py:
each expected key is worked out here from the values the test gives, so a renamed, dropped
or reshaped key fails."""

from __future__ import annotations

import json

from onboard.jsonable import to_json
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.stuck.model import (
    BUSY_SHARE,
    NATIVE,
    PYTHON,
    Diagnosis,
    Frame,
    Picture,
    Thread,
)
from onboard.workflows.stuck.processes import Syscall
from onboard.workflows.stuck.result import Snapshot, StuckResult


def _frame_json(f: Frame) -> dict[str, object]:
    return {
        "kind": f.kind,
        "function": f.function,
        "file": f.file,
        "line": f.line,
        "library": f.library,
        "text": f.text,
        "source": to_json(f.where),
        "note": f.note or None,
    }


def test_a_thread_rounds_its_cpu_time_and_says_whether_it_ran() -> None:
    py = Frame(PYTHON, "main", "/me/p.py", 3, text="q.get()")
    native = Frame(NATIVE, "pthread_cond_wait", library="/lib/libc.so.6", note="not in PyTorch")
    mapped = Frame(PYTHON, "get", "torch/q.py", 9, where=SourceLoc("torch/q.py", 9))
    cpu, sampled = 0.0123456, 0.5004
    thread = Thread(
        7,
        "MainThread",
        [py, native, mapped],
        "HOLDS_GIL",
        cpu,
        sampled,
        False,
        Syscall("futex", (1, 2)),
    )
    got = to_json(thread)
    assert got == {
        "tid": 7,
        "name": "MainThread",
        "frames": [_frame_json(f) for f in (py, native, mapped)],
        "gil": "HOLDS_GIL",
        "cpu_seconds": round(cpu, 3),
        "sampled_seconds": round(sampled, 3),
        "line_moved": False,
        "syscall": "futex",
        "busy": cpu >= BUSY_SHARE * sampled,
    }
    assert got["frames"][0]["note"] is None and got["frames"][1]["note"] == "not in PyTorch"
    assert to_json(Thread(8, "t"))["busy"] is None  # not sampled


def test_a_snapshot_names_its_processes_and_what_they_wait_for() -> None:
    thread = Thread(7, "MainThread")
    picture = Picture(
        11,
        "python p.py",
        "the program",
        "py-spy 0.4",
        [thread],
        0.12345,
        0.0456,
        environ={"RANK": "0"},
        ppid=1,
    )
    site = SourceLoc("torch/utils/data/dataloader.py", 1200)
    diagnosis = Diagnosis(
        "dataloader",
        "a worker",
        ((11, 7), (12, 1)),
        ("get",),
        "it waits",
        ("py-spy dump",),
        (site,),
        False,
        "no GPU",
    )
    snap = Snapshot(
        reason="no progress",
        after=30.126,
        pictures=[picture],
        diagnoses=[diagnosis],
        seconds=0.98765,
        skipped=["12: gone"],
    )
    got = to_json(snap)
    assert set(got) == {
        *("reason", "after_seconds", "seconds", "processes", "skipped", "diagnoses"),
        *("tools", "paused_seconds"),
    }
    assert got["after_seconds"] == round(30.126, 2) and got["seconds"] == round(0.98765, 3)
    assert got["tools"] == ["py-spy 0.4"] and got["paused_seconds"] == round(0.0456, 3)
    assert got["skipped"] == ["12: gone"] and "pictures" not in got
    assert got["processes"] == [
        {
            "pid": 11,
            "command": "python p.py",
            "role": "the program",
            "tool": "py-spy 0.4",
            "threads": [to_json(thread)],
            "seconds": round(0.12345, 3),
            "paused_seconds": round(0.0456, 3),
            "error": None,
            "environ": {"RANK": "0"},
            "ppid": 1,
            "python": True,
        }
    ]
    assert got["diagnoses"] == [
        {
            "kind": "dataloader",
            "title": "a worker",
            "threads": [{"pid": 11, "tid": 7}, {"pid": 12, "tid": 1}],
            "evidence": ["get"],
            "meaning": "it waits",
            "try": ["py-spy dump"],
            "sites": [to_json(site)],
            "checked": False,
            "not_checked_because": "no GPU",
        }
    ]
    result = StuckResult(
        "run", "python p.py", snapshots=[snap], program_exit=None, ended="stopped", printed=1
    )
    top = to_json(result)
    assert top == {
        "mode": "run",
        "target": "python p.py",
        "program_exit": None,
        "ended": "stopped",
        "interrupted": False,
        "commit": None,
        "workspace": None,
        "snapshots": [got],
        "notes": [],
        "ok": True,  # a snapshot was taken: the answer
    }
    json.dumps(top)
