"""The `--json` keys of `onboard locate` (onboard/workflows/locate/result.py), through
onboard/jsonable.py: each expected key is worked out here from the values the test gives,
so a renamed, dropped or reshaped key fails."""

from __future__ import annotations

import json

from onboard.jsonable import to_json
from onboard.workflows.locate.result import FOUND, MATCHED, Candidate, LocateResult, Warned
from onboard.workflows.opsource import confidence
from onboard.workflows.opsource.paths import SourceLoc

PATH = "aten/src/ATen/native/LinearAlgebra.cpp"


def test_a_located_check_and_its_warnings() -> None:
    check = SourceLoc(PATH, 120, text='TORCH_CHECK(a.dim() == 2, "self must be a matrix");')
    warned_at = SourceLoc("torch/csrc/utils/python_arg_parser.cpp", 7)
    warning = Warned(warned_at, "UserWarning", "deprecated")
    result = LocateResult(
        mode="command",
        verdict=FOUND,
        exc_type="RuntimeError",
        message="self must be a matrix",
        command=["python", "repro.py"],
        command_exit=1,
        check=check,
        check_function="at::native::mm",
        warnings=[warning],
        confidence=confidence.HIGH,
        commit="f" * 40,
        warm={"macros": False},
    )
    got = to_json(result)
    assert got == {
        "mode": "command",
        "verdict": FOUND,
        "exc_type": "RuntimeError",
        "message": "self must be a matrix",
        "command": ["python", "repro.py"],
        "command_exit": 1,
        "check": to_json(check),
        "check_function": "at::native::mm",
        "chain": [],
        "candidates": [],
        "candidates_total": 0,
        "confidence": confidence.HIGH,
        "blind_spots": [],
        "diagnosis": [],
        "compiled": [],
        # a warning is its place's keys with its category and message beside them
        "warnings": [{**to_json(warned_at), "category": "UserWarning", "message": "deprecated"}],
        "python_frames": [],
        "explanation": None,
        "next_step": None,
        "limitations": [],
        "notes": [],
        "commit": "f" * 40,
        "cache_warm": {"macros": False},
        "ok": True,  # the line the traceback named, sure
    }
    assert to_json(check)["label"] == f"{PATH}:120"
    json.dumps(got)


def test_a_candidate_rounds_its_coverage_and_says_if_it_ties() -> None:
    at = SourceLoc(PATH, 300)
    cand = Candidate(at, "TORCH_CHECK", "mm", ("must be", "a matrix"), 2 / 3, score=0.5, tied=True)
    result = LocateResult(mode="message", verdict=MATCHED, candidates=[cand], candidates_total=4)
    got = to_json(result)
    assert got["candidates"] == [
        {
            "location": to_json(at),
            "macro": "TORCH_CHECK",
            "function": "mm",
            "pieces": ["must be", "a matrix"],
            "coverage": round(2 / 3, 3),
            "raises": "RuntimeError",
            "score": 0.5,
            "tied_with_best": True,
            "reasons": [],
        }
    ]
    assert got["candidates_total"] == 4
    assert got["ok"] is False  # no confidence given: not a sure answer
