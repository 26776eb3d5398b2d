"""The parts of `reviews` / `blame` that read text: commit trailers (the merge bot's
formats), `.github/merge_rules.yaml` (the merge bot's globs), `CODEOWNERS` (GitHub's
rules), review comment threads and anchors, the cache's keys and pages."""

from __future__ import annotations

import pytest
from fixtures.review_history import CODEOWNERS, MERGE_RULES

from onboard.workflows.reviews import codeowners, merge_rules, trailers
from onboard.workflows.reviews.comments import ReviewComment, find_in, on_lines, threads

LANDED = """\
[inductor] Fuse pointwise ops into reductions (#140123)

Longer description.

Co-authored-by: Grace Kernel <grace.kernel@example.com>
Pull Request resolved: https://github.com/pytorch/pytorch/pull/140123
Approved by: https://github.com/jansel, https://github.com/eellison
ghstack dependencies: #140121, #140122
"""
REVERT = """\
Revert "[inductor] Fuse pointwise ops into reductions (#140123)"

This reverts commit 0123456789abcdef0123456789abcdef01234567.

Reverted https://github.com/pytorch/pytorch/pull/140123 on behalf of https://github.com/malfet due to Broke trunk ([comment](https://github.com/pytorch/pytorch/pull/140123#issuecomment-1))
"""  # noqa: E501 (the merge bot writes it on one line)
IMPORT = """\
Use at::ScalarType in trunc (#140200)

Summary: from the internal tree.

Differential Revision: D70000001
Pull Request resolved: https://github.com/pytorch/pytorch/pull/140200
Approved by: https://github.com/ezyang
"""


def test_a_landed_commit() -> None:
    t = trailers.parse(LANDED)
    assert (t.pr, t.pr_repo, t.kind) == (140123, "pytorch/pytorch", "change")
    assert t.approvers == ("jansel", "eellison")
    assert t.ghstack_deps == (140121, 140122)
    assert t.coauthors == ("Grace Kernel <grace.kernel@example.com>",)
    assert t.pr_url == "https://github.com/pytorch/pytorch/pull/140123"
    assert trailers.title_of(LANDED.splitlines()[0]) == (
        "[inductor] Fuse pointwise ops into reductions"
    )


def test_a_revert_names_the_pr_it_reverts_and_why() -> None:
    t = trailers.parse(REVERT)
    assert (t.kind, t.pr, t.reverted_by) == ("revert", 140123, "malfet")
    assert t.reverts_sha == "0123456789abcdef0123456789abcdef01234567"
    assert t.revert_reason == "Broke trunk"
    assert t.approvers == ()


def test_an_import_a_reland_and_a_codemod() -> None:
    t = trailers.parse(IMPORT)
    assert (t.differential_revision, t.pr, t.approvers) == ("D70000001", 140200, ("ezyang",))
    reland = trailers.parse("[Reland] Fuse pointwise ops (#140300)\n\nRelands #140123.\n")
    assert (reland.kind, reland.pr, reland.refers_to) == ("reland", 140300, (140123,))
    assert trailers.parse('Reland "Fuse pointwise ops" (#140301)').kind == "reland"


@pytest.mark.parametrize(
    ("subject", "kind"),
    [
        ("[BE] Apply clang-format to ATen/core/dispatch headers (#143620)", "codemod"),
        ("[codemod] c10::optional -> std::optional (#1)", "codemod"),
        ("Enable UFMT on all of torch/sparse (#130545)", "codemod"),
        ("[BE][Easy][5/19] enforce style for empty lines in import segments (#129756)", "codemod"),
        ("Relax the lint on (a thing) (#5)", "codemod"),
        ("Add linear_relu to the quantizer (#6)", "change"),
    ],
    ids=["be-clang-format", "codemod-tag", "enable-ufmt", "be-easy-style", "lint", "a-change"],
)
def test_codemods_are_told_apart_from_changes(subject: str, kind: str) -> None:
    assert trailers.parse(subject).kind == kind


def test_bots_are_told_apart_from_people() -> None:
    for login in ("pytorchmergebot", "pytorch-bot[bot]", "facebook-github-bot", "dependabot"):
        assert trailers.is_bot(login)
    assert trailers.is_bot("anyone", "Bot")
    assert not trailers.is_bot("ngimel") and not trailers.is_bot(None)  # a deleted account


def test_merge_rules_read_as_the_merge_bot_reads_them() -> None:
    m = merge_rules.Matcher(merge_rules.parse(MERGE_RULES))
    names = lambda path: [r.name for r in m.rules_for(path)]  # noqa: E731
    catch_all = ["superuser", "Core Reviewers", "Core Maintainers"]
    assert names("aten/src/ATen/native/cpu/UnaryOpsKernel.cpp") == ["CPU ATen backend", *catch_all]
    # `**` crosses folders (and matches none), `*` stays in one.
    assert names("aten/src/ATen/native/BatchLinearAlgebra.cpp")[0] == "Linear Algebra"
    assert names("aten/src/ATen/native/cuda/linalg/LinearAlgebraStubs.cpp")[0] == "Linear Algebra"
    assert names("torch/linalg/__init__.py")[0] == "Linear Algebra"
    assert names("aten/src/ATen/native/UnaryOps.cpp") == catch_all
    rule = m.rules_for("torch/linalg/x.py")[0]
    assert rule.people == rule.approved_by == ("lezcano", "IvanYashchuk")
    readme = m.rules_for("README.md")[0]  # a team may approve, and is nobody's login
    assert "pytorch/metamates" in readme.approved_by and "pytorch/metamates" not in readme.people


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        # Prefix matches (re.match, no end anchor), from .github/merge_rules.yaml's own patterns.
        ("third_party/onnx", "third_party/onnx/onnx/defs.cc", True),
        ("docs/source/onnx*", "docs/source/onnx_dynamo.rst", True),
        ("docs/source/onnx*", "docs/source/onnx/index.rst", True),
        ("torch/csrc/jit/passes/onnx.*", "torch/csrc/jit/passes/onnx.cpp", True),
        ("torch/csrc/jit/passes/onnx.*", "torch/csrc/jit/passes/onnxa.cpp", False),
        ("aten/src/ATen/native/cuda/*FFT*.h", "aten/src/ATen/native/cuda/CuFFTUtils.h", True),
        ("aten/src/ATen/native/cuda/*FFT*.h", "aten/src/ATen/native/cuda/x/CuFFT.h", False),
        ("**vmap**", "torch/_functorch/vmap.py", True),
        ("torch/**sparse*", "torch/sparse/__init__.py", True),
        ("test/test_mps.py", "test/test_mps_ops.py", False),
        ("*", "anything/at/all.py", True),
    ],
)
def test_merge_rule_globs(pattern: str, path: str, matches: bool) -> None:
    regex = merge_rules.pattern_regex((pattern,))
    assert regex is not None and bool(regex.match(path)) == matches


def test_merge_rules_that_are_not_rules() -> None:
    with pytest.raises(merge_rules.Unreadable):
        merge_rules.parse("name: not a list")
    with pytest.raises(merge_rules.Unreadable):
        merge_rules.parse("- [unclosed")
    odd = merge_rules.Matcher(
        merge_rules.parse("- name: odd\n  patterns: ['?']\n  approved_by: [a]\n")
    )
    assert odd.unreadable() == ["odd"] and odd.rules_for("x") == []


def test_codeowners_last_match_wins() -> None:
    entries = codeowners.parse(CODEOWNERS)
    who = lambda path: (codeowners.owners_for(entries, path) or codeowners.Owners("", (), 0)).owners  # noqa: E731
    assert who("aten/src/ATen/native/cpu/UnaryOpsKernel.cpp") == ("@mingfeima", "@jgong5")
    assert who("aten/src/ATen/native/UnaryOps.cpp") == ("@ezyang",)
    assert who("aten/src/ATen/native/cuda/linalg/BatchLinearAlgebra.cpp") == (
        "@lezcano",
        "@nikitaved",
    )
    assert who("torch/optim/adam.py") == ("@albanD", "@janeyx99")
    assert who("c10/core/TensorImpl.h") == ()
    loose = codeowners.parse("*.md @docs\n/docs/ @writers\nREADME.md\n")
    assert codeowners.owners_for(loose, "torch/README.md").owners == ()  # unassigned again
    assert codeowners.owners_for(loose, "torch/notes.md").owners == ("@docs",)
    assert codeowners.owners_for(loose, "docs/source/index.rst").owners == ("@writers",)
    assert codeowners.owners_for(loose, "torch/docs/x.rst") is None  # /docs/ is anchored


def _comment(cid: int, hunk: str, **kw: object) -> ReviewComment:
    data = {"id": cid, "path": "a.cpp", "diff_hunk": hunk, "user": {"login": "ngimel"},
            "body": "b", "line": 12, "original_line": 12,
            "created_at": f"2025-01-0{cid % 9}"}  # fmt: skip
    data.update(kw)
    made = ReviewComment.from_api(1, data)
    assert made is not None
    return made


def test_threads_and_anchors() -> None:
    hunk = "@@ -10,2 +10,3 @@\n int a;\n int b;\n+TORCH_CHECK(x > 0);"
    root = _comment(1, hunk)
    replies = [_comment(2, hunk, in_reply_to_id=1), _comment(3, hunk, in_reply_to_id=9)]
    found = threads([replies[0], root, replies[1]])
    assert [[c.id for c in t.comments] for t in found] == [[1, 2], [3]]
    assert not found[0].root_deleted and found[1].root_deleted
    assert root.anchor() == ["TORCH_CHECK(x > 0);"] and root.context() == ["int a;", "int b;"]
    several = _comment(4, hunk, start_line=11, line=12)
    assert several.anchor() == ["int b;", "TORCH_CHECK(x > 0);"]
    assert on_lines(root, {"  TORCH_CHECK(x > 0);"}, set())
    assert on_lines(root, {"other"}, {12}) and not on_lines(root, {"other"}, {40})
    outdated = _comment(5, hunk, line=None)
    assert not on_lines(outdated, {"other"}, {12})
    assert ReviewComment.from_api(1, "<html>") is None
    assert ReviewComment.from_api(1, {"id": 7, "user": None}).user == "ghost"  # type: ignore[union-attr]


def test_finding_commented_code_in_todays_file() -> None:
    lines = ["int a;", "int b;", "  TORCH_CHECK(x > 0);", "}", "int c;", "}"]
    assert find_in(["TORCH_CHECK(x > 0);"], [], lines, near=3) == 3
    assert find_in(["gone();"], [], lines, near=3) is None
    # A bare "}" is found by its context, not at the first brace.
    assert find_in(["}"], ["int c;"], lines, near=1) == 6
    assert find_in(["}"], ["int zzz;"], lines, near=1) is None


def test_the_line_where_and_locate_end_with() -> None:
    import io
    import shlex

    from rich.console import Console

    from onboard.views import locate as locate_view
    from onboard.workflows.locate import FOUND, LocateResult
    from onboard.workflows.opsource.paths import SourceLoc
    from onboard.workflows.reviews import hint

    assert (
        hint.line(op="aten::mm.out") == "Past reviews of these files: onboard reviews aten::mm.out"
    )
    odd = "torch/my file.py"
    text = hint.line(["aten/a.cpp", odd, "aten/a.cpp", "/usr/x.py", None])
    assert text is not None
    assert shlex.split(text.split(": ", 1)[1]) == ["onboard", "reviews", "aten/a.cpp", odd]
    assert hint.line([]) is None
    loc = SourceLoc("aten/src/ATen/native/LinearAlgebra.cpp", 204, in_checkout=True)
    out = io.StringIO()
    located = LocateResult(mode="message", verdict=FOUND, check=loc)
    locate_view.render(located, Console(file=out, width=200), False)
    assert out.getvalue().strip().endswith("onboard reviews aten/src/ATen/native/LinearAlgebra.cpp")
