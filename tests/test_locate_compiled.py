"""`onboard locate MESSAGE` in a reference tree, for checks in .cpp files it lacks.

The truth comes from the installed torch at test time: each error is raised with
TORCH_SHOW_CPP_STACKTRACES=1, so the binary names the file that raised it
(`Exception raised from meta at .../LinearAlgebra.cpp:204`). locate gets only
the message, as a user pasting it would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.pytorch_repo import find_torch_dir, git
from opsource_helpers import save_workspace

from onboard.cli import cli
from onboard.crash import run_cli
from onboard.jsonable import to_json
from onboard.workflows.locate import LocateRequest, locate

ERRORS = (
    "torch.mm(torch.randn(2, 3), torch.randn(4, 5))",  # the README's example
    "torch.bmm(torch.randn(2, 3, 4), torch.randn(3, 4, 5))",
    "torch.randn(2, 3) + torch.randn(4)",
    "torch.randn(2).item()",
    "torch.randn(3).split([1, 1])",
    "torch.linalg.inv(torch.zeros(2, 2))",
    "torch.randn(3, 3).expand(2, 2)",
    "torch.randint(0, 5, (3,)).float().multinomial(0)",
    "torch.nn.functional.conv2d(torch.randn(1, 1, 3, 3), torch.randn(1, 2, 2, 2))",
)
_RAISED = re.compile(r"Exception raised from \S+ at \S*?/pytorch/pytorch/(\S+):\d+")


def raised(code: str) -> tuple[str, str]:
    """(the message's first line, the repo path the binary says raised it)."""
    done = subprocess.run(
        [sys.executable, "-c", "import torch\n" + code],
        capture_output=True,
        text=True,
        env={**os.environ, "TORCH_SHOW_CPP_STACKTRACES": "1"},
    )
    message = re.search(r"^[\w.]+Error: (.*)$", done.stderr, re.M)
    where = _RAISED.search(done.stderr)
    assert message and where, done.stderr[-2000:]
    return message.group(1), where.group(1)


@pytest.fixture(scope="module")
def wheel_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A reference workspace holding the wheel's Python files that say "mat1 and mat2
    shapes cannot be multiplied" (torch.compile's), and the check macros' headers."""
    site = find_torch_dir().parent
    root = tmp_path_factory.mktemp("ws-compiled") / "ws"
    tree = root / "pytorch"
    wanted = ["torch/include/c10/util/Exception.h", "torch/include/torch/csrc/Exceptions.h"]
    for path in (site / "torch" / "_inductor").rglob("*.py"):
        if "mat1 and mat2 shapes cannot be multiplied" in path.read_text(errors="replace"):
            wanted.append(str(path.relative_to(site)))
    for rel in wanted:
        dest = tree / rel.replace("torch/include/", "")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(site / rel, dest)
    git("init", "-q", tree)
    git("add", "-A", cwd=tree)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "tree", cwd=tree)
    save_workspace(root, "reference")
    return root


def test_a_compile_only_best_match_is_low_confidence_said_first(
    wheel_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    message, truth = raised(ERRORS[0])
    result = locate(LocateRequest(message=message, workspace=str(wheel_tree)))
    assert result.candidates, "the wheel has torch.compile's copy of the message"
    assert all(c.location.path.startswith("torch/_inductor/") for c in result.candidates)
    assert result.confidence == "low" and result.exit_code == 1
    assert result.blind_spots[0].startswith("the best match (runs only under torch.compile")
    # The real site, from the binary's strings: the file the binary itself names.
    files = {c.file for c in result.compiled}
    assert files == {truth}, result.compiled
    assert run_cli(cli, ["locate", message, "--workspace", str(wheel_tree)]) == 1
    out = capsys.readouterr().out
    assert out.index("Confidence: low") < out.index("Check sites whose message matches")
    assert f"probably from {truth}" in out


@pytest.mark.slow  # one search of the libraries per error
def test_the_binary_names_a_file_only_when_it_is_the_one_that_raised(wheel_tree: Path) -> None:
    named = 0
    for code in ERRORS:
        message, truth = raised(code)
        if not truth.endswith(".cpp"):
            continue  # a header's check: the tree has the headers
        result = locate(LocateRequest(message=message, workspace=str(wheel_tree)))
        for hit in result.compiled:
            assert hit.file in (None, truth), (code, hit)
            named += hit.file == truth
        data = json.loads(json.dumps(to_json(result)))
        assert all(set(c) >= {"library", "text", "file"} for c in data["compiled"])
    assert named >= 3  # mm, bmm, linalg.inv at least: both neighbours agree there
