"""`onboard harvest`: real comments only, their forms, the ranking, ids, output,
`show`, enrichment against a loopback GitHub API, and the counts on trees
built from the installed wheel checked against an independent count."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tokenize
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import harvest_reference
import pytest
from fixtures.events import Holders
from fixtures.git_server import closed_port_url
from fixtures.github_api import GitHubAPI
from fixtures.pytorch_repo import find_package_dir, find_torch_dir

from onboard import workspace as ws_mod
from onboard.cache import DIGEST_KEY
from onboard.errors import BadInput, OnboardError
from onboard.jsonable import to_json
from onboard.workflows import harvest as hv
from onboard.workflows.harvest import enrich, forms, lexer, rank, scan, tags

TOKEN = "ghp_" + "harvestTestToken0123456789abcdef"
COMMIT = "cf30153c4c131c8164ee7798e5022d810682e2cb"


def _texts(path: str, source: str) -> list[str]:
    comments, _ = lexer.tagged_comments(path, source)
    return [c.text for c in comments]


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def _make_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "Import the tree")
    return root


def _onboard(
    *args: str, cwd: Path, env: dict[str, str] | None = None, copies: Holders | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI; with ``copies``, it and the copy it detaches to write its cache hold that pipe."""
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "onboard", *args], cwd=cwd, env=full, capture_output=True, text=True,
        timeout=300, pass_fds=(copies.fd,) if copies else (),
    )  # fmt: skip


# --------------------------------------------------------------------------
# Python: strings, docstrings and continuations (what tokenize calls a comment)


def test_python_strings_and_docstrings_are_not_comments() -> None:
    source = '''\
"""Module docstring.

# TODO: this is in a docstring, not a comment
"""
MSG = "TODO: a string"
PAT = r'# FIXME raw string'
F = f"{1} # XXX in an f-string"
B = b"HACK bytes"
X = """
# TODO: in a triple-quoted string
"""  # TODO: the real one, after the string
def f():
    # FIXME: indented real comment
    return "# TODO no"  # HACK: trailing real comment
'''
    assert _texts("torch/x.py", source) == [
        "TODO: the real one, after the string",
        "FIXME: indented real comment",
        "HACK: trailing real comment",
    ]


def test_python_continuation_lines_are_joined() -> None:
    source = """\
# TODO: remove this helper once
# the old API is deprecated
#
# not part of it
x = 1  # FIXME: the trailing comment
       # continues on an aligned line
y = 2
    # not aligned with it: a new comment
# TODO(alice): first
# TODO: second, its own item

# TODOs are not a tag (plural), nor is TODOLIST
"""
    comments, fallback = lexer.tagged_comments("torch/x.py", source)
    assert not fallback
    assert [(c.line, c.end_line, c.text) for c in comments] == [
        (1, 2, "TODO: remove this helper once the old API is deprecated"),
        (5, 6, "FIXME: the trailing comment continues on an aligned line"),
        (9, 9, "TODO(alice): first"),
        (10, 10, "TODO: second, its own item"),
    ]


def test_python_file_tokenize_rejects_uses_the_fallback() -> None:
    # An unterminated triple-quoted string: tokenize raises; the regex lexer
    # still finds the comment before it.
    source = 'x = 1  # TODO: before\ny = """never closed\n# TODO: inside the string\n'
    comments, fallback = lexer.tagged_comments("torch/broken.py", source)
    assert fallback
    assert [c.text for c in comments] == ["TODO: before"]


# --------------------------------------------------------------------------
# C, C++, CUDA: the comment lexer


def test_c_lexer_knows_strings_chars_and_raw_strings() -> None:
    source = r"""
const char* s = "// TODO: not a comment";
const char* e = "escaped \" // FIXME: still a string";
char q = '"'; // TODO: real, after a char literal holding a quote
char a = '\''; // XXX: real, after an escaped quote char
auto schema = R"SCHEMA(
  /* TODO: inside a raw string */ // HACK: also inside
)SCHEMA";
auto u = u8R"(// TODO: raw with prefix)";
int n = 1'000'000; // FIXME: after digit separators
int m = 0x1'0; // TODO: odd separator count
#define X "/* TODO: in a macro string */"
"""
    assert _texts("aten/src/ATen/x.cpp", source) == [
        "TODO: real, after a char literal holding a quote",
        "XXX: real, after an escaped quote char",
        "FIXME: after digit separators",
        "TODO: odd separator count",
    ]


def test_c_block_comments_and_continuations() -> None:
    source = """\
/* HACK: a block comment
 * that goes on here
 *
 * and a second paragraph, not joined */
int x; /* TODO: inline block */ int y;
// TODO: a line comment
// continued at the same column
//
// separate
/**
 * Docs.
 * FIXME: tagged line inside a doc block
 *        continues
 */
// TODO: spliced \\
   by a backslash
"""
    comments = lexer.tagged_comments("c10/util/x.h", source)[0]
    assert [(c.line, c.end_line, c.text) for c in comments] == [
        (1, 2, "HACK: a block comment that goes on here"),
        (5, 5, "TODO: inline block"),
        (6, 7, "TODO: a line comment continued at the same column"),
        (12, 13, "FIXME: tagged line inside a doc block continues"),
        (15, 15, "TODO: spliced by a backslash"),
    ]


def test_cuda_and_unterminated_comment() -> None:
    source = "__global__ void k() { /* TODO: never closed\n  still comment"
    assert _texts("aten/src/ATen/native/cuda/K.cu", source) == ["TODO: never closed still comment"]
    assert lexer.language("a/K.cu") == "cuda" and lexer.language("a/b.py") == "python"


# --------------------------------------------------------------------------
# Forms


@pytest.mark.parametrize(
    ("text", "kind", "owners", "issues"),
    [
        ("TODO: remove this", forms.BARE, (), ()),
        ("TODO(alice): rename", forms.OWNER, ("alice",), ()),
        ("TODO (bob, carol) simplify", forms.OWNER, ("bob", "carol"), ()),
        ("TODO(#12345): fix", forms.ISSUE, (), (12345,)),
        ("FIXME: see https://github.com/pytorch/pytorch/issues/98765", forms.ISSUE, (), (98765,)),
        ("TODO(future PR): move this", forms.FUTURE_PR, (), ()),
        ("TODO(follow-up PRs): move this", forms.FUTURE_PR, (), ()),
        ("TODO: T123456789 internal", forms.INTERNAL, (), ()),
        ("TODO(alice): tracked in #1234", forms.ISSUE, ("alice",), (1234,)),
        ("XXX: step #2 of 3", forms.BARE, (), ()),
        ("TODO: remove to_dense after gh-107381 is fixed", forms.ISSUE, (), (107381,)),
        ("TODO: see high-1234 here", forms.BARE, (), ()),
    ],
)
def test_forms(text: str, kind: str, owners: tuple[str, ...], issues: tuple[int, ...]) -> None:
    form = forms.parse(text)
    assert (form.kind, form.owners, form.issues) == (kind, owners, issues)


def test_form_details() -> None:
    form = forms.parse(
        "HACK(T98765): see https://github.com/pytorch/pytorch/pull/4567 and "
        "https://github.com/numpy/numpy/issues/1"
    )
    assert form.tag == "HACK" and form.internal_ids == ("T98765",)
    assert form.pulls == (4567,) and form.issues == ()
    assert form.other_links == ("https://github.com/numpy/numpy/issues/1",)
    assert forms.parse("TODO(alice): remove the shim").body == "remove the shim"


# --------------------------------------------------------------------------
# A small tree shaped like PyTorch, with every case the scan must handle

SMALL_TREE = {
    "torch/nn/modules/conv.py": (
        "import torch\n\n\n"
        "def conv():\n"
        "    # TODO: remove this shim once the old padding mode is deprecated\n"
        "    msg = 'TODO: not a comment'\n"
        "    return msg\n"
        "# TODO(alice): rename the helper\n"
    ),
    "torch/nn/modules/test_conv.py": "def test_conv():\n    pass\n",
    "torch/autograd/graph.py": (
        "# FIXME: the hook order is subtle and needs a redesign of the engine?\n"
        "x = 1  # TODO(#4321): the hook order needs a test\n"
    ),
    "torch/_dynamo/utils.py": "# HACK: work around a CPython bug\n",
    "aten/src/ATen/native/Conv.cpp": (
        '// TODO: simplify this check\nconst char* s = "TODO: string";\n'
        "// FIXME: wrong for empty tensors\n"
    ),
    "c10/util/Small.h": "#pragma once\n// XXX: remove after C++20\n",
    "third_party/include/pybind11/pybind11.h": "// TODO: vendored\n// FIXME: vendored too\n",
    "third_party/fmt/core.h": "// TODO: vendored submodule\n",
    "build/aten/src/ATen/ops/add.h": "// TODO: generated, skipped\n",
    "torch/csrc/autograd/generated/Functions.h": "// TODO: generated folder\n",
    "torch/_C/__init__.pyi": "# @generated by tools/pyi/gen_pyi.py\n# TODO: generated stub\n",
    "torch/utils/data.py": "# TODO(future PR): move this to torch.data\n# TODO: T1234567 inside\n",
    "docs/notes.md": "TODO: not a source file\n",
}


@pytest.fixture
def small_repo(tmp_path: Path) -> Path:
    return _make_repo(tmp_path / "pytorch", SMALL_TREE)


def _harvest(repo: Path, **kw: Any) -> hv.HarvestResult:
    kw.setdefault("limit", 0)
    kw.setdefault("enrich_results", False)
    return hv.harvest(hv.HarvestRequest(repo=str(repo), **kw))


def test_scan_counts_skips_and_non_comment_hits(small_repo: Path) -> None:
    result = _harvest(small_repo)
    summary = result.summary()
    assert summary["harvested"] == 10
    assert summary["skipped_vendored"] == 3 and summary["skipped_vendored_files"] == 2
    assert summary["skipped_generated"] == 3 and summary["skipped_generated_files"] == 3
    assert summary["non_comment_hits"] == 2  # the two strings
    assert summary["by_tag"] == {"TODO": 6, "FIXME": 2, "XXX": 1, "HACK": 1}
    # ripgrep where one is installed (beside this Python, or on PATH), as it names itself
    rg = shutil.which(
        "rg", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    )
    if rg is None:
        assert result.scan.searcher == "git grep"
    else:
        said = subprocess.run([rg, "--version"], capture_output=True, text=True, check=True)
        assert result.scan.searcher == said.stdout.splitlines()[0]
    paths = {i.path for i in result.items}
    assert not any(p.startswith(("third_party/", "build/")) for p in paths)
    assert "torch/_C/__init__.pyi" not in paths and "docs/notes.md" not in paths


def test_git_grep_fallback_finds_the_same(small_repo: Path) -> None:
    by_rg = _harvest(small_repo, searcher="auto")
    by_git = _harvest(small_repo, searcher="git")
    assert by_git.scan.searcher == "git grep"
    assert [i.id for i in by_git.items] == [i.id for i in by_rg.items]
    assert by_git.summary()["skipped_vendored"] == by_rg.summary()["skipped_vendored"]


def test_ranking_reasons(small_repo: Path) -> None:
    items = {i.text: i for i in _harvest(small_repo).items}
    top = items["TODO: remove this shim once the old padding mode is deprecated"]
    whys = [r.why for r in top.reasons]
    assert any(w.startswith("Python-only") for w in whys)
    assert 'small, local wording ("remove")' in whys
    assert "a test file nearby: torch/nn/modules/test_conv.py" in whys
    assert "no named owner" in whys
    # "once the old padding mode is deprecated": done when that is.
    assert 'waits for another change ("once the old padding"): check it landed' in whys
    assert top.score == sum(r.points for r in top.reasons) == 6
    owned = items["TODO(alice): rename the helper"]
    assert any("ask alice first" in r.why and r.points < 0 for r in owned.reasons)
    assert owned.score < top.score
    core_fixme = items["FIXME: wrong for empty tensors"]
    assert any(r.why == "FIXME in core code: likely subtle" for r in core_fixme.reasons)
    assert any(r.why.startswith("c++: a change needs a rebuild") for r in core_fixme.reasons)
    internal = items["TODO: T1234567 inside"]
    assert any("internal task id T1234567" in r.why for r in internal.reasons)
    question = items["FIXME: the hook order is subtle and needs a redesign of the engine?"]
    assert any(r.why.startswith("open-ended") for r in question.reasons)
    ranked = _harvest(small_repo).items
    assert ranked[0].text == top.text
    assert [i.score for i in ranked] == sorted((i.score for i in ranked), reverse=True)


def test_ids_are_stable_across_line_moves_and_change_with_text(small_repo: Path) -> None:
    before = {i.text: i.id for i in _harvest(small_repo).items}
    conv = small_repo / "torch/nn/modules/conv.py"
    conv.write_text(
        "# a new first line\n\n" + conv.read_text() + "# TODO(alice): rename the helper\n"
    )
    after = _harvest(small_repo).items
    moved = next(i for i in after if i.text.startswith("TODO: remove this shim"))
    assert moved.id == before[moved.text] and moved.line == 7
    twins = [i for i in after if i.text == "TODO(alice): rename the helper"]
    assert len(twins) == 2 and twins[0].id != twins[1].id
    assert before["TODO(alice): rename the helper"] in {t.id for t in twins}
    assert rank.stable_id("a.py", "TODO:  x\n y") == rank.stable_id("a.py", "TODO: x y")
    assert rank.stable_id("a.py", "TODO: x") != rank.stable_id("b.py", "TODO: x")


def test_filters(small_repo: Path) -> None:
    def ids(**kw: Any) -> set[str]:
        return {i.path for i in _harvest(small_repo, **kw).items}

    assert ids(python_only=True) == {
        "torch/nn/modules/conv.py", "torch/autograd/graph.py", "torch/_dynamo/utils.py",
        "torch/utils/data.py",
    }  # fmt: skip
    assert ids(paths=["torch/nn"]) == {"torch/nn/modules/conv.py"}
    assert ids(paths=["aten/*", "c10/util/Small.h"]) == {
        "aten/src/ATen/native/Conv.cpp",
        "c10/util/Small.h",
    }
    assert ids(modules=["autograd"]) == {"torch/autograd/graph.py"}
    assert ids(modules=["dynamo"]) == {"torch/_dynamo/utils.py"}
    assert ids(modules=["nn.modules"]) == {"torch/nn/modules/conv.py"}
    assert {i.tag for i in _harvest(small_repo, tags=["fixme"]).items} == {"FIXME"}
    limited = _harvest(small_repo, limit=3)
    assert len(limited.items) == 3 and limited.matched == 10
    with pytest.raises(BadInput):
        _harvest(small_repo, tags=["NOTE"])
    with pytest.raises(BadInput, match="no such file or folder"):
        _harvest(small_repo, paths=["torch/nnn"])


def test_cache_is_used_and_invalidated(small_repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _harvest(small_repo, cache=cache)
    assert first.summary()["files_lexed"] > 0 and first.summary()["files_cached"] == 0
    second = _harvest(small_repo, cache=cache)
    assert second.summary()["files_lexed"] == 0
    assert [i.id for i in second.items] == [i.id for i in first.items]
    path = small_repo / "torch/_dynamo/utils.py"
    path.write_text("# HACK: work around a CPython bug, v2\n")
    third = _harvest(small_repo, cache=cache)
    assert third.summary()["files_lexed"] == 1 and third.summary()["cache"] == "files"
    assert any(i.text == "HACK: work around a CPython bug, v2" for i in third.items)


def test_offsets_from_ripgrep_and_from_line_numbers_agree(small_repo: Path) -> None:
    cands = scan.find_candidates(small_repo, searcher="rg")
    assert set(cands.starts) == set(cands.hits)  # ripgrep said where each hit line starts
    with_offsets = scan.lex_files(small_repo, cands)
    from_lines = scan.lex_files(small_repo, dataclasses.replace(cands, starts={}))
    assert with_offsets == from_lines and len(with_offsets) == len(cands.hits)


# Lines that hide, fake or continue comments, far from the hits and near them.
_TRICKY_PY = r'''def f():
    """Docstring.

    # TODO: in a docstring
    """
    s = 'a \
# TODO: in a continued string'
    t = '"""' # TODO: after a string holding a triple quote
    u = """
# FIXME: in a triple string"""  # XXX: after it
    # HACK: first line
    # goes on
    return r"\\" # TODO: after an escaped backslash
'''
_TRICKY_C = r"""/* a block
   // TODO: inside a block
*/ int x; // TODO: after a block that ends mid-line
const char* s = R"X(
// FIXME: inside a raw string
)X"; // XXX: after it
#define M(a) \
  a // HACK: in a macro continuation
// TODO: spliced \
TODO continues the splice
/* TODO: a block
 * FIXME: with two tags
 */
auto r = R"never closed // TODO: after an unterminated raw string opener
"""


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("torch/t.py", _TRICKY_PY),
        ("c10/t.h", _TRICKY_C),
        # CRLF: a backslash before "\r\n" splices lines as one before "\n" does.
        ("torch/t.py", _TRICKY_PY.replace("\n", "\r\n")),
        ("c10/t.h", _TRICKY_C.replace("\n", "\r\n")),
    ],
    ids=["python", "c", "python-crlf", "c-crlf"],
)
def test_lexing_only_some_lines_finds_what_the_whole_file_lexer_finds(
    path: str, source: str
) -> None:
    lines = [n for n, text in enumerate(source.split("\n"), 1) if lexer.TAG_RE.search(text)]
    expected, _ = harvest_reference.tagged_comments(path, source, lines[-1])
    assert lexer.tagged_comments(path, source)[0] == expected
    assert len(expected) >= 4
    # With fewer hits, the comments on the remaining hit lines are the same.
    data = source.encode()
    for skip in range(len(lines)):
        some = [n for i, n in enumerate(lines) if i != skip]
        got, _ = lexer.comments_on_lines(path, data, lexer.hit_lines(data, some))
        assert [c for c in expected if c.line in some] == [c for c in got if c.line in some]


def test_tree_cache_follows_head_and_changed_files(small_repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert _harvest(small_repo, cache=cache).summary()["cache"] == "none"
    again = _harvest(small_repo, cache=cache)
    assert again.summary()["cache"] == "tree"  # same HEAD, same changes: nothing re-read
    assert again.summary()["harvested"] == 10 and again.items[0].reasons
    new = small_repo / "torch/nn/extra.py"
    new.write_text("# TODO: remove the extra module\n")  # untracked
    untracked = _harvest(small_repo, cache=cache)
    assert untracked.summary()["cache"] != "tree" and untracked.summary()["harvested"] == 11
    assert _harvest(small_repo, cache=cache).summary()["cache"] == "tree"
    _git(small_repo, "add", "-A")
    _git(small_repo, "commit", "-qm", "Add extra")
    committed = _harvest(small_repo, cache=cache)
    assert committed.summary()["cache"] != "tree" and committed.summary()["harvested"] == 11
    assert _harvest(small_repo, searcher="git", cache=cache).scan.searcher == "git grep"


def test_an_edit_redoes_only_that_file(small_repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _harvest(small_repo, cache=cache)
    conv = small_repo / "torch/nn/modules/conv.py"
    conv.write_text(conv.read_text() + "# TODO: drop the old padding mode\n")
    edited = _harvest(small_repo, cache=cache)
    s = edited.summary()
    assert (s["cache"], s["files_lexed"], s["files_cached"]) == ("files", 1, 10)
    fresh = _harvest(small_repo, cache=False)
    assert to_json(edited)["items"] == to_json(fresh)["items"]
    assert {k: v for k, v in s.items() if not k.startswith("files_") and k != "cache"} == {
        k: v for k, v in fresh.summary().items() if not k.startswith("files_") and k != "cache"
    }
    (small_repo / "torch/_dynamo/utils.py").unlink()  # a file with hits is gone
    assert (
        to_json(_harvest(small_repo, cache=cache))["items"]
        == to_json(_harvest(small_repo, cache=False))["items"]
    )
    # A new test file changes "a test file nearby" elsewhere: the whole tree again.
    (small_repo / "torch/autograd/test_graph.py").write_text("def test_graph():\n    pass\n")
    again = _harvest(small_repo, cache=cache)
    assert again.summary()["cache"] == "none"
    assert any("torch/autograd/test_graph.py" in r.why for i in again.items for r in i.reasons)


def test_edits_to_several_files_rank_as_a_fresh_harvest(small_repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _harvest(small_repo, cache=cache)
    conv = small_repo / "torch/nn/modules/conv.py"
    # Ties and near-ties with comments elsewhere: the same words, other lengths.
    conv.write_text(
        conv.read_text()
        + "# TODO: remove this\n# TODO(someone): remove this\n# FIXME: investigate why?\n"
    )
    other = next(
        p for p in sorted(small_repo.rglob("*.py")) if "TODO" in p.read_text() and p != conv
    )
    other.write_text(other.read_text().replace("TODO", "NOTE", 1))
    (small_repo / "torch/new_module.py").write_text("# TODO: remove this\nx = 1\n")
    edited = _harvest(small_repo, cache=cache)
    assert edited.summary()["cache"] == "files"
    fresh = _harvest(small_repo, cache=False)
    assert to_json(edited)["items"] == to_json(fresh)["items"]
    again = _harvest(small_repo, cache=cache)  # what the edit run saved
    assert again.summary()["cache"] == "tree"
    assert to_json(again)["items"] == to_json(fresh)["items"]


def test_a_cache_file_that_does_not_validate_is_rebuilt(small_repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _harvest(small_repo, cache=cache)
    (stored,) = cache.glob("tree-*.json")
    good = stored.read_bytes()
    top, body = good.split(b"\n", 1)
    line, attachment = body.split(b"\n", 1)
    header = json.loads(top)
    data = json.loads(line)

    def resealed(attached: bytes = attachment, **changes: Any) -> bytes:
        # A body changed as a hand edit would, with its digest made to match:
        # what the header says must still be checked.
        raw = json.dumps({**data, **changes}).encode() + b"\n" + attached
        digest = f"{zlib.crc32(raw):08x}"
        return json.dumps({**header, DIGEST_KEY: digest}).encode() + b"\n" + raw

    first_file = data["files"][0]

    broken: list[bytes] = [
        b"not json {",
        b"[1, 2]",
        top,  # the header alone (a torn write)
        top + b"\n" + body[: len(body) // 2],  # half the body
        # Valid JSON whose values are not what was written (a hand edit, a
        # half-synced home): one comment's words changed.
        top + b"\n" + body.replace(b"TODO", b"T0D0", 1),
        json.dumps({**header, "changed": {"a.py": "yesterday"}}).encode() + b"\n" + body,
        json.dumps({**header, "version": 2}).encode() + b"\n" + body,
        json.dumps({**header, "root": "/elsewhere"}).encode() + b"\n" + body,
        resealed(order=data["order"][:-1]),
        resealed(order=[0] * len(data["order"])),
        resealed(linking=[len(data["order"])]),
        resealed(files=[["x.py", "many"]]),
        resealed(counts={}),
        resealed(linked=data["linked"][:-1]),
        # The rows of the files are not where the body says they are.
        resealed(attachment[:-1]),
        resealed(attachment + b" "),
        resealed(files=[[*first_file[:7], first_file[7] + 1, first_file[8]], *data["files"][1:]]),
    ]
    for garbage in broken:
        stored.write_bytes(garbage)
        again = _harvest(small_repo, cache=cache)
        assert again.summary()["cache"] == "none", garbage[:80]
        assert [i.id for i in again.items] == [i.id for i in first.items]
    assert _harvest(small_repo, cache=cache).summary()["cache"] == "tree"


def test_the_cached_result_keeps_the_ranking_and_every_field(
    small_repo: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    fresh = _harvest(small_repo, cache=cache, limit=0)
    warm = _harvest(small_repo, cache=cache, limit=0)
    assert warm.summary()["cache"] == "tree"
    assert to_json(warm)["items"] == to_json(fresh)["items"]

    def counts(r: hv.HarvestResult) -> dict[str, Any]:
        return {k: v for k, v in r.summary().items() if not k.startswith("files_") and k != "cache"}

    assert counts(warm) == counts(fresh)


# --------------------------------------------------------------------------
# CLI: json, markdown, show


def _workspace(tmp_path: Path, repo: Path, *, reference: bool) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    ws_mod.save(
        ws_mod.Workspace(
            root=root,
            torch_version="2.13.0+cpu",
            commit=COMMIT,
            commit_kind="release",
            build_prefix="/__w/pytorch/pytorch",
            python=sys.executable,
            checkout=os.path.relpath(repo, root),
            checkout_kind=ws_mod.REFERENCE if reference else ws_mod.CLONE,
        )
    )
    return root


def test_cli_json_markdown_and_show(small_repo: Path, tmp_path: Path) -> None:
    ws_root = _workspace(tmp_path, small_repo, reference=True)
    result = _onboard("harvest", "--json", "--python-only", "--limit", "2", cwd=ws_root)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["tree"] == "reference" and data["commit"] == COMMIT
    assert len(data["items"]) == 2 and data["summary"]["matched"] == 7
    first = data["items"][0]
    assert first["python_only"] and first["reasons"] and first["score"] == 6
    assert first["url"] == (
        f"https://github.com/pytorch/pytorch/blob/{COMMIT}/torch/nn/modules/conv.py#L5"
    )
    assert any("single commit" in n for n in data["notes"])  # blame cannot help here
    assert sum("GITHUB_TOKEN" in n for n in data["notes"]) == 1  # one line about GitHub

    md = _onboard("harvest", "--markdown", "--limit", "3", cwd=ws_root)
    assert md.returncode == 0, md.stderr
    assert md.stdout.startswith("# First tasks from TODO/FIXME comments")
    assert f"`{first['id']}`" in md.stdout and "- +3 Python-only" in md.stdout
    # `--md` is the name every command uses; `--markdown` (harvest's own) still works.
    assert _onboard("harvest", "--md", "--limit", "3", cwd=ws_root).stdout == md.stdout

    table = _onboard("harvest", "--limit", "3", cwd=ws_root, env={"COLUMNS": "160"})
    assert (
        table.returncode == 0
        and first["id"] in table.stdout
        and "skipped 3 in vendored" in table.stdout
    )

    shown = _onboard("harvest", "show", first["id"][:6], "--json", cwd=ws_root)
    assert shown.returncode == 0, shown.stderr
    detail = json.loads(shown.stdout)
    assert detail["item"]["id"] == first["id"]
    lines = detail["context"]["lines"]
    start = detail["context"]["start_line"]
    assert lines[first["line"] - start].strip().startswith("# TODO: remove this shim")
    assert detail["links"]["source"] == first["url"]
    assert any("needs a full checkout" in n for n in detail["notes"])

    text = _onboard("harvest", "show", first["id"], cwd=ws_root)
    assert (
        text.returncode == 0
        and "TODO: remove this shim" in text.stdout
        and first["url"] in text.stdout
    )

    missing = _onboard("harvest", "show", "abcdef0123", cwd=ws_root)
    assert missing.returncode == 1 and "onboard harvest" in missing.stderr
    assert "Traceback" not in missing.stderr
    bad = _onboard("harvest", "show", "zz", cwd=ws_root)
    assert bad.returncode == 2


def test_the_cli_writes_a_changed_result_after_answering(small_repo: Path, tmp_path: Path) -> None:
    """The command prints first and a detached copy of it writes the cache: the
    answer is whole at once, the next run finds the new state cached."""
    ws_root = _workspace(tmp_path, small_repo, reference=True)
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}

    def run() -> dict[str, Any]:
        """One run, answered, and its detached copy done writing."""
        copies = Holders()
        result = _onboard(
            "harvest", "--json", "--limit", "0", "--offline", cwd=ws_root, env=env, copies=copies
        )
        copies.wait("the copy that writes the cache")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    first = run()
    assert first["summary"]["cache"] == "none"
    cached = run()
    assert cached["summary"]["cache"] == "tree" and cached["items"] == first["items"]
    conv = small_repo / "torch/nn/modules/conv.py"
    conv.write_text(conv.read_text() + "# TODO: drop the old padding mode\n")
    edited = run()
    assert edited["summary"]["cache"] == "files"
    assert any("old padding mode" in i["text"] for i in edited["items"])
    cached = run()
    assert cached["summary"]["cache"] == "tree" and cached["items"] == edited["items"]
    assert not list((tmp_path / "xdg").rglob("*.tmp*"))  # no half-written file left


def test_a_reader_that_stops_early_still_leaves_the_result_cached(
    small_repo: Path, tmp_path: Path
) -> None:
    """`onboard harvest | head -1`: the pipe closes under the answer, which is a
    normal end (exit 0), and the result is still written for the next run. (`true`
    reads nothing and exits at once: the write always finds the pipe closed.)"""
    ws_root = _workspace(tmp_path, small_repo, reference=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    shell = f"{sys.executable} -m onboard harvest --offline --limit 0 --markdown | true"
    copies = Holders()  # onboard and the copy it detaches to write the cache hold it
    head = subprocess.run(
        ["bash", "-o", "pipefail", "-c", shell], cwd=ws_root, env=env, capture_output=True,
        text=True, timeout=300, pass_fds=(copies.fd,),
    )  # fmt: skip
    copies.wait("the copy that writes the cache")
    assert head.returncode == 0, head.stderr
    assert head.stdout == "" and "Traceback" not in head.stderr
    # the file itself: a harvest run would write it too
    assert list((tmp_path / "xdg").rglob("tree-*.json")), "the result was not cached"
    again = _onboard("harvest", "--json", "--offline", cwd=ws_root, env=env)
    assert json.loads(again.stdout)["summary"]["cache"] == "tree"


def test_cli_without_a_tree_is_one_paragraph(tmp_path: Path) -> None:
    empty = tmp_path / "nothing"
    empty.mkdir()
    result = _onboard("harvest", cwd=empty, env={"GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert result.returncode == 1
    assert "onboard setup DIR --from-wheel" in result.stderr and "Traceback" not in result.stderr


# --------------------------------------------------------------------------
# Blame: batched, only for what is shown


def test_blame_ages_batched_per_file(small_repo: Path, tmp_path: Path) -> None:
    conv = small_repo / "torch/nn/modules/conv.py"
    conv.write_text(conv.read_text() + "# TODO: drop the later helper\n")
    env = {
        "GIT_AUTHOR_DATE": "2025-06-01T00:00:00+00:00",
        "GIT_COMMITTER_DATE": "2025-06-01T00:00:00+00:00",
    }
    subprocess.run(["git", "-C", str(small_repo), "commit", "-qam", "Later"], check=True,
                   env={**os.environ, **env})  # fmt: skip
    later = _git(small_repo, "rev-parse", "HEAD")
    result = _harvest(small_repo, python_only=True, paths=["torch/nn"])
    hist = enrich.history(small_repo, is_reference=False)
    assert hist.note is None and hist.commits == 2
    calls = enrich.blame(
        small_repo, result.items, hist, tmp_path / "c", now=1_767_225_600
    )  # 2026-01-01
    assert calls == 1  # three lines of one file: one `git blame -L .. -L ..`
    by_text = {i.text: i.blame for i in result.items}
    assert by_text["TODO: drop the later helper"]["commit"] == later
    assert by_text["TODO: drop the later helper"]["age_days"] == 214
    assert by_text["TODO(alice): rename the helper"]["commit"] != later
    # cached per commit: no second git call
    for item in result.items:
        item.blame = None
    assert enrich.blame(small_repo, result.items, hist, tmp_path / "c", now=1_767_225_600) == 0
    assert all(i.blame for i in result.items)


def test_history_is_kept_per_head_and_follows_the_shallow_marker(
    small_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm run asks git nothing about history: HEAD comes from `git status`,
    shallowness from git's own marker file, and HEAD's parent count is kept."""
    from onboard import git

    subprocess.run(["git", "-C", str(small_repo), "commit", "-q", "--allow-empty", "-m", "2nd"],
                   check=True)  # fmt: skip
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{small_repo}", str(clone)],
                   check=True)  # fmt: skip
    head = _git(clone, "rev-parse", "HEAD")
    cache = tmp_path / "c"
    asked: list[tuple[Any, ...]] = []
    real = git.core.git
    monkeypatch.setattr(git.core, "git", lambda *a, **k: asked.append(a) or real(*a, **k))

    shallow = enrich.history(clone, is_reference=False, head=head, cache=cache)
    assert (shallow.commit, shallow.commits, shallow.shallow) == (head, 1, True)
    assert shallow.note is not None and "shallow clone" in shallow.note and asked
    asked.clear()
    assert enrich.history(clone, is_reference=False, head=head, cache=cache) == shallow
    assert asked == []  # kept for this HEAD
    subprocess.run(["git", "-C", str(clone), "fetch", "-q", "--unshallow"], check=True)
    full = enrich.history(clone, is_reference=False, head=head, cache=cache)
    assert (full.commits, full.shallow, full.note) == (2, False, None) and asked
    # Without a HEAD from `git status`, git is asked, as before.
    assert enrich.history(clone, is_reference=False) == full


def test_blame_on_the_seeded_fixture_repo(pytorch_repo: Any) -> None:
    result = hv.harvest(hv.HarvestRequest(repo=str(pytorch_repo.path), limit=5, python_only=True))
    assert result.items and all(
        i.blame and i.blame["commit"] == pytorch_repo.commits[0] for i in result.items
    )
    assert not any("single commit" in n for n in result.notes)


# --------------------------------------------------------------------------
# GitHub enrichment against the loopback server


@pytest.fixture
def api() -> Any:
    with GitHubAPI(token=TOKEN) as server:
        yield server


ISSUE_TREE = {
    "torch/a.py": "# TODO(#1111): rename the helper\n",
    "torch/b.py": "# TODO: see https://github.com/pytorch/pytorch/issues/2222 remove it\n",
    "torch/c.py": "# TODO(#3333): rename another helper\n",
    "torch/d.py": "# TODO: remove the old alias\n",
}


def test_linked_issues_rank_with_state_and_labels(
    tmp_path: Path, api: GitHubAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _make_repo(tmp_path / "pt", ISSUE_TREE)
    api.add_issue(1111, "Rename helper", labels=["good first issue", "module: nn"])
    api.add_issue(2222, "Old", state="closed")
    api.add_issue(3333, "Plain open issue")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    result = hv.harvest(
        hv.HarvestRequest(repo=str(repo), api_url=api.url, limit=0, cache=tmp_path / "cache")
    )
    by_path = {i.path: i for i in result.items}
    good = by_path["torch/a.py"]
    assert any(
        r.why == '#1111 is open and labelled "good first issue"' and r.points == 3
        for r in good.reasons
    )
    assert good.linked[0]["labels"] == ["good first issue", "module: nn"]
    stale = by_path["torch/b.py"]
    assert any("#2222 is closed: the TODO may be stale" in r.why for r in stale.reasons)
    assert result.items[0].path == "torch/a.py"  # ranked up past the unlinked one
    assert by_path["torch/c.py"].score < good.score
    assert not result.notes or all("GitHub" not in n for n in result.notes)
    gets = api.calls("GET", r"/issues/\d+$")
    assert sorted(r.path for r in gets) == [
        f"/repos/pytorch/pytorch/issues/{n}" for n in (1111, 2222, 3333)
    ]
    assert all(
        r.headers.get("Authorization") in (f"token {TOKEN}", f"Bearer {TOKEN}") for r in gets
    )
    # cached: a second run asks nothing
    hv.harvest(
        hv.HarvestRequest(repo=str(repo), api_url=api.url, limit=0, cache=tmp_path / "cache")
    )
    assert len(api.calls("GET", r"/issues/\d+$")) == 3


def test_issues_option_lists_newcomer_issues(
    tmp_path: Path, api: GitHubAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _make_repo(tmp_path / "pt", ISSUE_TREE)
    api.add_issue(5001, "Docs typo", labels=["good first issue"])
    api.add_issue(5002, "Small fix", labels=["actionable", "good first issue"])
    api.add_issue(5003, "Closed one", labels=["good first issue"], state="closed")
    api.add_issue(5004, "Needs design", labels=["triaged"])
    api.add_pull(5005, "octo:branch")
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    result = hv.harvest(
        hv.HarvestRequest(repo=str(repo), api_url=api.url, issues=True, cache=False)
    )
    assert [i["number"] for i in result.issues or []] == [5002, 5001]
    listed = api.calls("GET", r"/issues$")
    assert {r.query["labels"][0] for r in listed} == {"good first issue", "actionable"}
    out = _onboard("harvest", "--repo", str(repo), "--issues", "--api-url", api.url, "--json",
                   cwd=tmp_path, env={"GH_TOKEN": TOKEN})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert [i["number"] for i in json.loads(out.stdout)["issues"]] == [5002, 5001]
    assert TOKEN not in out.stdout + out.stderr


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("none", "no token (set GITHUB_TOKEN or GH_TOKEN"),
        ("bad-token", "GitHub rejected the token (401"),
        ("rate", "rate limit is used up"),
        ("offline", "Could not reach"),
        # 200 with a proxy's page or JSON of another shape: told, never used
        ("proxy-page", "gave an answer GitHub never sends"),
        ("odd-json", "gave an answer GitHub never sends"),
    ],
)
def test_without_github_one_line_and_results(
    tmp_path: Path, api: GitHubAPI, monkeypatch: pytest.MonkeyPatch, setup: str, expected: str
) -> None:
    repo = _make_repo(tmp_path / "pt", ISSUE_TREE)
    api.add_issue(1111, "Rename helper", labels=["good first issue"])
    url = api.url
    if setup != "none":
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN + "x" if setup == "bad-token" else TOKEN)
    if setup == "rate":
        api.fail_rate_limited()
    if setup == "proxy-page":
        api.answer_with("<html><body>Sign in to the proxy</body></html>")
    if setup == "odd-json":
        api.answer_with({"number": "1111", "items": []})
    if setup == "offline":
        url = closed_port_url().rsplit("/", 1)[0].replace("git://", "http://")
    out = _onboard("harvest", "--repo", str(repo), "--api-url", url, "--json", "--issues",
                   cwd=tmp_path, env=dict(os.environ))  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert len(data["items"]) == 4  # the results are there, without enrichment
    github_notes = [n for n in data["notes"] if n.startswith("GitHub")]
    assert len(github_notes) == 1, github_notes  # ONE line, for linked issues and --issues
    assert expected in github_notes[0] and "--issues listed nothing" in github_notes[0]
    assert all(not i["linked_issues"] for i in data["items"])
    assert TOKEN not in out.stdout + out.stderr
    plain = _onboard(
        "harvest", "--repo", str(repo), "--api-url", url, cwd=tmp_path, env=dict(os.environ)
    )
    assert plain.returncode == 0 and sum("GitHub" in ln for ln in plain.stdout.splitlines()) == 1


def test_an_issue_cache_of_the_wrong_shape_is_asked_again(
    tmp_path: Path, api: GitHubAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _make_repo(tmp_path / "pt", ISSUE_TREE)
    api.add_issue(1111, "Rename helper", labels=["good first issue"])
    cache = tmp_path / "cache"
    cache.mkdir()
    stale = {"1111": {"fetched_at": "yesterday", "issue": {"number": "1111"}}}
    (cache / "issues-pytorch-pytorch.json").write_text(json.dumps(stale))
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    result = hv.harvest(hv.HarvestRequest(repo=str(repo), api_url=api.url, limit=0, cache=cache))
    good = next(i for i in result.items if i.path == "torch/a.py")
    assert good.linked and good.linked[0]["labels"] == ["good first issue"]
    assert api.calls("GET", r"/issues/1111$")


def test_github_adapter_errors_never_show_the_token(api: GitHubAPI) -> None:
    from onboard.github.client import GitHubUnavailable
    from onboard.github.issues import GitHub

    api.fail_with(422, f"Validation Failed for {TOKEN}")
    with pytest.raises(GitHubUnavailable) as info:
        GitHub(TOKEN, api_url=api.url).issue(1)
    assert TOKEN not in info.value.paragraph() and "422" in info.value.paragraph()
    api.clear_failures()
    with pytest.raises(GitHubUnavailable, match="No GitHub token"):
        GitHub(None, api_url=api.url)


# --------------------------------------------------------------------------
# Trees built from the installed wheel, against an independent count
#
# The independent count (`_independent_count`) shares nothing with the
# harvester but the tag list: it walks EVERY file (no grep prefilter),
# counts Python COMMENT tokens from `tokenize` over each whole .py file, and
# for C/C++ blanks double-quoted strings with a plain regex, then counts the
# lines of `//` and `/* */` comments carrying a tag (no raw-string, char or
# continuation handling: that simplicity is why it is only expected to agree
# within a few percent). Vendored = under third_party/; generated = under
# build/ or a `generated/` folder or "@generated" in the first lines.

_TAG = re.compile(r"\b(TODO|FIXME|XXX|HACK)\b")
_C_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
_C_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _independent_count(root: Path) -> dict[str, int]:
    counts = {"own": 0, "vendored": 0, "generated": 0}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8", errors="replace")
            if name.endswith((".py", ".pyi")):
                try:
                    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
                except (tokenize.TokenError, SyntaxError):
                    continue
                n = sum(1 for t in toks if t.type == tokenize.COMMENT and _TAG.search(t.string))
            elif name.endswith((".h", ".hpp", ".cuh", ".c", ".cc", ".cpp", ".cu", ".inl")):
                blanked = _C_STRING.sub('""', text)
                n = sum(
                    1
                    for m in _C_COMMENT.finditer(blanked)
                    for line in m.group().split("\n")
                    if _TAG.search(line)
                )
            else:
                continue
            if rel.startswith("third_party/"):
                counts["vendored"] += n
            elif rel.startswith("build/") or "/generated/" in rel or "@generated" in text[:600]:
                counts["generated"] += n
            else:
                counts["own"] += n
    return counts


def _assert_close(mine: int, theirs: int, what: str, pct: float = 3.0, slack: int = 2) -> None:
    assert abs(mine - theirs) <= max(slack, theirs * pct / 100), f"{what}: {mine} vs {theirs}"


def _reference_subset(dest: Path) -> Path:
    """A reference-layout tree from a slice of the wheel: torch/nn, torch/optim,
    torch/autograd and torch/utils/data (Python), ATen/native and c10/util
    headers, and pybind11 + fmt as vendored headers under third_party/include."""
    torch_dir = find_torch_dir()
    include = torch_dir / "include"
    files: dict[str, Path] = {}
    for sub in ("nn", "optim", "autograd", "utils/data"):
        for path in (torch_dir / sub).rglob("*.py"):
            files[f"torch/{path.relative_to(torch_dir).as_posix()}"] = path
    for sub, dest_base in (("ATen/native", "aten/src/ATen/native"), ("c10/util", "c10/util")):
        for path in (include / sub).rglob("*.h"):
            files[f"{dest_base}/{path.relative_to(include / sub).as_posix()}"] = path
    for vendored in ("pybind11", "fmt"):
        for path in (include / vendored).rglob("*.h"):
            files[f"third_party/include/{path.relative_to(include).as_posix()}"] = path
    dest.mkdir(parents=True)
    for rel, src in files.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(src.read_bytes())
    _git(dest, "init", "-q", "-b", "reference")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "Reference tree (subset of the wheel)")
    return dest


def _check_against_independent(root: Path, result: hv.HarvestResult) -> None:
    theirs = _independent_count(root)
    s = result.summary()
    _assert_close(s["harvested"], theirs["own"], "harvested")
    _assert_close(s["skipped_vendored"], theirs["vendored"], "vendored skipped", pct=5)
    assert s["skipped_vendored"] > 0
    top = result.items[:20]
    assert len(top) == 20
    assert all(i.python_only and i.reasons for i in top)
    assert all(any(r.why.startswith("Python-only") for r in i.reasons) for i in top)


def _reference_items(root: Path) -> set[tuple[str, str, int, int, int, str]]:
    """Every harvested comment as the whole-file lexer (``harvest_reference``) finds
    it in the grep's files: (id, path, line, end_line, col, text). Python and C only:
    the files lexed whole (YAML, JavaScript, Jinja) have their own truths in
    tests/test_harvest_sweep.py."""
    cands = scan.find_candidates(root)
    out = set()
    for path, lines in cands.hits.items():
        if path.endswith(tags.WHOLE_FILE_SUFFIXES):
            continue
        source = (root / path).read_text(encoding="utf-8", errors="replace")
        if scan.vendored(path) or scan.generated_path(path) or scan.generated_header(source):
            continue
        comments, _ = harvest_reference.tagged_comments(path, source, lines[-1])
        seen: Counter[str] = Counter()
        for c in comments:
            occurrence = seen[forms.normalise(c.text)]
            seen[forms.normalise(c.text)] += 1
            iid = rank.stable_id(path, c.text, occurrence)
            out.add((iid, path, c.line, c.end_line, c.col, c.text))
    return out


def _assert_same_items_as_the_whole_file_lexer(root: Path, result: hv.HarvestResult) -> None:
    mine = {
        (i.id, i.path, i.line, i.end_line, i.col, i.text)
        for i in result.scan.items
        if not i.path.endswith(tags.WHOLE_FILE_SUFFIXES)
    }
    theirs = _reference_items(root)
    assert mine == theirs, (sorted(mine - theirs)[:5], sorted(theirs - mine)[:5])


def test_wheel_subset_counts_agree_with_an_independent_count(tmp_path: Path) -> None:
    root = _reference_subset(tmp_path / "reference")
    ws_root = _workspace(tmp_path, root, reference=True)
    result = hv.harvest(hv.HarvestRequest(workspace=str(ws_root), enrich_results=False))
    assert result.scan.target.kind == "reference"
    assert result.summary()["harvested"] > 100
    _check_against_independent(root, result)
    _assert_same_items_as_the_whole_file_lexer(root, result)
    again = _onboard("harvest", "--json", "--offline", cwd=ws_root)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["summary"]["harvested"] == result.summary()["harvested"]


@pytest.mark.slow
def test_whole_wheel_reference_tree(tmp_path: Path) -> None:
    from onboard.workflows import reference_tree as rt

    plan = rt.plan(find_torch_dir(), find_package_dir("torchgen"))
    root = tmp_path / "reference"
    rt.build(root, plan, torch_version="2.13.0+cpu", commit=COMMIT, version_txt="2.13.0")
    ws_root = _workspace(tmp_path, root, reference=True)
    result = hv.harvest(hv.HarvestRequest(workspace=str(ws_root)))
    s = result.summary()
    # docs/pytorch-facts.md: ~3,300 tagged comments, ~65 in vendored headers.
    assert 2500 < s["harvested"] < 4500 and 30 < s["skipped_vendored"] < 150
    _check_against_independent(root, result)
    # The same items, ids and joined texts as the whole-file lexer (tokenize) finds.
    _assert_same_items_as_the_whole_file_lexer(root, result)
    shown = hv.show(hv.ShowRequest(item_id=result.items[0].id, workspace=str(ws_root)))
    assert shown.item.id == result.items[0].id and shown.context


def test_vendored_and_generated_rules() -> None:
    assert scan.vendored("third_party/fmt/include/fmt/core.h")
    assert scan.vendored("torch/include/pybind11/pybind11.h")
    assert not scan.vendored("torch/include/ATen/core/Tensor.h")
    assert not scan.vendored("torch/onnx/utils.py") and not scan.vendored(
        "torch/utils/benchmark/x.py"
    )
    assert scan.generated_path("build/aten/src/ATen/ops/add.h")
    assert scan.generated_path("torch/csrc/autograd/generated/Functions.h")
    assert not scan.generated_path("torch/nn/modules/conv.py")
    assert scan.generated_header("// @generated from tools/x.py\n#pragma once\n")
    assert not scan.generated_header("x = 1\n" * 50 + "# @generated later\n")


def test_harvest_errors(tmp_path: Path) -> None:
    with pytest.raises(BadInput):
        hv.harvest(hv.HarvestRequest(repo=str(tmp_path / "missing")))
    with pytest.raises(BadInput):
        hv.harvest(hv.HarvestRequest(repo=str(tmp_path), limit=-1))
    repo = _make_repo(tmp_path / "r", {"torch/a.py": "# TODO: x y z\n"})
    with pytest.raises(OnboardError, match="No harvested comment has the id"):
        hv.show(hv.ShowRequest(item_id="0000aaaa", repo=str(repo)))


# --------------------------------------------------------------------------
# QA regressions


def test_bad_ids_searcher_and_api_url_are_bad_input(tmp_path: Path) -> None:
    repo = _make_repo(tmp_path / "r", {"torch/a.py": "# TODO: x y z\n"})
    with pytest.raises(BadInput) as info:
        hv.show(hv.ShowRequest(item_id="zz", repo=str(repo)))
    assert "onboard harvest" in (info.value.next_step or "")  # says where ids come from
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("# TODO: x\n")
    # --searcher git on a folder that is not a repository: not "ripgrep is not installed".
    with pytest.raises(BadInput, match="--searcher git") as searched:
        hv.harvest(hv.HarvestRequest(repo=str(plain), searcher="git"))
    assert "ripgrep is not installed" not in searched.value.message
    # An --api-url PyGithub cannot parse used to crash (exit 3) once a token was set.
    ran = _onboard(
        "harvest", "--api-url", "not-a-url", "--json", "--repo", str(repo), cwd=tmp_path,
        env={"GITHUB_TOKEN": "ghp_" + "x" * 36},
    )  # fmt: skip
    assert ran.returncode == 2, ran.stderr
    assert "--api-url" in json.loads(ran.stdout)["error"]["message"]


def test_a_blame_cache_of_the_wrong_shape_is_asked_again(small_repo: Path, tmp_path: Path) -> None:
    _git(small_repo, "commit", "-q", "--allow-empty", "-m", "A second commit (blame has history)")
    cache = tmp_path / "cache"
    first = _harvest(small_repo, cache=cache, enrich_results=True, api_url="http://127.0.0.1:9")
    blames = sorted(cache.glob("blame-*.json"))
    assert blames
    for path in blames:
        data = json.loads(path.read_text())
        data["lines"] = {k: "2025-01-01" for k in data["lines"]}
        path.write_text(json.dumps(data))
    again = _harvest(small_repo, cache=cache, enrich_results=True, api_url="http://127.0.0.1:9")
    assert [i.blame for i in again.items] == [i.blame for i in first.items]
    assert all(isinstance(i.blame, dict) for i in again.items)


def test_onboards_own_todos_are_not_listed_and_local_files_get_no_link(
    small_repo: Path, tmp_path: Path
) -> None:
    # The workspace's installed commit is the checkout's first commit; a new-op branch
    # then adds a file (with the scaffold's own TODO and the author's) and edits another.
    root = _workspace(tmp_path, small_repo, reference=False)
    config = ws_mod.load(root)
    ws_mod.save(dataclasses.replace(config, commit=_git(small_repo, "rev-parse", "HEAD")))
    _git(small_repo, "switch", "-q", "-c", "onboard/new-op-my_frac")
    added = "aten/src/ATen/native/cpu/MyFracKernel.cpp"
    (small_repo / added).parent.mkdir(parents=True, exist_ok=True)
    (small_repo / added).write_text(
        "// TODO(onboard new-op): the scalar path (the identity for now).\n"
        "// TODO: vectorise the tail loop\n"
    )
    conv = small_repo / "torch/nn/modules/conv.py"
    conv.write_text("# a line on top moves the others\n" + conv.read_text())
    _git(small_repo, "add", "-A")
    _git(small_repo, "commit", "-q", "-m", "my_frac")
    result = hv.harvest(hv.HarvestRequest(workspace=str(root), limit=0, enrich_results=False))
    texts = [i.text for i in result.items]
    # The truth: what each file holds, read here; and which files upstream has.
    assert not [t for t in texts if "onboard new-op" in t]
    assert "TODO: vectorise the tail loop" in texts
    upstream = set(_git(small_repo, "ls-tree", "-r", "--name-only", "main").split())
    changed = set(_git(small_repo, "diff", "--name-only", "main", "HEAD").split())
    for item in result.items:
        if item.path not in upstream:
            assert item.url is None, item.path
        elif item.path in changed:
            assert item.url is not None and "#L" not in item.url, item.path
        else:
            assert item.url is not None and item.url.endswith(f"#L{item.line}"), item.path
    assert {i.path for i in result.items} >= {added, "torch/nn/modules/conv.py"}
