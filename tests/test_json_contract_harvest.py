"""`onboard harvest --json` (and `--show`): each key worked out from the result's own
fields, through the one serialiser (onboard/jsonable.py)."""

from __future__ import annotations

import json
from pathlib import Path

from onboard.jsonable import to_json
from onboard.workflows.harvest import forms
from onboard.workflows.harvest.collect import Scan
from onboard.workflows.harvest.filters import Filters
from onboard.workflows.harvest.rank import Item, Reason
from onboard.workflows.harvest.result import HarvestResult, ShowResult
from onboard.workflows.harvest.target import Target


def _item(n: int, text: str, path: str = "torch/nn/a.py") -> Item:
    return Item(
        f"id{n}", path, 10 * n, 10 * n + 1, 4, "python", "torch.nn.a", text, forms.parse(text),
        [Reason(2, "names an owner"), Reason(-1, "long")], "test/test_nn.py",
        f"https://github.com/pytorch/pytorch/blob/x/{path}#L{10 * n}",
    )  # fmt: skip


def test_an_item_is_its_fields_and_its_parsed_form() -> None:
    lead = _item(
        1,
        "TODO(alice): see https://github.com/pytorch/pytorch/issues/123, "
        "https://github.com/pytorch/pytorch/pull/456, https://github.com/x/y/issues/3 T12345",
    )
    other = _item(2, "FIXME: same as https://github.com/pytorch/pytorch/issues/123", "b.py")
    lead.same_issue.append(other)
    data = to_json(lead)
    f = lead.form
    assert (data["tag"], data["kind"], data["body"]) == (f.tag, f.kind, f.body)
    assert data["owners"] == list(f.owners) == ["alice"]
    assert data["issues"] == list(f.issues) == [123]
    assert data["pulls"] == list(f.pulls) == [456]
    assert data["internal_ids"] == list(f.internal_ids) == ["T12345"]
    assert data["other_links"] == list(f.other_links) == ["https://github.com/x/y/issues/3"]
    assert data["score"] == lead.score == 1 and data["python_only"] is True
    assert data["reasons"] == [{"points": r.points, "why": r.why} for r in lead.reasons]
    assert data["linked_issues"] == [] and data["blame"] is None
    assert data["same_issue"] == [{"id": "id2", "path": "b.py", "line": 20}]
    assert (data["id"], data["path"], data["line"], data["end_line"]) == ("id1", lead.path, 10, 11)
    assert (data["language"], data["module"], data["text"]) == ("python", lead.module, lead.text)
    assert not {"col", "form", "linked"} & set(data)
    json.dumps(data)


def test_filters_are_named_as_their_options() -> None:
    wanted = Filters(["torch/nn"], ["torch.nn"], ["fixme", "todo"], True, 5)
    assert to_json(wanted) == {
        "path": ["torch/nn"], "module": ["torch.nn"], "tag": ["FIXME", "TODO"],
        "python_only": True, "limit": 5,
    }  # fmt: skip


def test_the_harvest_result_names_its_tree_and_summary(tmp_path: Path) -> None:
    items = [_item(1, "TODO: one"), _item(2, "HACK: two")]
    scan = Scan(Target(tmp_path, None, "checkout"), "rg", {}, items, 2, 0, {"total": 0.25})
    result = HarvestResult(scan, items[:1], 2, to_json(Filters()), ["a note"], None)
    data = to_json(result)
    assert (data["root"], data["tree"], data["commit"]) == (str(tmp_path), "checkout", None)
    assert data["searcher"] == "rg" and data["seconds"] == {"total": 0.25}
    assert data["summary"] == result.summary()
    assert data["summary"]["matched"] == 2 and data["summary"]["shown"] == 1
    assert data["items"] == [to_json(items[0])] and data["filters"] == to_json(Filters())
    assert data["notes"] == ["a note"] and data["issues"] is None
    assert not {"scan", "matched"} & set(data)


def test_show_result_groups_the_context(tmp_path: Path) -> None:
    item = _item(1, "TODO: one")
    shown = ShowResult(item, 8, ["a", "b"], [{"line": 10}], {"issues": []}, ["n"], tmp_path)
    assert to_json(shown) == {
        "item": to_json(item), "blame": [{"line": 10}], "links": {"issues": []}, "notes": ["n"],
        "root": str(tmp_path), "context": {"start_line": 8, "lines": ["a", "b"]},
    }  # fmt: skip
