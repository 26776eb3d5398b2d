"""`onboard pr`: dry run, --open against a loopback GitHub API, and its errors.

Real PyTorch-shaped repositories (tests/fixtures/pytorch_repo.py) with real
commits on a branch, a bare repository as the fork remote, PyGithub talking to
tests/fixtures/github_api.py over loopback, and the CLI run as
`python -m onboard pr` for exit codes, stdout and stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fixtures.git_server import SilentServer
from fixtures.github_api import GitHubAPI
from fixtures.loopback import free_port

from onboard import workspace as ws_mod
from onboard.cli import cli
from onboard.crash import run_cli
from onboard.errors import OnboardError
from onboard.github.token import Token, find_token, web_host
from onboard.jsonable import to_json
from onboard.report import Reporter
from onboard.workflows import pr as pr_flow
from onboard.workflows.pr import abi, labels
from onboard.workflows.pr.change import owner_repo
from onboard.workflows.pr.publish import credential_env

TOKEN = "ghp_" + "Zq7" * 12  # the classic token shape: ghp_ + 36 characters
LOGIN = "octo-contrib"
UPSTREAM_URL = "https://github.com/pytorch/pytorch.git"
HAS_LINTRUNNER = shutil.which("lintrunner") is not None


# --------------------------------------------------------------------------
# helpers


def _git(repo: Path, *args: str, check: bool = True) -> str:
    # The conftest environment carries a fixed identity and no global config.
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def _title_body(draft_text: str) -> tuple[str, str]:
    """(title, body) read back from a draft's text as a person reads it: the first
    `# ` heading, then everything up to onboard's own notes."""
    lines = draft_text.splitlines()
    title_i = next(i for i, ln in enumerate(lines) if ln.startswith("# "))
    end = next((i for i, ln in enumerate(lines) if ln.startswith("## onboard notes")), len(lines))
    body = "\n".join(lines[title_i + 1 : end]).strip()
    body = body.removesuffix("---").strip()
    return lines[title_i][2:].strip(), body + "\n"


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


Runner = Callable[..., Ran]


def _onboard_subprocess(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Ran:
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env["COLUMNS"] = "200"
    proc = subprocess.run(
        [sys.executable, "-m", "onboard", "pr", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return Ran(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def onboard_pr(capsys: pytest.CaptureFixture[str]) -> Runner:
    """`onboard pr ARGS` through the real entry point (run_cli: exit codes, the
    error paragraph, crash logs), in this process for speed; a few tests run
    `python -m onboard` as a subprocess as well."""

    def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Ran:
        capsys.readouterr()
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(cwd)
            mp.setenv("COLUMNS", "200")
            for name, value in (env or {}).items():
                mp.setenv(name, value)
            code = run_cli(cli, ["pr", *args])
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


def _posts(api: GitHubAPI) -> list[Any]:
    return [r for r in api.requests if r.method == "POST"]


def _fork_branches(fork: Path) -> dict[str, str]:
    text = _git(fork, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads")
    return dict(line.split() for line in text.splitlines() if line.strip())


NN_FILE = '"""Stub of torch/nn/functional.py."""\n\n\ndef relu6(x):\n    return x\n'


@pytest.fixture
def repo(pytorch_repo_factory: Any) -> Path:
    """A PyTorch-shaped checkout on branch `fix-relu6` with one commit since
    origin/main; `origin` is pytorch/pytorch, so there is no fork remote yet."""
    info = pytorch_repo_factory(
        commits=3,
        seed_from_wheel=False,
        extra_files={"test/test_nn.py": "# stands in for PyTorch's test/test_nn.py\n"},
    )
    path = Path(info.path)
    _git(path, "remote", "add", "origin", UPSTREAM_URL)
    _git(path, "update-ref", "refs/remotes/origin/main", info.head)
    _git(path, "switch", "-q", "-c", "fix-relu6")
    _commit(
        path,
        {"torch/nn/functional.py": NN_FILE},
        "[nn] Add relu6 to torch.nn.functional\n\n"
        "relu6 clamps to [0, 6], as in MobileNetV2.\n\ncc @albanD @mruberry\n",
    )
    return path


@pytest.fixture
def fork(repo: Path, tmp_path: Path) -> Path:
    bare = tmp_path / "fork.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    _git(repo, "remote", "add", "fork", str(bare))
    return bare


@pytest.fixture
def api() -> Iterator[GitHubAPI]:
    with GitHubAPI(login=LOGIN, token=TOKEN) as server:
        yield server


def _open_env() -> dict[str, str]:
    return {"GITHUB_TOKEN": TOKEN}


# --------------------------------------------------------------------------
# dry run


def test_dry_run_writes_the_draft_in_git_dir_and_shows_it(repo: Path, onboard_pr: Runner) -> None:
    before = _git(repo, "status", "--porcelain")
    result = onboard_pr("--issue", "12345", cwd=repo)
    assert result.returncode == 0, result.stderr
    draft_path = repo / ".git" / "PR_DRAFT.md"
    text = draft_path.read_text()
    # shown on screen, nothing tracked changed
    assert "# [nn] Add relu6 to torch.nn.functional" in result.stdout
    assert str(draft_path) in result.stdout
    assert _git(repo, "status", "--porcelain") == before
    title, body = _title_body(text)
    assert title == "[nn] Add relu6 to torch.nn.functional"
    assert body.startswith("relu6 clamps to [0, 6], as in MobileNetV2.")
    assert "Fixes #12345" in body
    assert "## Test plan" in body and "`python test/test_nn.py`" in body
    # the checkout's .github/PULL_REQUEST_TEMPLATE.md checkboxes
    assert "- [ ] I read [CONTRIBUTING.md]" in body
    assert "- [ ] I ran `lintrunner -a`" in body
    # the body becomes the commit message: no cc lines, no author notes
    assert "cc @albanD" not in body and "cc:" not in body.lower()
    assert "@pytorchbot" not in body
    # the notes carry the label and the bot comment
    assert '@pytorchbot label "release notes: nn"' in text
    assert '@pytorchbot label "release notes: nn"' in result.stdout


def test_dry_run_json_has_the_documented_keys(repo: Path) -> None:
    result = _onboard_subprocess("--json", cwd=repo)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["branch"] == "fix-relu6" and data["base"] == "origin/main"
    assert data["dry_run"] is True and data["pull_request"] is None
    assert [c["subject"] for c in data["commits"]] == ["[nn] Add relu6 to torch.nn.functional"]
    assert data["changed_files"] == [{"status": "M", "path": "torch/nn/functional.py"}]
    assert data["label"]["label"] == "release notes: nn"
    # onboard tests' selection: the package's suite, then the public-bindings rule for
    # any torch/ change (test_public_bindings.py is not in this checkout).
    assert [(t["command"], t["present"]) for t in data["tests"]] == [
        ("python test/test_nn.py", True),
        ("python test/test_public_bindings.py", False),
    ]
    assert data["tests"][0]["reason"] == "suite owning torch/nn"
    assert data["lint"]["status"] in ("no-config", "not-installed")
    assert data["bc_warnings"] == [] and data["reminders"] == []
    assert data["body"] == _title_body(Path(data["draft_path"]).read_text())[1]


def test_uncommitted_changes_are_reported_never_included(repo: Path, onboard_pr: Runner) -> None:
    (repo / "torch/nn/functional.py").write_text(NN_FILE + "\nWIP_SECRET_SAUCE = 1\n")
    (repo / "scratch.py").write_text("print('notes')\n")
    result = pr_flow.run(pr_flow.PrRequest(repo=repo))
    assert result.change.uncommitted == (" M torch/nn/functional.py", "?? scratch.py")
    assert result.change.paths == ["torch/nn/functional.py"]
    assert "WIP_SECRET_SAUCE" not in result.body and "scratch.py" not in result.body
    assert "NOT in this pull request" in result.draft_text and "scratch.py" in result.draft_text
    cli = onboard_pr(cwd=repo)
    assert "2 uncommitted change(s) are NOT in the pull request" in cli.stdout
    # still uncommitted afterwards: nothing was swept in
    assert "scratch.py" in _git(repo, "status", "--porcelain")


def test_draft_goes_to_the_workspace_and_an_edited_one_is_kept(repo: Path, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _save_workspace(root, repo)
    first = pr_flow.run(pr_flow.PrRequest(workspace=str(root)))
    assert first.draft_path == root / "PR_DRAFT.md" and first.draft_backup is None
    assert not (repo / ".git" / "PR_DRAFT.md").exists()
    # an untouched draft is simply replaced
    again = pr_flow.run(pr_flow.PrRequest(workspace=str(root)))
    assert again.draft_backup is None
    # a draft the user edited is moved aside, not overwritten
    edited = first.draft_path.read_text().replace("relu6 clamps", "MY EDIT relu6 clamps")
    first.draft_path.write_text(edited)
    third = pr_flow.run(pr_flow.PrRequest(workspace=str(root), issue=7))
    assert third.draft_backup == root / "PR_DRAFT.md.bak"
    assert third.draft_backup.read_text() == edited
    assert "Fixes #7" in first.draft_path.read_text()


def _save_workspace(root: Path, repo: Path, **kwargs: Any) -> None:
    root.mkdir(exist_ok=True)
    fields: dict[str, Any] = {
        "torch_version": "2.13.0+cpu",
        "commit": None,
        "commit_kind": "release",
        "build_prefix": None,
        "python": sys.executable,
        "checkout": os.path.relpath(repo, root),
    }
    fields.update(kwargs)
    ws_mod.save(ws_mod.Workspace(root=root, **fields))


def test_workspace_commit_is_the_base_without_origin_main(repo: Path, tmp_path: Path) -> None:
    # `onboard setup` fetches the installed commit by sha: no origin/main, no main
    base_sha = _git(repo, "rev-parse", "origin/main")
    _git(repo, "update-ref", "-d", "refs/remotes/origin/main")
    _git(repo, "branch", "-D", "main")
    _save_workspace(tmp_path / "ws", repo, commit=base_sha)
    result = pr_flow.run(pr_flow.PrRequest(workspace=str(tmp_path / "ws")))
    assert result.change.base == base_sha and len(result.change.commits) == 1


def test_upstream_main_goes_first_when_origin_is_a_fork(repo: Path) -> None:
    head_of_main = _git(repo, "rev-parse", "origin/main")
    _git(repo, "remote", "set-url", "origin", "https://github.com/octo-contrib/pytorch.git")
    _git(repo, "update-ref", "refs/remotes/origin/main", "main~2")  # the fork's stale main
    _git(repo, "remote", "add", "upstream", UPSTREAM_URL)
    _git(repo, "update-ref", "refs/remotes/upstream/main", head_of_main)
    result = pr_flow.run(pr_flow.PrRequest(repo=repo))
    assert result.change.base == "upstream/main"
    assert [c.subject for c in result.change.commits] == ["[nn] Add relu6 to torch.nn.functional"]


def test_workspace_that_is_the_checkout_keeps_the_draft_in_git_dir(repo: Path) -> None:
    _save_workspace(repo, repo, checkout=".")
    (repo / ".git" / "info" / "exclude").write_text("onboard.json\n")
    result = pr_flow.run(pr_flow.PrRequest(workspace=str(repo)))
    assert result.draft_path == repo / ".git" / "PR_DRAFT.md"
    assert _git(repo, "status", "--porcelain") == ""


def test_multiple_commits_summarised_and_title_override(repo: Path) -> None:
    _commit(repo, {"test/test_nn.py": "# relu6 test\n"}, "[nn] Test relu6\n\nCovers the clamp.")
    result = pr_flow.run(pr_flow.PrRequest(repo=repo, title="[nn] relu6 for torch.nn.functional"))
    assert result.title == "[nn] relu6 for torch.nn.functional"
    assert "- [nn] Add relu6 to torch.nn.functional: relu6 clamps" in result.body
    assert "- [nn] Test relu6: Covers the clamp." in result.body


def test_commit_author_easycla_cannot_match_is_flagged(repo: Path, onboard_pr: Runner) -> None:
    # what `onboard new-op` falls back to in a checkout without user.email
    env = {"GIT_AUTHOR_NAME": "onboard", "GIT_AUTHOR_EMAIL": "onboard@localhost"}
    (repo / "test/test_nn.py").write_text("# relu6\n")
    subprocess.run(
        ["git", "-C", str(repo), "commit", "-qam", "Scaffold"],
        env={**os.environ, **env},
        check=True,
    )
    result = onboard_pr(cwd=repo)
    assert result.returncode == 0
    assert "onboard <onboard@localhost> is not an email GitHub knows" in result.stdout
    assert "--reset-author" in (repo / ".git" / "PR_DRAFT.md").read_text()


# --------------------------------------------------------------------------
# tests to run, labels


def test_scaffolded_op_names_its_opinfo_tests(repo: Path) -> None:
    _git(repo, "switch", "-q", "-c", "onboard/new-op-frac_trunc", "origin/main")
    yaml_path = repo / "aten/src/ATen/native/native_functions.yaml"
    entry = (
        "\n- func: frac_trunc(Tensor self) -> Tensor\n  structured_delegate: frac_trunc.out\n"
        "\n- func: frac_trunc.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n"
        "  structured: True\n"
    )
    _commit(
        repo,
        {
            "aten/src/ATen/native/native_functions.yaml": yaml_path.read_text() + entry,
            "aten/src/ATen/native/FracTrunc.cpp": "// kernel\n",
        },
        "Add frac_trunc",
    )
    result = pr_flow.run(pr_flow.PrRequest(repo=repo))
    commands = [t.command for t in result.tests]
    assert commands == ["python test/test_ops.py -k frac_trunc"]
    assert result.tests[0].present is False  # the fixture tree has no test/test_ops.py
    assert "`python test/test_ops.py -k frac_trunc` (not in the checkout" in result.body
    assert result.label.label == "release notes: python_frontend"


def test_new_func_on_any_branch_is_found_in_the_yaml(repo: Path) -> None:
    (repo / "test").mkdir(exist_ok=True)
    (repo / "test/test_ops.py").write_text("# OpInfo tests\n")
    _commit(repo, {}, "Add test_ops stand-in")
    yaml_path = repo / "aten/src/ATen/native/native_functions.yaml"
    _commit(
        repo,
        {
            str(yaml_path.relative_to(repo)): yaml_path.read_text()
            + "\n- func: sinc_(Tensor(a!) self) -> Tensor(a!)\n"
        },
        "Add sinc_",
    )
    result = pr_flow.run(pr_flow.PrRequest(repo=repo))
    assert "python test/test_ops.py -k sinc" in [t.command for t in result.tests]
    assert (repo / "test/test_ops.py").is_file()
    assert all(t.present for t in result.tests if "test_ops.py" in t.command)


@pytest.mark.parametrize(
    ("paths", "label"),
    [
        (
            ["test/test_nn.py", "docs/source/nn.rst", ".github/workflows/lint.yml"],
            labels.NOT_USER_FACING,
        ),
        (["tools/autograd/derivatives.yaml", "test/test_autograd.py"], "release notes: autograd"),
        (["aten/src/ATen/native/cuda/UnaryFractionKernels.cu"], "release notes: cuda"),
        (
            ["aten/src/ATen/native/LinearAlgebra.cpp", "torch/linalg/__init__.py"],
            "release notes: linalg",
        ),
        (["torch/_torch_docs.py"], "release notes: python_frontend"),
        (
            ["torch/nn/modules/conv.py", "torch/nn/functional.py", "torch/optim/sgd.py"],
            "release notes: nn",
        ),
        (["CONTRIBUTING.md", "tools/setup_helpers/env.py"], labels.NOT_USER_FACING),
    ],
)
def test_label_from_touched_paths(paths: list[str], label: str) -> None:
    suggestion = labels.suggest_label(paths)
    assert suggestion.label == label
    assert suggestion.bot_comment == f'@pytorchbot label "{label}"'


def test_label_for_an_unknown_area_says_it_is_a_guess() -> None:
    suggestion = labels.suggest_label(["torch/_dynamo/eval_frame.py"])
    assert suggestion.label == "release notes: python_frontend"
    assert "no area rule matched" in suggestion.reason
    assert suggestion.unmatched == ("torch/_dynamo/eval_frame.py",)


def test_tests_only_change_gets_not_user_facing_in_the_draft(repo: Path) -> None:
    _git(repo, "switch", "-q", "-c", "more-tests", "origin/main")
    _commit(repo, {"test/test_nn.py": "# more\n"}, "Test more of nn")
    result = pr_flow.run(pr_flow.PrRequest(repo=repo))
    assert result.label.label == "topic: not user facing"
    assert '@pytorchbot label "topic: not user facing"' in result.draft_text


# --------------------------------------------------------------------------
# binary-compatibility hazards

_TENSOR_IMPL_H = """\
#pragma once

namespace c10 {

struct C10_API TensorImpl : public c10::intrusive_ptr_target {
 public:
  virtual ~TensorImpl() override;
  int64_t numel() const {
    auto n = numel_;
    return n;
  }

 protected:
  Storage storage_;
  int64_t numel_ = 1;
  bool is_contiguous_ : 1;
};

} // namespace c10
"""

_ALLOCATOR_H = """\
#pragma once
namespace c10 {
struct C10_API Allocator {
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t n) = 0;
};
} // namespace c10
"""

_MODULE_CPP = """\
void initModule(py::module& m) {
  m.def("_set_grad_enabled", [](bool enabled) { set_grad_enabled(enabled); });
}
"""


@pytest.fixture
def abi_repo(pytorch_repo_factory: Any) -> Path:
    info = pytorch_repo_factory(
        commits=2,
        seed_from_wheel=False,
        extra_files={
            "c10/core/TensorImpl.h": _TENSOR_IMPL_H,
            "c10/core/Allocator.h": _ALLOCATOR_H,
            "torch/csrc/Module.cpp": _MODULE_CPP,
            "aten/src/ATen/core/ivalue.h": "struct IValue { Tag tag; };\n",
        },
    )
    path = Path(info.path)
    _git(path, "update-ref", "refs/remotes/origin/main", info.head)
    _git(path, "switch", "-q", "-c", "abi-change")
    return path


def test_bc_hazards_are_warned_in_the_draft_and_on_screen(
    abi_repo: Path, onboard_pr: Runner
) -> None:
    _commit(
        abi_repo,
        {
            "c10/core/TensorImpl.h": _TENSOR_IMPL_H.replace(
                "  int64_t numel_ = 1;\n", "  int64_t numel_ = 1;\n  int64_t extra_flags_ = 0;\n"
            ),
            "c10/core/Allocator.h": _ALLOCATOR_H.replace(
                "  virtual DataPtr allocate(size_t n) = 0;\n",
                "  virtual DataPtr allocate(size_t n) = 0;\n  virtual void trim() {}\n",
            ),
            "torch/csrc/Module.cpp": _MODULE_CPP.replace(
                "[](bool enabled)", "[](bool enabled, bool warn)"
            ),
            "aten/src/ATen/core/ivalue.h": "struct IValue { Tag tag; bool is_weak; };\n",
        },
        "Touch everything binary-compatibility cares about",
    )
    result = pr_flow.run(pr_flow.PrRequest(repo=abi_repo))
    kinds = {(h.kind, h.path) for h in result.hazards}
    assert kinds == {
        ("layout", "c10/core/TensorImpl.h"),
        ("vtable", "c10/core/Allocator.h"),
        ("pybind", "torch/csrc/Module.cpp"),
        ("ivalue", "aten/src/ATen/core/ivalue.h"),
    }
    layout = next(h for h in result.hazards if h.kind == "layout")
    assert layout.lines == ("+int64_t extra_flags_ = 0;",)
    assert "Binary compatibility warnings" in result.draft_text
    assert "TensorImpl size constraints" in result.draft_text
    cli = onboard_pr("--json", cwd=abi_repo)
    assert {w["kind"] for w in json.loads(cli.stdout)["bc_warnings"]} == {
        "layout",
        "vtable",
        "pybind",
        "ivalue",
    }
    screen = onboard_pr(cwd=abi_repo)
    assert screen.stdout.count("Binary compatibility warning") >= 4


def test_comment_and_function_body_edits_are_no_layout_hazard(abi_repo: Path) -> None:
    _commit(
        abi_repo,
        {
            "c10/core/TensorImpl.h": _TENSOR_IMPL_H.replace(
                "    auto n = numel_;\n", "    // numel_ is cached\n    auto n = numel_ + 0;\n"
            ).replace("  Storage storage_;\n", "  Storage storage_; // the data\n"),
        },
        "Comment TensorImpl",
    )
    result = pr_flow.run(pr_flow.PrRequest(repo=abi_repo))
    # the member line changed only in its comment, the other edit is inside a
    # function body: no declaration of TensorImpl changed
    assert result.hazards == []


def test_abi_scan_ignores_comment_only_lines() -> None:
    diff = (
        "diff --git a/c10/core/TensorImpl.h b/c10/core/TensorImpl.h\n"
        "--- a/c10/core/TensorImpl.h\n+++ b/c10/core/TensorImpl.h\n"
        "@@ -10,0 +11,2 @@\n+  // int64_t not_a_member_;\n+    auto local = 1;\n"
        "diff --git a/c10/util/Foo.h b/c10/util/Foo.h\n"
        "--- a/c10/util/Foo.h\n+++ b/c10/util/Foo.h\n"
        "@@ -1,0 +2 @@\n+  // virtual void f();\n"
    )
    assert abi.find_hazards(diff) == []


# --------------------------------------------------------------------------
# --open end to end


def test_open_pushes_to_the_fork_and_opens_a_draft(
    repo: Path, fork: Path, api: GitHubAPI, onboard_pr: Runner
) -> None:
    result = onboard_pr(
        "--open", "--issue", "4242", "--api-url", api.url, cwd=repo, env=_open_env()
    )
    assert result.returncode == 0, result.stderr
    posts = _posts(api)
    assert len(posts) == 1
    sent = posts[0].json
    assert posts[0].path == "/repos/pytorch/pytorch/pulls"
    assert sent["draft"] is True and sent["maintainer_can_modify"] is True
    assert sent["head"] == f"{LOGIN}:fix-relu6" and sent["base"] == "main"
    title, body = _title_body((repo / ".git" / "PR_DRAFT.md").read_text())
    assert sent["title"] == title and sent["body"] == body
    assert "Fixes #4242" in sent["body"]
    # the branch really is on the fork, at our HEAD
    assert _fork_branches(fork) == {"fix-relu6": _git(repo, "rev-parse", "HEAD")}
    number = next(iter(api.pulls["pytorch/pytorch"]))
    assert f"/pytorch/pytorch/pull/{number}" in result.stdout
    for reminder in ("EasyCLA", "approve before CI runs", "@pytorchmergebot merge"):
        assert reminder in result.stdout
    assert "Authorization" in posts[0].headers  # the token went to the API, and only there


def test_open_on_a_fork_an_organisation_owns_asks_again_without_maintainer_edits(
    repo: Path, fork: Path, api: GitHubAPI, onboard_pr: Runner
) -> None:
    api.org_owned_fork = True  # GitHub answers 422 to maintainer_can_modify (PyGithub#1921)
    result = onboard_pr("--open", "--json", "--api-url", api.url, cwd=repo, env=_open_env())
    assert result.returncode == 0, result.stderr
    sent = [p.json["maintainer_can_modify"] for p in _posts(api)]
    assert sent == [True, False]
    data = json.loads(result.stdout)
    assert data["pull_request"]["action"] == "created"
    assert data["pull_request"]["maintainer_can_modify"] is False
    assert any("maintainer_can_modify" in note for note in data["notes"])  # said so
    assert len(api.pulls["pytorch/pytorch"]) == 1


def test_open_refuses_a_branch_that_still_has_new_ops_placeholders(
    repo: Path, fork: Path, api: GitHubAPI, onboard_pr: Runner
) -> None:
    cu = "aten/src/ATen/native/cuda/MySoft.cu"
    placeholder = "      return a;  // TODO(onboard new-op): match the CPU kernel\n"
    _commit(repo, {cu: "// kernel\n" + placeholder}, "Add my_soft")
    result = onboard_pr("--open", "--api-url", api.url, cwd=repo, env=_open_env())
    assert result.returncode == 1, result.stderr
    assert f"{cu}:2" in result.stderr and "Nothing was pushed" in result.stderr
    assert _posts(api) == [] and _fork_branches(fork) == {}
    dry = onboard_pr(cwd=repo)
    assert dry.returncode == 1 and "Not written yet" in dry.stdout and f"{cu}:2" in dry.stdout


def test_second_open_updates_the_same_pull_request(
    repo: Path, fork: Path, api: GitHubAPI, onboard_pr: Runner
) -> None:
    first = onboard_pr("--open", "--api-url", api.url, cwd=repo, env=_open_env())
    assert first.returncode == 0, first.stderr
    head2 = _commit(repo, {"test/test_nn.py": "# relu6 test\n"}, "[nn] Test relu6")
    second = onboard_pr("--open", "--json", "--api-url", api.url, cwd=repo, env=_open_env())
    assert second.returncode == 0, second.stderr
    data = json.loads(second.stdout)
    assert data["pull_request"]["action"] == "updated"
    assert data["pull_request"]["pushed"] == "fast-forward"
    assert len(_posts(api)) == 1
    patches = [r for r in api.requests if r.method == "PATCH"]
    assert len(patches) == 1 and "- [nn] Test relu6" in patches[0].json["body"]
    assert len(api.pulls["pytorch/pytorch"]) == 1
    assert _fork_branches(fork) == {"fix-relu6": head2}


def test_open_through_the_workflow_returns_the_pull_request(
    repo: Path, fork: Path, api: GitHubAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    reporter = Reporter()
    result = pr_flow.run(pr_flow.PrRequest(repo=repo, open_pr=True, api_url=api.url), reporter)
    assert result.published is not None and result.published.action == "created"
    assert result.published.head == f"{LOGIN}:fix-relu6" and result.published.remote == "fork"
    assert to_json(result)["pull_request"]["number"] == result.published.number
    assert any("pushing fix-relu6 to fork" in m for m in reporter.messages)


def test_origin_that_is_not_upstream_is_the_fork(
    repo: Path, tmp_path: Path, api: GitHubAPI, onboard_pr: Runner
) -> None:
    bare = tmp_path / "my-fork.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    _git(repo, "remote", "set-url", "origin", str(bare))
    result = onboard_pr("--open", "--api-url", api.url, cwd=repo, env=_open_env())
    assert result.returncode == 0, result.stderr
    assert "fix-relu6" in _fork_branches(bare)


def test_token_from_gh_config_file(
    repo: Path, fork: Path, api: GitHubAPI, isolated_home: Path, onboard_pr: Runner
) -> None:
    hosts = isolated_home / ".config" / "gh" / "hosts.yml"
    hosts.parent.mkdir(parents=True, exist_ok=True)
    host = web_host(api.url)
    hosts.write_text(
        f"{host}:\n    user: {LOGIN}\n    oauth_token: {TOKEN}\n    git_protocol: https\n"
    )
    result = onboard_pr("--open", "--api-url", api.url, cwd=repo)
    assert result.returncode == 0, result.stderr
    assert len(_posts(api)) == 1


def test_find_token_precedence(monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> None:
    assert find_token() is None
    hosts = isolated_home / ".config" / "gh" / "hosts.yml"
    hosts.parent.mkdir(parents=True, exist_ok=True)
    hosts.write_text(
        "github.com:\n    oauth_token: from-gh-file\nghe.example:\n    oauth_token: ghe-file\n"
    )
    assert find_token().value == "from-gh-file"  # type: ignore[union-attr]
    assert find_token("https://ghe.example/api/v3").value == "ghe-file"  # type: ignore[union-attr]
    # the same order as onboard.github.token.find_token (harvest's issue lookups)
    monkeypatch.setenv("GH_TOKEN", "from-gh-token")
    assert find_token().source == "GH_TOKEN"  # type: ignore[union-attr]
    monkeypatch.setenv("GITHUB_TOKEN", "from-github-token")
    token = find_token()
    assert token is not None and token.source == "GITHUB_TOKEN"
    assert "from-github-token" not in repr(token) and "from-github-token" not in str(token)


# --------------------------------------------------------------------------
# the token never leaks


def _all_text_under(root: Path) -> Iterator[tuple[Path, bytes]]:
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            yield path, path.read_bytes()


def test_token_appears_nowhere(
    repo: Path, fork: Path, api: GitHubAPI, isolated_home: Path, tmp_path: Path
) -> None:
    # real processes: what a user's terminal and CI logs would get
    outputs = [
        _onboard_subprocess("-v", cwd=repo, env=_open_env()),
        _onboard_subprocess("--open", "-v", "--api-url", api.url, cwd=repo, env=_open_env()),
        _onboard_subprocess(
            "--open", "--json", "-v", "--api-url", api.url, cwd=repo, env=_open_env()
        ),
    ]
    # a server that echoes the token back in an error must not get it printed either
    api.fail_with(422, f"Validation Failed: head {TOKEN} is invalid", methods=("PATCH",))
    _commit(repo, {"test/test_nn.py": "# more\n"}, "[nn] More")
    failed = _onboard_subprocess("--open", "-v", "--api-url", api.url, cwd=repo, env=_open_env())
    assert failed.returncode == 1 and "Validation Failed" in failed.stderr
    outputs.append(failed)
    api.clear_failures()
    # and a 401 for good measure
    outputs.append(
        _onboard_subprocess(
            "--open", "--api-url", api.url, cwd=repo, env={"GITHUB_TOKEN": TOKEN + "x"}
        )
    )
    assert outputs[0].returncode == outputs[1].returncode == outputs[2].returncode == 0
    needle = TOKEN.encode()
    for out in outputs:
        assert TOKEN not in out.stdout and TOKEN not in out.stderr
    for root in (repo, fork, isolated_home, tmp_path):
        for path, data in _all_text_under(root):
            assert needle not in data, f"token written to {path}"
    assert TOKEN not in (repo / ".git" / "config").read_text()


def test_https_push_credentials_come_from_the_environment_only(tmp_path: Path) -> None:
    token = Token(TOKEN, "GITHUB_TOKEN")
    env = credential_env(
        "https://github.com/octo-contrib/pytorch.git", token, "https://api.github.com"
    )
    assert env is not None
    config_values = [v for k, v in env.items() if k.startswith("GIT_CONFIG_VALUE_")]
    assert all(TOKEN not in v for v in config_values)
    # git itself asks the helper, as `git push` would
    answer = subprocess.run(
        ["git", "credential", "fill"],
        input="protocol=https\nhost=github.com\npath=octo-contrib/pytorch.git\n\n",
        env={**os.environ, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"password={TOKEN}" in answer.stdout.splitlines()
    # ssh, local and other-host remotes get no token
    assert (
        credential_env("git@github.com:octo-contrib/pytorch.git", token, "https://api.github.com")
        is None
    )
    assert credential_env(str(tmp_path / "fork.git"), token, "https://api.github.com") is None
    assert (
        credential_env("https://gitlab.example/u/pytorch.git", token, "https://api.github.com")
        is None
    )
    assert (
        credential_env("https://ghe.example/u/pytorch.git", token, "https://ghe.example/api/v3")
        is not None
    )


@pytest.mark.parametrize(
    ("url", "parsed"),
    [
        ("https://github.com/octo/pytorch.git", ("github.com", "octo", "pytorch")),
        ("git@github.com:octo/pytorch.git", ("github.com", "octo", "pytorch")),
        ("ssh://git@ghe.example/org/pytorch", ("ghe.example", "org", "pytorch")),
        ("file:///srv/fork.git", None),
        ("/srv/fork.git", None),
    ],
)
def test_owner_repo(url: str, parsed: tuple[str, str, str] | None) -> None:
    assert owner_repo(url) == parsed


# --------------------------------------------------------------------------
# errors: exit 1, one clear paragraph, nothing half done


def _assert_nothing_done(api: GitHubAPI, fork: Path | None) -> None:
    assert api.writes() == []
    assert api.pulls["pytorch/pytorch"] == {}
    if fork is not None:
        assert _fork_branches(fork) == {}


def _error_paragraph(result: Ran) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("Error: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_detached_head_is_refused(repo: Path, onboard_pr: Runner) -> None:
    _git(repo, "switch", "-q", "--detach", "HEAD")
    message = _error_paragraph(onboard_pr(cwd=repo))
    assert "HEAD is detached" in message and "git switch -c" in message


@pytest.mark.parametrize("branch", ["main", "viable/strict"])
def test_default_branch_is_refused(repo: Path, branch: str, onboard_pr: Runner) -> None:
    _git(repo, "switch", "-q", "-C", branch)
    message = _error_paragraph(onboard_pr(cwd=repo))
    assert f"You are on `{branch}`, a default branch" in message


def test_upstream_head_branch_is_refused(repo: Path, onboard_pr: Runner) -> None:
    _git(repo, "switch", "-q", "-c", "develop")
    _git(repo, "update-ref", "refs/remotes/origin/develop", "HEAD")
    _git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/develop")
    assert "`develop`, a default branch" in _error_paragraph(onboard_pr(cwd=repo))


def test_no_commits_since_base(repo: Path, onboard_pr: Runner) -> None:
    _git(repo, "switch", "-q", "-c", "empty", "origin/main")
    (repo / "torch/nn/functional.py").write_text(NN_FILE)
    message = _error_paragraph(onboard_pr(cwd=repo))
    assert "no commits since it left origin/main" in message and "git commit -a" in message


def test_no_base_to_compare_with(repo: Path, onboard_pr: Runner) -> None:
    _git(repo, "update-ref", "-d", "refs/remotes/origin/main")
    _git(repo, "branch", "-m", "main", "trunk")
    message = _error_paragraph(onboard_pr(cwd=repo))
    assert "`git fetch origin main`" in message and "or pass --base REF." in message


def test_no_fork_remote(repo: Path, api: GitHubAPI, onboard_pr: Runner) -> None:
    result = onboard_pr("--open", "--api-url", api.url, cwd=repo, env=_open_env())
    message = _error_paragraph(result)
    assert "No fork to push the branch to" in message and "git remote add fork" in message
    assert api.requests == []  # failed before anything was sent


def test_named_fork_remote_missing(
    repo: Path, fork: Path, api: GitHubAPI, onboard_pr: Runner
) -> None:
    message = _error_paragraph(
        onboard_pr(
            "--open", "--fork-remote", "mine", "--api-url", api.url, cwd=repo, env=_open_env()
        )
    )
    assert "no remote `mine`" in message and "fork, origin" in message
    _assert_nothing_done(api, fork)


def test_missing_token(repo: Path, fork: Path, api: GitHubAPI, onboard_pr: Runner) -> None:
    message = _error_paragraph(onboard_pr("--open", "--api-url", api.url, cwd=repo))
    assert "No GitHub token" in message and "GH_TOKEN" in message
    _assert_nothing_done(api, fork)


def test_bad_credentials_401(repo: Path, fork: Path, api: GitHubAPI, onboard_pr: Runner) -> None:
    api.fail_unauthorized()
    message = _error_paragraph(
        onboard_pr("--open", "--api-url", api.url, cwd=repo, env=_open_env())
    )
    assert "rejected the token from GITHUB_TOKEN (401" in message
    _assert_nothing_done(api, fork)


def test_forbidden_403(repo: Path, fork: Path, api: GitHubAPI, onboard_pr: Runner) -> None:
    api.fail_forbidden()
    message = _error_paragraph(
        onboard_pr("--open", "--api-url", api.url, cwd=repo, env=_open_env())
    )
    assert "refused" in message and "403" in message and "public_repo" in message
    _assert_nothing_done(api, fork)


def test_rate_limit(repo: Path, fork: Path, api: GitHubAPI, onboard_pr: Runner) -> None:
    api.fail_rate_limited()
    result = onboard_pr("--open", "--api-url", api.url, cwd=repo, env=_open_env())
    message = _error_paragraph(result)
    assert "rate limit" in message and "resets at" in message
    _assert_nothing_done(api, fork)


def test_connection_refused(repo: Path, fork: Path, onboard_pr: Runner) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    message = _error_paragraph(onboard_pr("--open", "--api-url", url, cwd=repo, env=_open_env()))
    assert f"Could not reach the GitHub API at {url}" in message
    assert "Connection refused" in message
    assert _fork_branches(fork) == {}


def test_push_rejected_leaves_no_pull_request(
    repo: Path, fork: Path, api: GitHubAPI, tmp_path: Path, onboard_pr: Runner
) -> None:
    # someone else's commit on the fork's branch: a plain push is rejected
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(repo), str(other)], check=True)
    _git(other, "switch", "-q", "fix-relu6")
    _commit(other, {"torch/nn/functional.py": "# elsewhere\n"}, "Elsewhere")
    _git(other, "push", "-q", str(fork), "fix-relu6")
    theirs = _fork_branches(fork)["fix-relu6"]
    message = _error_paragraph(
        onboard_pr("--open", "--api-url", api.url, cwd=repo, env=_open_env())
    )
    assert "was rejected" in message and "--force-with-lease" in message
    assert api.writes() == [] and _fork_branches(fork) == {"fix-relu6": theirs}


def test_failed_create_after_push_is_safe_to_rerun(
    repo: Path, fork: Path, api: GitHubAPI, onboard_pr: Runner
) -> None:
    api.fail_with(422, "Validation Failed", methods=("POST",))
    message = _error_paragraph(
        onboard_pr("--open", "--api-url", api.url, cwd=repo, env=_open_env())
    )
    assert "422" in message and "re-running is safe" in message
    assert api.pulls["pytorch/pytorch"] == {}
    api.clear_failures()
    again = onboard_pr("--open", "--api-url", api.url, cwd=repo, env=_open_env())
    assert again.returncode == 0, again.stderr
    assert len(api.pulls["pytorch/pytorch"]) == 1


@pytest.mark.parametrize("scheme", ["http", "git"])
def test_a_fork_remote_that_never_answers_fails_within_the_push_timeout(
    repo: Path, api: GitHubAPI, onboard_pr: Runner, scheme: str
) -> None:
    # Accepts the connection, then silence: without an idle timeout git waits
    # as long as the OS keeps the socket (minutes), with nothing on the screen.
    with SilentServer() as silent:
        _git(repo, "remote", "add", "fork", f"{scheme}://127.0.0.1:{silent.port}/octo/pytorch.git")
        result = onboard_pr(
            "--open", "--push-timeout", "1", "--api-url", api.url, cwd=repo, env=_open_env()
        )
        accepted = silent.accepted
    message = _error_paragraph(result)
    assert accepted >= 1  # it connected: this is the silent remote, not a refused one
    assert "printed nothing for 1 s (--push-timeout)" in message
    assert "onboard pr --open --push-timeout 300" in message
    assert api.writes() == []


def test_push_timeout_must_be_a_positive_number(repo: Path, onboard_pr: Runner) -> None:
    result = onboard_pr("--open", "--push-timeout", "0", cwd=repo)
    assert result.returncode == 2
    assert "Invalid value for '--push-timeout': 0.0 is not in the range x>=1." in result.stderr


def test_push_progress_reaches_the_reporter(
    repo: Path, fork: Path, api: GitHubAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onboard.report import Task

    seen: list[str] = []

    class Recording(Reporter):
        @contextlib.contextmanager
        def task(self, description: str, total: float | None = None) -> Iterator[Task]:
            outer = self

            class T(Task):
                def update(self, *, detail: str = "", **kw: Any) -> None:
                    outer.messages.append(detail)
                    seen.append(detail)

            yield T()

    monkeypatch.setenv("GH_TOKEN", TOKEN)
    pr_flow.run(pr_flow.PrRequest(repo=repo, open_pr=True, api_url=api.url), Recording())
    assert any(line.startswith("Writing objects:") for line in seen), seen


PROXY_PAGE = "<html><head><title>Sign in</title></head><body>Corporate proxy</body></html>"


@pytest.mark.parametrize(
    ("body", "method", "path", "said"),
    [
        (PROXY_PAGE, "GET", r"^/user$", "no string `login`"),
        ({"login": 7}, "GET", r"^/user$", "`login` = 7"),
        ([], "GET", r"^/user$", "JSON of another shape (list)"),
        ({"login": "octo contrib:x"}, "GET", r"^/user$", "which GitHub never sends"),
        (PROXY_PAGE, "GET", r"^/repos/pytorch/pytorch$", "no string `default_branch`"),
        (PROXY_PAGE, "GET", r"/pulls$", "TypeError in PyGithub"),
        ({"total": 0}, "GET", r"/pulls$", "TypeError in PyGithub"),
        (["not-a-pull"], "GET", r"/pulls$", "without its `url`"),
    ],
    ids=["user-page", "user-login-int", "user-list", "user-login-odd", "repo-page",
         "pulls-page", "pulls-dict", "pulls-strings"],
)  # fmt: skip
def test_an_answer_github_never_sends_stops_before_the_push(
    repo: Path, fork: Path, api: GitHubAPI, onboard_pr: Runner,
    body: Any, method: str, path: str, said: str,
) -> None:  # fmt: skip
    # A captive portal or proxy answers 200 with its own page: PyGithub reads
    # that as an object whose every field is None (the head became None:branch).
    api.answer_with(body, methods=(method,), path=path)
    message = _error_paragraph(
        onboard_pr("--open", "--api-url", api.url, cwd=repo, env=_open_env())
    )
    assert "gave an answer GitHub never sends" in message and said in message
    assert "--api-url" in message and "onboard pr --open" in message
    _assert_nothing_done(api, fork)
    assert not any("None" in str(r.json) for r in api.requests if r.json)


def test_an_unreadable_answer_after_the_push_is_safe_to_rerun(
    repo: Path, fork: Path, api: GitHubAPI, onboard_pr: Runner
) -> None:
    api.answer_with(PROXY_PAGE, methods=("POST",), path=r"/pulls$", times=1)
    message = _error_paragraph(
        onboard_pr("--open", "--api-url", api.url, cwd=repo, env=_open_env())
    )
    assert "opening a draft pull request" in message and "no `head`" in message
    assert "re-running is safe" in message
    assert _fork_branches(fork) == {"fix-relu6": _git(repo, "rev-parse", "HEAD")}
    again = onboard_pr("--open", "--json", "--api-url", api.url, cwd=repo, env=_open_env())
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["pull_request"]["head"] == f"{LOGIN}:fix-relu6"


def test_reference_workspace_measures_from_its_branch(repo: Path, tmp_path: Path) -> None:
    # `onboard setup --from-wheel` commits its tree on a branch named `reference`
    _git(repo, "branch", "reference", "origin/main")
    _git(repo, "update-ref", "-d", "refs/remotes/origin/main")
    _git(repo, "branch", "-D", "main")
    _save_workspace(tmp_path / "ws", repo, checkout_kind=ws_mod.REFERENCE)
    result = pr_flow.run(pr_flow.PrRequest(workspace=str(tmp_path / "ws")))
    assert result.change.base == "reference" and len(result.change.commits) == 1
    assert any("needs a full checkout" in note for note in result.notes)
    # It does not then suggest the --open it would refuse.
    from rich.console import Console

    from onboard.views import pr as view

    console = Console(record=True, width=200)
    view.render(result, console, verbose=False)
    text = console.export_text()
    assert "onboard pr --open" not in text
    assert "Next: this reference tree cannot be pushed as a pull request" in text
    assert to_json(result)["open_blocked"] == result.open_blocked
    _git(repo, "switch", "-q", "reference")
    with pytest.raises(OnboardError, match="the branch the change is measured against"):
        pr_flow.run(pr_flow.PrRequest(workspace=str(tmp_path / "ws")))


def test_reference_workspace_cannot_open(repo: Path, tmp_path: Path, api: GitHubAPI) -> None:
    root = tmp_path / "ws"
    _save_workspace(root, repo, checkout_kind=ws_mod.REFERENCE)
    with pytest.raises(OnboardError) as info:
        pr_flow.run(pr_flow.PrRequest(workspace=str(root), open_pr=True, api_url=api.url))
    assert "needs a full checkout" in info.value.paragraph()
    assert api.requests == []
    assert (root / "PR_DRAFT.md").is_file()  # the dry-run part still happened


def test_bad_issue_number_is_bad_input(repo: Path, onboard_pr: Runner) -> None:
    result = onboard_pr("--issue", "0", cwd=repo)
    assert result.returncode == 2 and "not an issue number" in result.stderr


# --------------------------------------------------------------------------
# lintrunner (real, with a small linter configured in the checkout)

_LINTER = """\
import json, sys
args = sys.argv[1:]
if "--init" in args:
    open(".lint-inited", "w").write("yes")
    sys.exit(0)
for path in [p.strip() for p in open(args[-1][1:]) if p.strip()]:
    for i, line in enumerate(open(path), 1):
        if "\\t" in line:
            print(json.dumps({"path": path, "line": i, "char": None, "code": "TABS",
                              "severity": "error", "name": "tab", "original": None,
                              "replacement": None, "description": "tab character"}))
"""
_LINTRUNNER_TOML = """\
[[linter]]
code = 'TABS'
include_patterns = ['**/*.py']
command = ['python3', 'tools/linter/tabs.py', '--', '@{{PATHSFILE}}']
init_command = ['python3', 'tools/linter/tabs.py', '--init', '--dry-run={{DRYRUN}}']
"""


@pytest.fixture
def lint_repo(repo: Path) -> Path:
    _git(repo, "switch", "-q", "main")
    _commit(
        repo, {".lintrunner.toml": _LINTRUNNER_TOML, "tools/linter/tabs.py": _LINTER}, "Add lint"
    )
    _git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    _git(repo, "switch", "-q", "fix-relu6")
    _git(repo, "rebase", "-q", "main")
    return repo


@pytest.mark.skipif(not HAS_LINTRUNNER, reason="lintrunner is not installed")
def test_lintrunner_clean_is_in_the_test_plan(lint_repo: Path) -> None:
    result = pr_flow.run(pr_flow.PrRequest(repo=lint_repo))
    assert result.lint.status == "clean" and result.lint.initialized
    assert (lint_repo / ".lint-inited").is_file()  # `lintrunner init` ran first
    assert "`lintrunner` on the 1 changed file(s): no lint issues" in result.body
    assert "- [x] I ran `lintrunner -a`" in result.body
    assert result.exit_code == 0
    again = pr_flow.run(pr_flow.PrRequest(repo=lint_repo))
    assert again.lint.status == "clean" and not again.lint.initialized


@pytest.mark.skipif(not HAS_LINTRUNNER, reason="lintrunner is not installed")
def test_lint_errors_are_a_finding_and_block_open(
    lint_repo: Path, fork: Path, api: GitHubAPI, onboard_pr: Runner
) -> None:
    _commit(lint_repo, {"torch/nn/functional.py": NN_FILE + "\tbad = 1\n"}, "Tabs")
    dry = onboard_pr(cwd=lint_repo)
    assert dry.returncode == 1
    assert "1 issue(s)" in dry.stdout and "tab character" in dry.stdout
    message = _error_paragraph(
        onboard_pr("--open", "--api-url", api.url, cwd=lint_repo, env=_open_env())
    )
    assert "lintrunner reported 1 error(s)" in message and "lintrunner -a" in message
    _assert_nothing_done(api, fork)
    assert api.requests == []


def test_lintrunner_missing_is_reported(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / ".lintrunner.toml").write_text(_LINTRUNNER_TOML)
    bin_dir = tmp_path / "bin"  # a PATH with git and nothing else
    bin_dir.mkdir()
    git_exe = shutil.which("git")
    assert git_exe is not None
    (bin_dir / "git").symlink_to(git_exe)
    monkeypatch.setenv("PATH", str(bin_dir))
    result = pr_flow.run(pr_flow.PrRequest(repo=repo))
    assert result.lint.status == "not-installed" and "pip install lintrunner" in result.lint.note


def test_help_does_not_import_github_or_yaml() -> None:
    code = (
        "import sys; from onboard.entry import main\n"
        "try:\n    main(['pr', '--help'])\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in ('github', 'yaml', 'git', 'rich', 'jinja2') if m in sys.modules]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
    # whole option names (`--fork-remote` is not `--fork-remote-url`)
    assert {"--fork-remote", "--api-url"} <= set(re.findall(r"--[\w-]+", out.stdout))


# --------------------------------------------------------------------------
# QA regressions: arguments that cannot work are exit 2, one JSON object with --json


@pytest.mark.parametrize(
    ("args", "words"),
    [
        pytest.param(["--open", "--api-url", "not-a-url"],
                     "Invalid value for '--api-url': 'not-a-url' is not an http(s) URL",
                     id="api-url-not-a-url"),  # PyGithub crashed (exit 3)
        pytest.param(["--upstream-repo", "garbage"], "OWNER/NAME",
                     id="upstream-repo-not-owner-name"),
        pytest.param(["--base", "no-such-branch"], "--base no-such-branch", id="base-not-a-commit"),
        pytest.param(["--repo", "{tmp}/nowhere"], "does not exist", id="repo-that-does-not-exist"),
        pytest.param(["--repo", "{tmp}"], "is not inside a git repository",
                     id="repo-outside-any-repository"),
    ],
)  # fmt: skip
def test_bad_arguments_exit_2(
    repo: Path, tmp_path: Path, onboard_pr: Runner, args: list[str], words: str
) -> None:
    args = [a.format(tmp=tmp_path) for a in args]
    ran = onboard_pr(*args, "--json", cwd=repo, env={"GITHUB_TOKEN": TOKEN})
    assert ran.returncode == 2, ran.stderr
    error = json.loads(ran.stdout)["error"]
    assert words in error["message"], error
    assert error["next_step"], error
