"""A token the user's own script prints (to stdout or stderr, or in its exception) is
never echoed by `trace`, `graph` or `ab` when they show how the script failed."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from rich.console import Console

from onboard.errors import OnboardError
from onboard.jsonable import to_json
from onboard.views import graph as graph_view
from onboard.views import trace as trace_view
from onboard.workflows.ab import compare
from onboard.workflows.trace.autograd_graph import GraphRequest, GraphResult, graph
from onboard.workflows.trace.profile import TraceRequest, TraceResult, trace

PY = sys.executable
TOKENS = [
    "ghp_" + "A1b2C3d4" * 4 + "wXyZ",
    "github_pat_11ABCDEFG0" + "aBcD_1234" * 9,
    "gho_" + "Zz9" * 12,
    "ghs_" + "q" * 36,
    "v1." + "0123456789abcdef" * 2 + "01234567",
]
LEAK = (
    "import sys\n"
    f"TOKENS = {TOKENS!r}\n"
    "for t in TOKENS:\n"
    "    print('using', t)\n"
    "    print('auth with', t, file=sys.stderr)\n"
)


def _no_token(text: str) -> None:
    for token in TOKENS:
        assert token not in text
        assert token[12:] not in text  # nor a part of it


def _shown(result: TraceResult | GraphResult) -> str:
    out = io.StringIO()
    view = trace_view if isinstance(result, TraceResult) else graph_view
    view.render(result, Console(file=out, width=200), True)
    return out.getvalue() + json.dumps(to_json(result))


@pytest.fixture
def failing_after_torch(tmp_path: Path) -> Path:
    path = tmp_path / "prog.py"
    path.write_text(
        LEAK + "import torch\nx = torch.ones(2, requires_grad=True) * 2\n"
        "raise RuntimeError('bad credentials ' + TOKENS[0])\n",
        encoding="utf-8",
    )
    return path


def test_trace_shows_a_failing_program_without_its_tokens(failing_after_torch: Path) -> None:
    result = trace(TraceRequest(command=[PY, str(failing_after_torch)]))
    assert result.exit_code == 1 and result.output_tail  # the failure is shown...
    _no_token(_shown(result))  # ...without the tokens


def test_graph_shows_a_failing_program_without_its_tokens(failing_after_torch: Path) -> None:
    result = graph(GraphRequest(command=[PY, str(failing_after_torch)]))
    assert result.exit_code == 1
    _no_token(_shown(result))


def test_a_program_failing_before_torch_is_told_without_its_tokens(tmp_path: Path) -> None:
    path = tmp_path / "early.py"
    path.write_text(LEAK + "raise SystemExit('token ' + TOKENS[1])\n", encoding="utf-8")
    command = [PY, str(path)]
    for run, request in (
        (trace, TraceRequest(command=command)),
        (graph, GraphRequest(command=command)),
    ):
        with pytest.raises(OnboardError) as exc:
            run(request)
        _no_token(exc.value.paragraph())


def test_ab_tells_a_failing_script_without_its_tokens(tmp_path: Path) -> None:
    path = tmp_path / "bench.py"
    path.write_text(LEAK + "raise SystemExit(3)\n", encoding="utf-8")
    with pytest.raises(OnboardError) as exc:
        compare(path, ws=None, python=PY, b=PY, rounds=1)
    assert "auth with" in exc.value.message  # the stderr tail is shown...
    _no_token(exc.value.paragraph())  # ...without the tokens
