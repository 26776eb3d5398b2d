"""`onboard new-op --json` (scaffold, practice, reveal, verify) and the manifest it writes:
each key worked out from the result's own fields, through the one serialiser
(onboard/jsonable.py)."""

from __future__ import annotations

import json
from pathlib import Path

from onboard.jsonable import to_json
from onboard.workflows.newop import NewOpResult
from onboard.workflows.newop import family as families
from onboard.workflows.newop.manifest import Manifest
from onboard.workflows.newop.placeholders import Unwritten
from onboard.workflows.newop.plan import FileChange, Plan, Unplaced
from onboard.workflows.newop.practice import PracticeResult, TakenOut
from onboard.workflows.newop.reveal import RevealResult, Snippet
from onboard.workflows.newop.steps import FAILED, PASSED, OpVerification, Step


def _plan() -> Plan:
    fam = families.default("binary")
    return Plan(
        "my_op",
        fam,
        [
            FileChange("aten/src/ATen/native/MyOp.cpp", "kernel", None, "x\n", 1, "new file"),
            FileChange("native_functions.yaml", "schema", "a\n", "a\nb\n", 2, "after hypot"),
            FileChange("k.cpp", "kernel", "a\n", "", 9, "kernel", action="take out"),
        ],
        [Unplaced("test/test_ops.py", "opinfo", "not in this checkout")],
        ["a note"],
    )


def _changes(plan: Plan) -> list[dict[str, object]]:
    return [
        {
            "path": c.path,
            "role": c.role,
            "line": c.line,
            "where": c.where,
            "action": c.action or ("create" if c.before is None else "insert"),
        }
        for c in plan.changes
    ]


def test_a_family_adds_what_it_implies() -> None:
    fam = families.default("unary")
    data = to_json(fam)
    assert data["meta_builder"] == fam.meta_builder
    assert data["supported_dtypes"] == list(fam.supported_dtypes)
    assert families.Family.from_json(data) == fam


def test_scaffold_result_takes_kind_changes_and_notes_from_its_plan(tmp_path: Path) -> None:
    plan = _plan()
    result = NewOpResult("my_op", plan, tmp_path, True, "onboard/my_op", diff="+x", seconds=1.23456)
    data = to_json(result)
    assert data["ok"] is True and data["name"] == "my_op"
    assert data["kind"] == plan.family.kind and data["like"] == plan.family.like
    assert data["changes"] == _changes(plan)
    assert [c["action"] for c in data["changes"]] == ["create", "insert", "take out"]
    assert data["unplaced"] == [{"path": "test/test_ops.py", "role": "opinfo",
                                 "reason": "not in this checkout"}]  # fmt: skip
    assert data["family"] == to_json(plan.family)
    assert data["notes"] == plan.notes and data["checkout"] == str(tmp_path)
    assert data["diff"] == "+x" and data["seconds"] == round(1.23456, 3)
    assert not {"plan", "reference_tree", "before", "after"} & set(data)
    written = NewOpResult("my_op", plan, tmp_path, False, "b", commit="c" * 40, diff="+x")
    assert to_json(written)["diff"] == ""  # the diff is for a dry run
    json.dumps(data)


def test_practice_result_names_dtypes_and_the_oracle(tmp_path: Path) -> None:
    plan = _plan()
    taken = [TakenOut("k.cpp", 9, "the kernel")]
    result = PracticeResult(
        "hypot", plan, tmp_path, False, "b", "2.13.0", ["float32"], ["int64"], taken,
        guide="# guide", guide_path=tmp_path / "GUIDE.md", diff="+y", seconds=0.5,
    )  # fmt: skip
    data = to_json(result)
    assert data["mode"] == "practice" and data["oracle"] == "torch.hypot"
    assert data["kernel_dtypes"] == ["float32"] and data["copied_dtypes"] == ["int64"]
    assert data["taken_out"] == [{"path": "k.cpp", "line": 9, "what": "the kernel"}]
    assert data["guide_path"] == str(tmp_path / "GUIDE.md") and data["diff"] == ""
    assert data["changes"] == _changes(plan) and data["kind"] == plan.family.kind
    assert not {"kernel", "copied", "plan"} & set(data)


def test_reveal_lists_links_as_objects() -> None:
    snippet = Snippet("aten/src/ATen/native/BinaryOps.cpp", 12, "the kernel", "code", None)
    result = RevealResult(
        "hypot", "d" * 40, "checkout", [snippet], [("yaml", "https://x/y")], seconds=0.12345
    )
    data = to_json(result)
    assert data["links"] == [{"what": "yaml", "url": "https://x/y"}]
    assert data["snippets"] == [
        {"path": snippet.path, "line": 12, "what": "the kernel", "text": "code", "url": None}
    ]
    assert data["seconds"] == round(0.12345, 3) and data["ok"] is True


def test_op_verification_rounds_and_says_whether_every_step_passed() -> None:
    steps = [Step("build", PASSED, "ok", seconds=1.005), Step("numerics", FAILED, "off", "a:3")]
    data = to_json(OpVerification("my_op", steps, seconds=2.3456))
    assert data["ok"] is False and data["seconds"] == round(2.3456, 2)
    assert data["steps"][0] == {
        "name": "build", "status": PASSED, "detail": "ok", "location": None,
        "seconds": round(1.005, 2), "cached": False,
    }  # fmt: skip


def test_the_manifest_file_holds_the_family(tmp_path: Path) -> None:
    fam = families.default("unary")
    manifest = Manifest("my_op", fam, {"kernel": "k.cpp"}, "onboard/my_op")
    data = to_json(manifest)
    assert data == {"name": "my_op", "family": to_json(fam), "files": {"kernel": "k.cpp"},
                    "branch": "onboard/my_op", "mode": manifest.mode, "practice": {}}  # fmt: skip
    assert to_json(Unwritten("the docs", "a.py:3")) == {"what": "the docs", "location": "a.py:3"}
