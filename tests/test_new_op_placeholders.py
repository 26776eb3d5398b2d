"""A scaffold's own placeholders count as "not written": verify's row, pr's refusal.

The oracle is the files themselves: every line the scaffold marked with
`TODO(onboard new-op)` (found with a plain text search here) is a part still to
write until the author changes what it marks or deletes the marker.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_new_op import make_workspace

from onboard.jsonable import to_json
from onboard.workflows.newop import manifest as manifests
from onboard.workflows.newop import placeholders, scaffold
from onboard.workflows.newop.checks import FAILED, PASSED, written

MARKER = "TODO(onboard new-op)"


def marked_lines(checkout: Path, files: dict[str, str]) -> set[str]:
    """path:line of every line carrying the marker, in the files the scaffold touched."""
    found = set()
    for rel in set(files.values()):
        path = checkout / rel
        if path.is_file():
            for i, line in enumerate(path.read_text().splitlines(), 1):
                if MARKER in line:
                    found.add(f"{rel}:{i}")
    return found


@pytest.mark.parametrize("kind", ["unary", "binary"])
def test_every_marked_placeholder_is_not_written_until_changed(tmp_path: Path, kind: str) -> None:
    ws = make_workspace(tmp_path / "ws", full=True)
    name = "my_soft" if kind == "unary" else "my_pair"
    scaffold(ws, name, kind=kind)
    manifest = manifests.load(ws.root, name)
    checkout = ws.checkout_path
    truth = marked_lines(checkout, manifest.files)
    found = placeholders.unwritten(checkout, manifest)
    assert {u.location for u in found} == truth and truth
    step = written(checkout, manifest)
    assert step.status == FAILED and step.location in truth
    assert "the CUDA kernel's math" in step.detail and "the derivative" in step.detail

    # Writing the CUDA math (the marker may stay) takes those lines off the list...
    cu = checkout / manifest.files["CUDA kernel"]
    placeholder = "a" if kind == "unary" else "a + b"
    text = cu.read_text()
    assert text.count(f"return {placeholder};  // {MARKER}") >= 1
    cu.write_text(text.replace(f"return {placeholder};", "return a * a;"))
    left = {u.location for u in placeholders.unwritten(checkout, manifest)}
    assert left == {loc for loc in truth if not loc.startswith(manifest.files["CUDA kernel"])}
    # ...and deleting every marker (the placeholder was right) clears them all.
    for rel in set(manifest.files.values()):
        path = checkout / rel
        if path.is_file() and MARKER in path.read_text():
            kept = [ln for ln in path.read_text().splitlines(True) if MARKER not in ln]
            path.write_text("".join(kept))
    assert placeholders.unwritten(checkout, manifest) == []
    assert written(checkout, manifest).status == PASSED


def test_pr_names_every_unwritten_part_of_the_branch_and_exits_1(tmp_path: Path) -> None:
    from onboard.workflows import pr as pr_flow

    ws = make_workspace(tmp_path / "ws", full=True)
    scaffold(ws, "my_soft", kind="unary")
    manifest = manifests.load(ws.root, "my_soft")
    checkout = ws.checkout_path
    truth = marked_lines(checkout, manifest.files)
    # The CPU kernel is written in the working tree but not committed: the PR has the old one.
    kernel = checkout / manifest.files["CPU kernel"]
    kernel.write_text(kernel.read_text().replace("{ return a; }", "{ return a / (1 + a); }"))
    result = pr_flow.run(pr_flow.PrRequest(workspace=str(ws.root)))
    assert {u.location for u in result.unwritten} == truth
    assert result.exit_code == 1 and to_json(result)["ok"] is False
    assert "Not written yet" in result.draft_text
    assert any(u.what == "the CPU kernel's math" for u in result.unwritten)
