"""`onboard compile` against torch itself: the corpus (tests/fixtures/compile_corpus)
runs once per session under `onboard compile --json` with
TORCH_LOGS=graph_breaks,recompiles set, so torch's own log of the same run (on
stderr, with the program's output) is the oracle; each user line is checked
against the marks in the corpus file, each line of torch/_dynamo against the file
it names."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fixtures.pytorch_repo import find_torch_dir
from opsource_helpers import save_workspace

CORPUS = Path(__file__).parent / "fixtures" / "compile_corpus"
PROGRAM = CORPUS / "corpus.py"
FAILURES = CORPUS / "failures.py"
_PREFIX = re.compile(r"^[VIWE]\d{4} [\d:.]+ \d+ \S+\] (?:\[[^\]]*\] )?\[__(\w+)\] ?(.*)$")
_AT = re.compile(r"^Graph break .*?in user code at (.+):(\d+)\s*$")
_LINK = re.compile(r"/gb/gb(\d+)\.html")
_RECOMPILING = re.compile(r"^Recompiling function (\S+) in (.+):(\d+)$")
_GUARD = re.compile(r"^\s*- (\d+/\d+): (.*)$")


def _onboard(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "onboard", "compile", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=1500,
    )


def torch_logs(stderr: str) -> dict[str, list[str]]:
    """torch's log lines by artifact (graph_breaks, recompiles), prefix taken off."""
    out: dict[str, list[str]] = {}
    for line in stderr.splitlines():
        m = _PREFIX.match(line)
        if m:
            out.setdefault(m[1], []).append(m[2])
    return out


def logged_breaks(lines: list[str]) -> Counter[tuple[str, int, str]]:
    """(file, line, registry id) of each graph break torch logged, with how often
    (a repeat is logged as "user stack suppressed due to duplicate graph break")."""
    found: Counter[tuple[str, int, str]] = Counter()
    current: tuple[str, int] | None = None
    for line in lines:
        at = _AT.match(line)
        if at:
            current = (at[1], int(at[2]))
            continue
        link = _LINK.search(line)
        if link and current is not None:
            found[(current[0], current[1], f"GB{link[1]}")] += 1
            current = None
    return found


def logged_recompiles(lines: list[str]) -> dict[tuple[str, str, int], tuple[int, set[str]]]:
    """function -> (recompilations, the failed guards listed) as torch logged them."""
    found: dict[tuple[str, str, int], tuple[int, set[str]]] = {}
    key = None
    for line in lines:
        m = _RECOMPILING.match(line)
        if m:
            key = (m[1], m[2], int(m[3]))
            count, guards = found.get(key, (0, set()))
            found[key] = (count + 1, guards)
            continue
        g = _GUARD.match(line)
        if g and key is not None:
            found[key][1].add(g[2].split("  #", 1)[0].strip())
    return found


def marked(path: Path, mark: str) -> dict[int, str]:
    """line -> what the comment `# MARK what` on it says."""
    return {
        i: line.split(f"# {mark} ", 1)[1].strip()
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if f"# {mark} " in line
    }


def names_registry_entry(place: dict[str, Any], gb_type: str) -> bool:
    """The line is an unimplemented(...) call whose gb_type= is ``gb_type``."""
    lines = Path(place["path"]).read_text().splitlines()
    line = place["line"]
    assert "unimplemented" in lines[line - 1], lines[line - 1]
    call = "\n".join(lines[line - 1 : line + 14])
    m = re.search(r"gb_type\s*=\s*((?:\"(?:[^\"\\]|\\.)*\"\s*)+)", call)
    return m is not None and ast.literal_eval(m[1].strip()) == gb_type


@pytest.fixture(scope="session")
def corpus_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    """The corpus once, under `onboard compile --json`, with torch's own logs on."""
    cwd = tmp_path_factory.mktemp("compile-corpus")
    done = _onboard(
        "--json", "--", sys.executable, str(PROGRAM),
        cwd=cwd, env={"TORCH_LOGS": "graph_breaks,recompiles"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout), done.stderr


def test_breaks_are_the_ones_torch_logs_with_their_counts(corpus_run: Any) -> None:
    answer, stderr = corpus_run
    oracle = logged_breaks(torch_logs(stderr)["graph_breaks"])
    ours = Counter(
        {
            (b["user"]["path"], b["user"]["line"], b["registry"]["id"]): b["count"]
            for b in answer["breaks"]
        }
    )
    assert ours == oracle
    assert answer["graph_breaks"] == sum(oracle.values())
    # The program's own output came through (onto stderr, as --json puts it).
    assert "printing from compiled code" in stderr and "corpus done" in stderr


def logged_hints(lines: list[str]) -> dict[tuple[str, int, str], list[str]]:
    """The "Hint:" lines torch logged for each break, the first time it logged it."""
    found: dict[tuple[str, int, str], list[str]] = {}
    current: tuple[str, int] | None = None
    hints: list[str] = []
    for line in lines:
        at = _AT.match(line)
        if at:
            current, hints = (at[1], int(at[2])), []
            continue
        if current is not None and line.strip().startswith("Hint: "):
            hints.append(line.strip().removeprefix("Hint: "))
        link = _LINK.search(line)
        if link and current is not None:
            found.setdefault((current[0], current[1], f"GB{link[1]}"), hints)
            current = None
    return found


def test_each_break_gives_torchs_hints_as_this_run_worded_them(corpus_run: Any) -> None:
    """The registry's hints are templates (`{fn.__name__}`); the log's are filled in."""
    answer, stderr = corpus_run
    oracle = logged_hints(torch_logs(stderr)["graph_breaks"])
    ours = {
        (b["user"]["path"], b["user"]["line"], b["registry"]["id"]): b["hints"]
        for b in answer["breaks"]
    }
    assert ours == oracle
    assert any(ours.values())


def test_each_break_is_at_a_marked_line_and_every_mark_broke(corpus_run: Any) -> None:
    answer, _ = corpus_run
    marks = marked(PROGRAM, "BREAK")
    assert len(marks) >= 12
    lines = PROGRAM.read_text().splitlines()
    for brk in answer["breaks"]:
        user = brk["user"]
        assert user["path"] == str(PROGRAM)
        assert user["line"] in marks, user
        assert user["code"] == lines[user["line"] - 1].strip()
        # the function is the one the line is in
        above = [ln for ln in lines[: user["line"]] if re.match(r"\s*def ", ln)][-1]
        assert above.strip().startswith(f"def {user['function']}("), (above, user)
    assert {b["user"]["line"] for b in answer["breaks"]} == set(marks)


def test_each_break_names_its_registry_entry_and_the_dynamo_line_that_decided_it(
    corpus_run: Any,
) -> None:
    answer, _ = corpus_run
    registry = json.loads((find_torch_dir() / "_dynamo/graph_break_registry.json").read_text())
    for brk in answer["breaks"]:
        entry = brk["registry"]
        assert registry[entry["id"]][0]["Gb_type"] == entry["gb_type"] == brk["reason"]
        assert entry["hints"] == registry[entry["id"]][0]["Hints"]
        assert brk["decided_by"], brk
        for place in brk["decided_by"]:
            assert place["path"].startswith(str(find_torch_dir() / "_dynamo"))
            assert not place["in_checkout"]  # no workspace here: the wheel's file
            assert names_registry_entry(place, entry["gb_type"]), place
        assert brk["uncompiled"]


def test_a_break_in_a_frame_dynamo_could_not_resume_says_the_frame_ran_eagerly(
    corpus_run: Any,
) -> None:
    answer, _ = corpus_run
    by_function = {b["user"]["function"]: b for b in answer["breaks"]}
    assert "dynamo could not resume" in by_function["context_manager"]["uncompiled"]
    printing = by_function["printing"]
    assert printing["resumed_in"] == [
        f"torch_dynamo_resume_in_printing_at_{printing['user']['line']}"
    ]
    # the resume function is one torch compiled
    assert printing["resumed_in"][0] in {f["function"] for f in answer["frames"]}


def test_recompiles_are_the_ones_torch_logs_per_function(corpus_run: Any) -> None:
    answer, stderr = corpus_run
    oracle = logged_recompiles(torch_logs(stderr)["recompiles"])
    ours = {
        (r["function"], r["path"], r["line"]): (r["recompiles"], {g["guard"] for g in r["guards"]})
        for r in answer["recompiles"]
    }
    assert ours == oracle
    kinds = {(r["function"], g["kind"]) for r in answer["recompiles"] for g in r["guards"]}
    assert {("scale", "constant"), ("sizes", "size"), ("dtypes", "dtype")} <= kinds
    for group in answer["recompiles"]:
        for guard in group["guards"]:
            assert guard["fix"]
            if guard["kind"] == "size":
                assert "mark_dynamic" in guard["fix"] and "dynamic=True" in guard["fix"]
            if guard["at"] is not None:  # the guard's user line is a marked one
                assert guard["at"]["line"] in marked(PROGRAM, "GUARD"), guard


def test_the_recompile_limit_is_seen_where_torch_warned_of_it(corpus_run: Any) -> None:
    answer, stderr = corpus_run
    warned = re.findall(r"hit config\.recompile_limit \((\d+)\)\n.*?function: '(\w+)'", stderr)
    assert len(warned) == 1
    limit, function = int(warned[0][0]), warned[0][1]
    hit = [r for r in answer["recompiles"] if r["limit_hit"]]
    assert [r["function"] for r in hit] == [function] == ["mode_string"]
    assert f"({limit})" in hit[0]["limit_note"] and "eagerly" in hit[0]["limit_note"]
    cost = {f["function"]: f for f in answer["frames"]}
    assert cost[function]["graphs"] == limit  # every version it could keep
    assert cost[function]["compiles"] == limit + 1  # and the one refused


def test_cost_counts_a_compile_for_each_first_compile_and_recompile(corpus_run: Any) -> None:
    answer, _ = corpus_run
    cost = {(f["function"], f["path"], f["line"]): f for f in answer["frames"]}
    for group in answer["recompiles"]:
        if not group["limit_hit"]:
            frame = cost[(group["function"], group["path"], group["line"])]
            assert frame["compiles"] == group["recompiles"] + 1
            assert frame["graphs"] == len(frame["ops_per_graph"]) == frame["compiles"]
    assert all(f["compile_seconds"] > 0 for f in answer["frames"])
    # torch.sin and the add of `sizes`: two ops in each of its graphs
    assert cost[("sizes", str(PROGRAM), _def_line(PROGRAM, "sizes"))]["ops_per_graph"] == [2, 2]
    assert any("CUDA graphs" in s for s in answer["not_checked"])
    assert any("Triton" in s for s in answer["not_checked"])


def _def_line(path: Path, name: str) -> int:
    lines = path.read_text().splitlines()
    return next(i for i, ln in enumerate(lines, 1) if ln.startswith(f"def {name}("))


@pytest.fixture(scope="module")
def failures_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """failures.py in-process through the workflow, in a workspace whose checkout holds
    torch/_dynamo (copied from the wheel), so torch's lines are shown there."""
    from onboard.workflows.compile import CompileRequest, compile_program

    root = tmp_path_factory.mktemp("compile-ws") / "ws"
    shutil.copytree(find_torch_dir() / "_dynamo", root / "pytorch/torch/_dynamo")
    save_workspace(root, "reference")
    return compile_program(
        CompileRequest(command=[sys.executable, str(FAILURES)], workspace=str(root)),
        quiet_stdout=True,
    ), root


def test_failures_are_placed_at_their_source_with_the_minifier(failures_run: Any) -> None:
    from onboard.jsonable import to_json

    result, root = failures_run
    assert result.exit_code == 5 == result.program_exit  # the program's own status
    answer = to_json(result)
    marks = marked(FAILURES, "FAIL")
    kinds = {f["kind"]: f for f in answer["failures"]}
    assert set(kinds) == set(marks.values()) == {"Unsupported", "BackendCompilerFailed"}
    unsupported = kinds["Unsupported"]
    assert marks[unsupported["user"]["line"]] == "Unsupported"
    assert unsupported["user"]["path"] == str(FAILURES)
    raised = unsupported["raised_at"]
    assert raised["in_checkout"] and raised["path"].startswith(str(root / "pytorch/torch/_dynamo"))
    assert names_registry_entry(raised, unsupported["registry"]["gb_type"])
    backend = kinds["BackendCompilerFailed"]
    assert backend["raised_at"]["path"] == str(FAILURES)
    assert marks[backend["raised_at"]["line"]] == "BackendCompilerFailed"
    assert backend["minifier"].startswith('TORCHDYNAMO_REPRO_AFTER="dynamo"')
    assert "this backend always fails" in backend["message"]
    assert answer["breaks"] == [] and answer["checkout"] == str(root / "pytorch")


def test_the_view_shows_each_failure_at_its_line(failures_run: Any) -> None:
    from rich.console import Console

    from onboard.views import compile as view

    result, _ = failures_run
    buffer = io.StringIO()
    view.render(result, Console(file=buffer, width=200, force_terminal=False), False)
    text = buffer.getvalue()
    assert "Failures while compiling" in text and "No graph breaks." in text
    for line, kind in marked(FAILURES, "FAIL").items():
        assert f"{FAILURES}:{line}" in text, kind
    assert "not checked:" in text


def test_a_forced_backend_replaces_the_programs_own(tmp_path: Path) -> None:
    done = _onboard("--backend", "eager", "--", sys.executable, str(FAILURES), cwd=tmp_path)
    assert done.returncode == 5, done.stderr[-3000:]  # the program's status passes through
    # broken_backend is never called: every graph went to eager; fullgraph still refuses
    assert "BackendCompilerFailed" not in done.stdout
    assert "Unsupported compiling whole_graph" in done.stdout
    assert "every graph on eager" in done.stdout
    assert "caught Unsupported" in done.stdout  # the program's output, passed through


def test_bad_usage_exits_2(tmp_path: Path) -> None:
    assert _onboard(cwd=tmp_path).returncode == 2
    assert _onboard("--backend", "tvm", "--", "python", "x.py", cwd=tmp_path).returncode == 2


@pytest.mark.slow
def test_inductor_with_the_real_compiler(tmp_path: Path) -> None:
    program = CORPUS / "inductor.py"
    done = _onboard(
        "--json", "--", sys.executable, str(program),
        cwd=tmp_path, env={"TORCH_LOGS": "graph_breaks,recompiles"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    answer = json.loads(done.stdout)
    oracle = logged_breaks(torch_logs(done.stderr)["graph_breaks"])
    assert Counter({(b["user"]["path"], b["user"]["line"], b["registry"]["id"]): b["count"]
                    for b in answer["breaks"]}) == oracle  # fmt: skip
    assert {b["user"]["line"] for b in answer["breaks"]} == set(marked(program, "BREAK"))
    assert sum(f["cache_hits"] + f["cache_misses"] for f in answer["frames"]) > 0
