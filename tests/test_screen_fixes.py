"""What a newcomer's first screens said wrong (issue 32), each checked for real:
doctor without numpy, the practice judge's dtype count, verify's "(cached)", the
where limitation's grammar, new-op's advice on `NAME_`, trace's missing script,
setup's failed fetch and missing parent folders, `git switch -` after new-op,
bisect outside a repository, blame past a file's end on a reference tree, and
reviews when every GitHub request fails.

The expected answers come from the input (the folder, the file's own line count,
the blocked import, what git itself says), never from onboard's output.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.cli import run_onboard
from fixtures.git_server import closed_port_url

from onboard.cli import cli
from onboard.crash import run_cli

# A sitecustomize that makes `import numpy` fail as it does where numpy is not
# installed (ModuleNotFoundError from the import system, find_spec included).
_NO_NUMPY = """\
import sys


class _NoNumpy:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoNumpy())
"""


@pytest.fixture
def without_numpy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """PYTHONPATH with the blocker: the interpreter of someone who ran only `pip install
    torch`. Checked here: numpy does not import, torch does."""
    folder = tmp_path / "no-numpy"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(_NO_NUMPY)
    monkeypatch.setenv("PYTHONPATH", str(folder))
    numpy = subprocess.run([sys.executable, "-c", "import numpy"], capture_output=True, text=True)
    assert numpy.returncode != 0 and "No module named 'numpy'" in numpy.stderr
    torch = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.ones(2).sum().item())"],
        capture_output=True,
        text=True,
    )
    assert torch.returncode == 0 and torch.stdout.strip() == "2.0", torch.stderr
    return str(folder)


def _doctor_json(cwd: Path, *args: str) -> tuple[int, dict[str, object]]:
    done = run_onboard("doctor", "--json", "--python", sys.executable, *args, cwd=cwd)
    return done.returncode, json.loads(done.stdout)


def _finding(data: dict[str, object], finding_id: str) -> dict[str, str]:
    findings = data["findings"]
    assert isinstance(findings, list)
    return next(f for f in findings if f["id"] == finding_id)


# --- 1. doctor: numpy is optional ----------------------------------------------------


def test_doctor_without_numpy_is_a_note_with_a_runnable_install(
    without_numpy: str, tmp_path: Path
) -> None:
    code, data = _doctor_json(tmp_path)
    numpy = _finding(data, "numpy-missing")
    assert numpy["severity"] == "info", data["findings"]
    # The interpreter doctor checked, with pip in it: `python -m pip` runs there.
    assert f"`{sys.executable} -m pip install numpy`" in numpy["fix"]
    pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    assert pip.returncode == 0
    assert "new-op" in numpy["why"]  # what of onboard needs it
    assert not [f for f in data["findings"] if f["severity"] != "info"], data["findings"]
    assert code == 0


def test_doctor_without_numpy_warns_where_verify_needs_it(
    without_numpy: str, tmp_path: Path
) -> None:
    from test_new_op import make_workspace

    ws = make_workspace(tmp_path / "ws")
    made = run_onboard("new-op", "my_frac", "--workspace", str(ws.root), cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-2000:]
    code, data = _doctor_json(tmp_path, "--workspace", str(ws.root))
    numpy = _finding(data, "numpy-missing")
    assert numpy["severity"] == "warning" and "my_frac" in numpy["title"]
    assert f"`{sys.executable} -m pip install numpy`" in numpy["fix"]
    assert code == 1


# --- 2 and 3. the practice judge: every differing dtype, "(cached)" once ---------------


@pytest.mark.slow
def test_the_judge_names_every_dtype_that_differs_and_says_cached_once(tmp_path: Path) -> None:
    import torch
    from onboard.tasks.newop_checks import _checks
    from test_new_op import make_workspace

    from onboard.workflows.newop import scaffold
    from onboard.workflows.newop.judge import judge_op

    ws = make_workspace(tmp_path / "ws")
    scaffold(ws, "floor")
    kernel = ws.checkout_path / "aten/src/ATen/native/cpu/PracticeFloorKernel.cpp"
    # a + a is floor(a) only at 0 (and at -inf, +inf, nan): wrong in every dtype it runs in.
    kernel.write_text(kernel.read_text().replace("return a;", "return a + a;"))
    first = judge_op(ws, "floor")
    step = next(s for s in first.steps if s.name == "numerics against torch.floor")
    mo = re.search(
        r"(\d+) of (\d+) dtypes differ from torch\.floor \(.*?\) \(([^;]*);", step.detail
    )
    assert mo, step.detail
    named = mo.group(3).split(", ")
    assert int(mo.group(1)) == len(named) > 3, step.detail
    for dtype in named:  # each one named does differ, by torch itself
        x = torch.tensor([1.5, -2.5], dtype=getattr(torch, dtype))
        assert not torch.equal(x + x, torch.floor(x)), dtype
    second = judge_op(ws, "floor")
    cached = [s for s in second.steps if s.cached]
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: no cached nvcc step to show")
    assert cached, [(s.name, s.detail) for s in second.steps]
    for check in _checks("practice floor", second):
        assert check.detail.count("(cached)") <= 1, check.detail
    assert any(c.detail.endswith(" (cached)") for c in _checks("practice floor", second))


# --- 4. where on a reference tree: a grammatical limitation -----------------------------


def test_where_limitation_subject_is_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from opsource_helpers import make_reference_workspace

    ws = make_reference_workspace(tmp_path / "ws")
    capsys.readouterr()
    assert run_cli(cli, ["where", "trunc", "--json", "--workspace", str(ws.root)]) == 0
    limits = json.loads(capsys.readouterr().out)["limitations"]
    # "<what> needs a full checkout": the subject is an action (a gerund), one thing,
    # not a plural ("The kernel bodies (...) needs").
    subject, needs, _rest = limits[0].partition(" needs a full checkout")
    assert needs, limits
    assert re.match(r"^[A-Z][a-z]+ing ", subject), subject


# --- 5. new-op NAME_: the advice is a command new-op takes ------------------------------


@pytest.mark.parametrize("name", ["relu_", "trunc_", "my_brand_new_"])
def test_new_op_on_an_in_place_name_suggests_a_command_that_is_accepted(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_new_op import make_workspace

    ws = make_workspace(tmp_path / "ws")
    capsys.readouterr()
    assert run_cli(cli, ["new-op", name, "--json", "--workspace", str(ws.root)]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    suggested = re.findall(r"`onboard new-op ([a-z0-9_]+)`", error["next_step"])
    assert suggested, error
    if name == "relu_":  # aten::relu is no structured pointwise op: practice refuses it
        assert suggested[0] != "relu"
    code = run_cli(
        cli, ["new-op", suggested[0], "--dry-run", "--json", "--workspace", str(ws.root)]
    )
    assert code == 0, capsys.readouterr()


# --- 6. trace: a missing script by its absolute path ------------------------------------


def test_trace_names_a_missing_absolute_script_without_the_current_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "here"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    missing = tmp_path / "gone" / "train.py"
    assert run_cli(cli, ["trace", "--json", "--", "python", str(missing)]) == 2
    message = json.loads(capsys.readouterr().out)["error"]["message"]
    assert message == f"The script {missing} does not exist."
    assert run_cli(cli, ["trace", "--json", "--", "python", "train.py"]) == 2
    message = json.loads(capsys.readouterr().out)["error"]["message"]
    assert message == f"The script train.py does not exist (looked in {elsewhere})."


# --- 7 and 8. setup: a fetch that failed, and missing parent folders ---------------------


def test_setup_reports_a_failed_fetch_as_failed_not_done(tmp_path: Path) -> None:
    url = closed_port_url()
    done = run_onboard(
        "setup", str(tmp_path / "ws"), "--remote", url, "--commit", "a" * 40, cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr[-2000:]
    fetching = [ln for ln in done.stderr.splitlines() if ln.strip().startswith("fetching ")]
    assert fetching, done.stderr
    assert any(": failed in " in ln for ln in fetching), fetching
    assert not any(": done in " in ln for ln in fetching), fetching
    assert not (tmp_path / "ws").exists()


def test_setup_refuses_a_missing_chain_of_parent_folders(tmp_path: Path) -> None:
    dest = tmp_path / "a" / "b" / "c" / "ws"
    done = run_onboard("setup", str(dest), "--from-wheel", "--json", cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    error = json.loads(done.stdout)["error"]
    assert f"{tmp_path / 'a'} does not exist" in error["message"]
    assert f"`mkdir -p {dest.parent}`" in error["next_step"]
    assert not (tmp_path / "a").exists()
    # Only the last component missing: setup makes it (the parent is there).
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    made = run_onboard("setup", str(dest), "--from-wheel", "--json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-2000:]
    assert (dest / "onboard.json").is_file()


# --- 9. new-op's branch switch: `git switch -` goes back --------------------------------


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_git_switch_dash_goes_back_after_new_op(tmp_path: Path) -> None:
    from test_new_op import make_workspace

    ws = make_workspace(tmp_path / "ws")
    repo = ws.checkout_path
    before = _git(repo, "symbolic-ref", "--short", "HEAD")
    made = run_onboard("new-op", "my_frac", "--workspace", str(ws.root), cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-2000:]
    branch = _git(repo, "symbolic-ref", "--short", "HEAD")
    assert branch != before
    # What the practice guide says (templates/practice/PRACTICE.md.j2): back to where you were.
    switched = subprocess.run(
        ["git", "-C", str(repo), "switch", "-"], capture_output=True, text=True
    )
    assert switched.returncode == 0, switched.stderr
    assert _git(repo, "symbolic-ref", "--short", "HEAD") == before
    assert _git(repo, "rev-parse", "--verify", "-q", f"refs/heads/{branch}")  # the branch stays


# --- 10. bisect without a repository: one paragraph, exit 2 ------------------------------


def test_bisect_without_a_repository_is_bad_input_however_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repro = tmp_path / "repro.py"
    repro.write_text("pass\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    capsys.readouterr()
    assert run_cli(cli, ["bisect", str(repro), "--good", "v1", "--json"]) == 2
    here = json.loads(capsys.readouterr().out)["error"]
    assert run_cli(cli, ["bisect", str(repro), "--good", "v1", "--repo", str(empty), "--json"]) == 2
    named = json.loads(capsys.readouterr().out)["error"]
    assert here["message"] == (
        f"No repository to bisect: the current folder {empty} is not inside a git repository."
    )
    assert named["message"] == (
        f"No repository to bisect: --repo {empty} is not inside a git repository."
    )
    assert here["next_step"] == named["next_step"] and "--repo" in here["next_step"]
    assert here["exit_code"] == named["exit_code"] == 2


# --- 11. blame past the end of a file on a reference tree ---------------------------------


def test_blame_past_the_end_on_a_reference_tree_is_the_range_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from opsource_helpers import make_reference_workspace

    ws = make_reference_workspace(tmp_path / "ws")
    path = "aten/src/ATen/native/native_functions.yaml"
    lines = len((ws.checkout_path / path).read_bytes().splitlines())
    capsys.readouterr()
    args = ["blame", f"{path}:999999", "--offline", "--json", "--workspace", str(ws.root)]
    assert run_cli(cli, args) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["message"] == f"{path} has {lines} line(s); line 999999 is beyond its end."
    # A line that is there still gets the reference tree's answer.
    assert run_cli(cli, [*args[:1], f"{path}:{lines}", *args[2:]]) == 1
    assert "git history" in json.loads(capsys.readouterr().out)["error"]["message"]


# --- 12. reviews when every request to GitHub fails ---------------------------------------


@pytest.mark.parametrize("sync", [False, True], ids=["reviews", "reviews-sync"])
def test_reviews_says_every_request_failed_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sync: bool
) -> None:
    from fixtures.github_reviews import ReviewsAPI
    from opsource_helpers import make_reference_workspace

    ws = make_reference_workspace(tmp_path / "ws")
    path = "aten/src/ATen/native/native_functions.yaml"
    with ReviewsAPI() as api:
        api.fail_with(500, "Server Error")
        capsys.readouterr()
        command = ["reviews", *(["sync"] if sync else []), path]
        code = run_cli(cli, [*command, "--api-url", api.url, "--json", "--workspace", str(ws.root)])
        asked = len(api.requests)
    error = json.loads(capsys.readouterr().out)["error"]
    assert asked >= 1
    assert "Every request to GitHub" in error["message"] and "500" in error["message"]
    assert f"{asked} request(s)" in error["message"]
    assert code == 1
