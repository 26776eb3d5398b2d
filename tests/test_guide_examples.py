"""The quoted outputs of `locate` and `where` in their guides (docs/guide/), re-run
against the real thing.

Slow: a `--from-wheel` workspace of the installed torch, and one torchgen
regeneration for `where --generated`. Each expected string is read from the
guide itself, so an edit of either side that drifts fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fixtures.cli import wheel_workspace

from onboard.workflows.locate import LocateRequest, locate
from onboard.workflows.where import WhereRequest, where

pytestmark = pytest.mark.slow

_GUIDES = Path(__file__).resolve().parent.parent / "docs" / "guide"
README = "\n".join(
    (_GUIDES / f"{name}.md").read_text(encoding="utf-8") for name in ("locate", "where")
)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wheel_workspace(tmp_path_factory.mktemp("readme"))


def _quoted(pattern: str) -> re.Match[str]:
    found = re.search(pattern, README, re.S)
    assert found, f"the guide no longer says {pattern!r}"
    return found


def test_the_locate_confidence_examples(ws: Path) -> None:
    said = _quoted(r'\("(\d+ sites match equally in [^"]+)" for `([^`]+)` on a')
    result = locate(LocateRequest(message=said.group(2), workspace=str(ws)))
    assert result.confidence == "low" and result.blind_spots[0] == said.group(1)

    mm = _quoted(r'onboard locate "([^"]+)"\n')
    linalg = _quoted(r"for the\s+mm message above, `([^`]+)`")
    inductor = _quoted(r"the torch\.compile copy in\s+`([^`]+)`")
    answer = locate(LocateRequest(message=mm.group(1), workspace=str(ws)))
    assert answer.confidence == "low"
    assert [c.location.path for c in answer.candidates] == [inductor.group(1)]
    assert {c.file for c in answer.compiled} == {linalg.group(1)}


def test_the_where_generated_example(ws: Path) -> None:
    said = _quoted(
        r"`CPU \(trunc\):\s+(build/aten/src/ATen/\S+):(\d+)\s+(wrapper_\w+)` on 2\.13\.0\),"
        r'\s+"registered in the TORCH_LIBRARY_IMPL block at \.\.\.:(\d+)"'
    )
    path, line, wrapper, block = said.groups()
    result = where(WhereRequest.parse("trunc", workspace=str(ws), generated=True))
    cpu = next(r for r in result.dispatch if r.key == "CPU" and r.op == "aten::trunc")
    assert (cpu.location.path, cpu.location.line, cpu.implementation) == (
        path,
        int(line),
        wrapper,
    )
    assert cpu.registered_at is not None and cpu.registered_at.line == int(block)
