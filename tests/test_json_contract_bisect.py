"""The `--json` keys of `onboard bisect` (onboard/workflows/bisect/model.py's docstring lists
them), through onboard/jsonable.py: each expected key is worked out here from the values
the test gives, so a renamed, dropped or reshaped key fails."""

from __future__ import annotations

import json
from pathlib import Path

from onboard.jsonable import to_json
from onboard.workflows.bisect.builds import BuildOutcome
from onboard.workflows.bisect.model import BisectResult, CommitBisect, CommitInfo, Step, WheelBisect
from onboard.workflows.bisect.runner import Run, Verdict


def _run_json(r: Run) -> dict[str, object]:
    return {
        "outcome": r.outcome,
        "returncode": r.returncode,
        "signal": r.signal,
        "seconds": round(r.seconds, 3),
        "tail": r.tail,
    }


def test_a_step_rounds_its_times_and_names_its_verdict() -> None:
    runs = (Run("fail", 1, None, 0.123456, "boom"), Run("pass", 0, None, 1.0004))
    verdict = Verdict("fail", runs, True, "1 fail, 1 pass")
    build = BuildOutcome(True, 12.34567, "", "/ws/build.log")
    step = Step("abc123", "Speed up mm", "bisect", "bad", verdict, "", build)
    assert to_json(step) == {
        "rev": "abc123",
        "label": "Speed up mm",
        "phase": "bisect",
        "mark": "bad",
        "verdict": "fail",
        "reason": "",
        "build": {"ok": True, "seconds": 12.346, "reason": "", "log": "/ws/build.log"},
        "flaky": True,
        "seconds": round(0.123456 + 1.0004 + 12.34567, 3),
        "runs": [_run_json(r) for r in runs],
    }
    unrun = to_json(Step("def456", "x", "bisect", "skip", None, "the build failed"))
    assert unrun["verdict"] == "skip" and unrun["runs"] == [] and unrun["build"] is None
    assert unrun["seconds"] == 0.0 and unrun["flaky"] is False


def test_a_commit_bisect_names_its_culprit_and_what_it_skipped() -> None:
    culprit = CommitInfo(
        "c" * 40, "Break it (#1013)", "Ann", "a@x", "2026-01-02", 1013, None, None, ("a.py",)
    )
    flaky = Step("s2", "", "bisect", "bad", Verdict("fail", (), True, "mixed"))
    skipped = Step("s3", "", "bisect", "skip", None, "no build")
    result = CommitBisect(
        repo=Path("/ws/pytorch"),
        old="o" * 40,
        new="n" * 40,
        old_ref="v2.0",
        new_ref="HEAD",
        term_old="good",
        term_new="bad",
        old_state="passes",
        first_parent=True,
        candidates=8,
        expected_steps=3,
        steps=[flaky, skipped],
        culprit=culprit,
        log=Path("/ws/bisect.log"),
        builds=1,
    )
    got = to_json(result)
    assert got["repo"] == "/ws/pytorch" and got["log"] == "/ws/bisect.log"
    assert got["terms"] == {"old": "good", "new": "bad"}
    assert "term_old" not in got and "term_new" not in got
    assert got["culprit"] == {
        "sha": "c" * 40,
        "subject": "Break it (#1013)",
        "author": "Ann",
        "author_email": "a@x",
        "date": "2026-01-02",
        "pr": 1013,
        "pr_url": None,
        "url": None,
        "files": ["a.py"],
    }
    assert got["skipped"] == [{"sha": "s3", "reason": "no build"}]
    assert got["flaky"] == [{"sha": "s2", "reason": "mixed"}]
    assert got["executions"] == 0 and got["builds"] == 1 and got["restored_to"] == ""
    assert got["replay"] == "git -C /ws/pytorch bisect replay /ws/bisect.log"
    assert [s["rev"] for s in got["steps"]] == ["s2", "s3"]
    json.dumps(got)


def test_the_answer_is_ok_only_with_a_culprit() -> None:
    runs = (Run("pass", 0, None, 0.5),)
    wheels = WheelBisect(
        "torch",
        ["2.0", "2.1", "2.2"],
        last_old="2.1",
        first_new="2.2",
        steps=[Step("2.1", "torch 2.1", "bisect", "old", Verdict("pass", runs, False))],
        venvs="/cache/venvs",
    )
    result = BisectResult("repro.py", "python3", 1, None, "fail", "never", wheels=wheels)
    got = to_json(result)
    assert got == {
        "repro": "repro.py",
        "python": "python3",
        "repeat": 1,
        "timeout": None,
        "on_crash": "fail",
        "build": "never",
        "wheels": {
            "package": "torch",
            "versions": ["2.0", "2.1", "2.2"],
            "last_old": "2.1",
            "first_new": "2.2",
            "skipped": [],
            "steps": [to_json(wheels.steps[0])],
            "venvs": "/cache/venvs",
            "executions": 1,
        },
        "commits": None,
        "notes": [],
        "ok": True,  # adjacent releases, nothing untestable between them
        "executions": 1,
    }
