"""Every view is written for the width it has (issue 32, "The screen").

Each command runs for real (in this process, on small workspaces: the wheel's
reference tree); its result is then printed the way onboard prints it
(``onboard.console.stdout_console``), on a terminal of 80, 100 and 200 columns (a
stream that is a tty, ``COLUMNS`` set) and on a pipe. The oracles come from the
result itself and its ``--json``:

- on a terminal no line is wider than the screen, and a line that wraps keeps its
  indentation: every printed line either starts one of the lines the same view
  prints on an unbounded terminal, at its indentation, or continues one, further in;
- a GitHub URL is a hyperlink (OSC 8) there, not text; in a pipe it is text;
- in a pipe a table is plain rows under a header (no box drawing), one item per
  line, with full paths; ``--json`` has the full paths too.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opsource_helpers import make_reference_workspace

from onboard import console, torchenv
from onboard.cli import cli
from onboard.crash import run_cli

PY = sys.executable
WIDTHS = (80, 100, 200)
MM_MESSAGE = "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
BOX = re.compile("[─━│┃┌┐└┘├┤┬┴┼┏┓┗┛┡┩╇╈╋]")
# OSC 8 hyperlinks (ESC ] 8 ; params ; URL ESC \) and SGR colours: not on screen.
OSC8 = re.compile(r"\x1b\]8;[^;\x1b]*;([^\x1b]*)\x1b\\")
SGR = re.compile(r"\x1b\[[0-9;]*m")
SMALL_TREE = 40  # files of the wheel in the setup test's reference tree


@dataclass
class Answer:
    """One command's result, the view that prints it and its --json."""

    result: Any
    view: Callable[..., None]
    verbose: bool
    data: dict[str, Any]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(mp: pytest.MonkeyPatch, argv: list[str]) -> Answer:
    seen: list[tuple[Any, Callable[..., None], bool]] = []
    real = console.emit_view

    def record(result: Any, view: Any, *, as_json: bool, verbose: bool = False) -> None:
        seen.append((result, view, verbose))
        real(result, view, as_json=as_json, verbose=verbose)

    with mp.context() as m:
        m.setattr(console, "emit_view", record)
        cut = argv.index("--") if "--" in argv else len(argv)
        # stdout is redirected by run_cli (redaction): catch what it prints.
        out = io.StringIO()
        m.setattr(sys, "stdout", out)
        m.setattr(sys, "stderr", io.StringIO())
        run_cli(cli, [*argv[:cut], "--json", *argv[cut:]])
        data = json.loads(out.getvalue())
        run_cli(cli, argv)
    # The first run's result is the one its --json describes (a second setup finds
    # the workspace there and reports it up to date).
    result, view, verbose = seen[0]
    return Answer(result, view, verbose, data)


def terminal(answer: Answer, width: int, mp: pytest.MonkeyPatch) -> str:
    """What the view prints on a terminal ``width`` columns wide (raw, with escapes)."""
    with mp.context() as m:
        m.setenv("COLUMNS", str(width))
        m.setenv("TERM", "xterm-256color")
        m.delenv("NO_COLOR", raising=False)
        stream = _Tty()
        shown = console.stdout_console(stream)
        assert shown.is_terminal and shown.width == width
        answer.view(answer.result, shown, answer.verbose)
    return stream.getvalue()


def piped(answer: Answer) -> str:
    stream = io.StringIO()
    answer.view(answer.result, console.stdout_console(stream), answer.verbose)
    return stream.getvalue()


def visible(raw: str) -> list[str]:
    return SGR.sub("", OSC8.sub("", raw)).splitlines()


def links(raw: str) -> set[str]:
    return {url for url in OSC8.findall(raw) if url}


def urls(data: Any) -> set[str]:
    """Every GitHub URL in a --json answer."""
    found = re.findall(r"https://github\.com/[^\s\"]+", json.dumps(data))
    return set(found)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _same_start(printed: str, logical: str) -> bool:
    """``printed`` (a wrapped line's first part) starts ``logical``: the same first
    word, or that word's path shortened from the left (…/native/UnaryOps.cpp:12)."""
    if not printed.strip() or not logical.strip():
        return printed.strip() == logical.strip()
    p, q = printed.split()[0], logical.split()[0]
    return p == q or (p.startswith("…/") and q.endswith(p[1:]))


def assert_fits(raw: str, whole: str, width: int) -> None:
    """No line is wider than ``width``; each printed line starts a line of ``whole``
    (the unbounded render) at its indentation or continues one further in."""
    lines = visible(raw)
    wide = [ln for ln in lines if len(ln) > width]
    assert not wide, wide
    logical = [ln for ln in visible(whole) if ln.strip()]
    k, current = 0, None
    for line in (ln for ln in lines if ln.strip()):
        if (
            k < len(logical)
            and _indent(line) == _indent(logical[k])
            and _same_start(line, logical[k])
        ):
            current, k = logical[k], k + 1
            continue
        assert current is not None, line
        assert _indent(line) > _indent(current), (line, current)
    assert k == len(logical), logical[k:]


# --- the answers, each computed once ---


@pytest.fixture(scope="module")
def mp() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as m:
        yield m


@pytest.fixture(scope="module")
def ref_ws(tmp_path_factory: pytest.TempPathFactory, mp: pytest.MonkeyPatch) -> Path:
    mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    root = tmp_path_factory.mktemp("ref") / "ws"
    make_reference_workspace(root)
    return root


@pytest.fixture(scope="module")
def probed(probe_payload: Path, mp: pytest.MonkeyPatch) -> None:
    """The session's probe answer for this interpreter, served instead of probing."""
    env = torchenv.from_payload(json.loads(probe_payload.read_text()))
    mp.setattr(torchenv, "probe", lambda python=None, **kwargs: env)


@pytest.fixture(scope="module")
def small_ws(
    tmp_path_factory: pytest.TempPathFactory, mp: pytest.MonkeyPatch, probed: None
) -> tuple[Path, Answer]:
    """A real `onboard setup DIR --from-wheel`, with a reference tree of a few files."""
    from onboard.workflows import reference_tree

    real = reference_tree.plan

    def small(torch_dir: Any, torchgen_dir: Any) -> Any:
        tree = real(torch_dir, torchgen_dir)
        tree.files = {d: tree.files[d] for d in sorted(tree.files)[:SMALL_TREE]}
        return tree

    mp.setattr(reference_tree, "plan", small)
    root = tmp_path_factory.mktemp("small") / "ws"
    return root, _run(mp, ["setup", str(root), "--from-wheel"])


@pytest.fixture(scope="module")
def answers(
    ref_ws: Path, small_ws: tuple[Path, Answer], mp: pytest.MonkeyPatch, probed: None
) -> dict[str, Answer]:
    ws = str(ref_ws)
    return {
        "where": _run(mp, ["where", "trunc", "--workspace", ws]),
        "harvest": _run(mp, ["harvest", "--workspace", ws, "--limit", "6"]),
        "locate": _run(mp, ["locate", "--workspace", ws, MM_MESSAGE]),
        "setup": small_ws[1],
        "verify": _run(mp, ["verify", "--workspace", str(small_ws[0])]),
        "doctor": _run(mp, ["doctor"]),
        "trace": _run(mp, ["trace", "-c", "torch.ones(2).trunc() + 1", "--python", PY]),
    }


VIEWS = ("where", "harvest", "locate", "setup", "verify", "doctor", "trace")
# Views of lines (no table): each wrapped line is checked against the unbounded one.
LINES = ("where", "locate", "trace")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", VIEWS)
def test_a_terminal_gets_lines_no_wider_than_it_is(
    answers: dict[str, Answer], name: str, width: int, mp: pytest.MonkeyPatch
) -> None:
    raw = terminal(answers[name], width, mp)
    lines = visible(raw)
    assert lines and all(len(ln) <= width for ln in lines), [ln for ln in lines if len(ln) > width]
    if name in LINES:
        assert_fits(raw, terminal(answers[name], 10_000, mp), width)


def test_where_on_a_100_column_terminal(answers: dict[str, Answer], mp: pytest.MonkeyPatch) -> None:
    """The issue's own case: `where trunc` on 100 columns."""
    answer = answers["where"]
    raw = terminal(answer, 100, mp)
    whole = piped(answer)
    assert max(len(ln) for ln in whole.splitlines()) > 100  # what used to wrap on screen
    # Each GitHub URL of the answer is a hyperlink, none a line of text.
    github = urls(answer.data)
    assert github and links(raw) == github
    assert not any("https://" in ln for ln in visible(raw))
    # In a pipe the URLs are text and the paths whole.
    assert all(url in whole for url in github)
    assert "…" not in whole


def test_a_narrow_terminal_shortens_paths_from_the_left_and_json_keeps_them(
    answers: dict[str, Answer], mp: pytest.MonkeyPatch
) -> None:
    answer = answers["where"]
    narrow = "\n".join(visible(terminal(answer, 80, mp)))
    wide = "\n".join(visible(terminal(answer, 200, mp)))
    labels = {
        e["location"]["label"] for e in answer.data["yaml"]
    }  # aten/src/ATen/native/native_functions.yaml:NNNN
    for label in labels:
        tail = label.rsplit("/", 1)[1]
        assert label not in narrow and f"…/{tail}" in narrow
        assert label in wide  # 200 columns have room for it
        assert label in piped(answer)
    assert "…" not in json.dumps(answer.data)


def test_verbose_keeps_the_urls_as_text_on_a_terminal(
    answers: dict[str, Answer], mp: pytest.MonkeyPatch
) -> None:
    answer = answers["where"]
    loud = Answer(answer.result, answer.view, True, answer.data)
    text = "\n".join(visible(terminal(loud, 200, mp)))
    assert all(url in text for url in urls(answer.data))


def test_a_bare_rich_console_gets_the_same_fit(answers: dict[str, Answer]) -> None:
    """A view handed any rich console (a test's, `Console(width=N, force_terminal=True)`)
    fits it: the fit is the view's, not the console's settings."""
    from rich.console import Console

    for width in WIDTHS:
        stream = io.StringIO()
        answers["locate"].view(
            answers["locate"].result,
            Console(file=stream, width=width, force_terminal=True, color_system="standard"),
            False,
        )
        lines = visible(stream.getvalue())
        assert lines and all(len(ln) <= width for ln in lines)


@pytest.mark.parametrize("name", VIEWS)
def test_a_pipe_gets_whole_lines_and_urls_as_text(answers: dict[str, Answer], name: str) -> None:
    answer = answers[name]
    text = piped(answer)
    assert "\x1b" not in text
    assert not BOX.search(text), text
    assert "…/" not in text
    for url in urls(answer.data):
        if url in json.dumps(_shown_urls(name, answer.data)):
            assert url in text


def _shown_urls(name: str, data: dict[str, Any]) -> Any:
    """The part of an answer whose URLs the view prints (harvest: the items')."""
    return [i["url"] for i in data["items"]] if name == "harvest" else data


def test_harvest_in_a_pipe_is_one_item_per_line_under_a_header(
    answers: dict[str, Answer],
) -> None:
    answer = answers["harvest"]
    items = answer.data["items"]
    assert items
    lines = piped(answer).splitlines()
    assert lines[0].split() == ["id", "score", "where", "url", "task"]  # `| head -1`
    for n, item in enumerate(items, 1):
        row = lines[n]
        assert row.split()[:4] == [
            item["id"],
            str(item["score"]),
            f"{item['path']}:{item['line']}",
            item["url"] or "-",
        ]
        assert row.endswith(item["text"][:100].split("\n")[0].rstrip()[:60]) or (
            item["text"].split()[0] in row
        )


def test_harvest_on_a_terminal_links_each_item_to_github(
    answers: dict[str, Answer], mp: pytest.MonkeyPatch
) -> None:
    answer = answers["harvest"]
    raw = terminal(answer, 100, mp)
    assert links(raw) == {i["url"] for i in answer.data["items"] if i["url"]}


@pytest.mark.parametrize("name", ["setup", "verify", "doctor"])
def test_a_table_in_a_pipe_is_plain_rows(answers: dict[str, Answer], name: str) -> None:
    """setup, verify and doctor: no box, one row per line, each cell whole on it."""
    answer = answers[name]
    lines = piped(answer).splitlines()
    if name == "verify":
        assert lines[1].split() == ["check", "result", "detail"]
        for check in answer.data["checks"]:
            row = next(ln for ln in lines if ln.startswith(check["name"] + " "))
            assert check["status"] in row and row.endswith(check["detail"])
    elif name == "setup":
        assert lines[0] == "Workspace created"
        row = next(ln for ln in lines if ln.startswith("workspace "))
        assert row.split() == ["workspace", answer.data["workspace"]]
    else:
        assert lines[0] == "torch in this interpreter"
        row = next(ln for ln in lines if ln.startswith("interpreter "))
        assert row.split()[1] == answer.data["facts"]["python"]["executable"]


def test_stuck_fits_a_terminal(tmp_path: Path, mp: pytest.MonkeyPatch) -> None:
    from onboard.views import stuck as view
    from onboard.workflows.stuck import tools

    if not tools.available():
        pytest.skip("no stack tool installed")
    long = "x" * 150  # the command line is shown, and wraps
    answer = _run(
        mp, ["stuck", "--timeout", "2", "--", PY, "-c", f"import time; time.sleep(30)  # {long}"]
    )
    assert answer.result.snapshots
    for width in WIDTHS:
        for snap in answer.result.snapshots:
            raw = terminal(Answer(snap, view.render_snapshot, False, {}), width, mp)
            whole = terminal(Answer(snap, view.render_snapshot, False, {}), 10_000, mp)
            assert_fits(raw, whole, width)
    text = piped(Answer(answer.result.snapshots[0], view.render_snapshot, False, {}))
    assert long in text  # whole in a pipe
