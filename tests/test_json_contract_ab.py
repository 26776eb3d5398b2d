"""`onboard ab --json`: each key worked out from the comparison's own fields, through the
one serialiser (onboard/jsonable.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from onboard.jsonable import to_json
from onboard.proc import Leftover
from onboard.workflows.ab import ABResult, Metric, runs, stats
from onboard.workflows.ab.sides import Side


def _side(label: str, tmp_path: Path) -> Side:
    return Side(
        label, "checkout" if label == "B" else "installed", sys.executable, f"side {label}",
        overlay=tmp_path / label, modules=["torch.nn.functional"], notes=["n"],
        env={"PYTHONPATH": str(tmp_path)}, interpreter={"version": "3.11"},
    )  # fmt: skip


def test_ab_result_groups_outputs_and_environment(tmp_path: Path) -> None:
    cmp = stats.Comparison(1.0, 1.5, 1.5, 1.4, 1.6, "slower", True, "B is 1.5x slower")
    wall = Metric(runs.WALL, [1.0, 1.1], [1.5, 1.6], cmp)
    mine = Metric("forward_ms", [3.0], [3.5], cmp)
    left = Leftover(77, "sleep 300", "by its record")
    result = ABResult(
        tmp_path / "bench.py", ["--n", "3"], _side("A", tmp_path), _side("B", tmp_path),
        rounds=5, budget=60.0, metrics=[wall, mine], same_output=False, output_diff="-1\n+2",
        output_note="differs", noise={"noisy": False}, differences=["PYTHONPATH"],
        compiled={"B": [2]}, notes=["a note"], seconds=12.3456, left_running={"A": [left]},
    )  # fmt: skip
    data = to_json(result)
    assert data["ok"] is result.ok is False
    assert data["script"] == str(result.script) and data["args"] == result.args
    side = result.a
    assert data["a"] == {
        "label": side.label, "spec": side.spec, "python": side.python, "what": side.what,
        "overlaid_modules": side.modules, "notes": side.notes, "env": side.env,
        "interpreter": side.interpreter,
    }  # fmt: skip
    assert data["budget_s"] == 60.0 and data["warmup"] == 1 and data["rounds"] == 5
    assert data["outputs"] == {"same": False, "diff": "-1\n+2", "note": "differs"}
    assert data["metrics"][0] == {
        "name": runs.WALL, "median_a": cmp.median_a, "median_b": cmp.median_b,
        "ratio": cmp.ratio, "ci_low": cmp.low, "ci_high": cmp.high, "verdict": cmp.verdict,
        "clear": cmp.clear, "detail": cmp.detail, "a": wall.a, "b": wall.b,
    }  # fmt: skip
    assert data["script_metrics"] is True  # forward_ms is the script's own
    assert data["environment"] == {
        "same": False, "differences": ["PYTHONPATH"], "compiled_a": [], "compiled_b": [2]
    }  # fmt: skip
    assert data["seconds"] == round(12.3456, 2)
    assert data["left_running"] == {"A": [{"pid": 77, "command": "sleep 300",
                                           "found": "by its record"}]}  # fmt: skip
    assert not {"same_output", "differences", "compiled", "budget", "overlay"} & set(data)
    only_ours = ABResult(tmp_path / "b.py", [], result.a, result.b, metrics=[wall])
    assert to_json(only_ours)["script_metrics"] is False
    assert to_json(only_ours)["environment"]["same"] is True
    json.dumps(data)
