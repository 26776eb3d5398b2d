"""`onboard harvest` over a tree that changes under it (a `git checkout` in another
terminal): a file that shrank, vanished or became a folder between the grep and
its read is read again or skipped, with a note, and the run always ends."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onboard.jsonable import to_json
from onboard.workflows import harvest as hv
from onboard.workflows.harvest import scan

# Long enough that the grep's offsets of the last hits lie past the end of the short version.
LONG = "".join(f"x{i} = {i}\n" for i in range(60)) + "# TODO: far down\ny = 1  # FIXME: last\n"
SHORT = "# HACK: the only one left\n"
# The truth for SHORT, from Python's own tokenizer: one comment, on line 1.
SHORT_TAGGED = ["HACK: the only one left"]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "pytorch"
    (root / "torch").mkdir(parents=True)
    (root / "torch" / "long.py").write_text(LONG, encoding="utf-8")
    (root / "torch" / "kept.py").write_text("# TODO: stays put\n", encoding="utf-8")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "tree")
    return root


def _ends(work: Callable[[], Any]) -> Any:
    """``work()``'s value; fails (instead of spinning for ever) when it does not end.
    The bound is for a hang, not a speed: the work takes milliseconds."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(work()), daemon=True)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "the read of a file that changed under it never ended"
    return out[0]


def _shrink(path: Path) -> None:
    path.write_text(SHORT, encoding="utf-8")


def _vanish(path: Path) -> None:
    path.unlink()


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def test_the_skimmer_ends_on_hits_past_the_end_of_the_data() -> None:
    # In a child: a skimmer that spins would take this test process with it.
    code = (
        "from onboard.workflows.harvest import lexer\n"
        "print(lexer.comments_on_lines('a.py', b'# HACK: x\\n', [(1, 0), (62, 900)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "HACK: x" in done.stdout


@pytest.mark.parametrize("searcher", ["rg", "git"])
def test_a_file_that_shrank_after_the_grep_is_read_again(repo: Path, searcher: str) -> None:
    cands = scan.find_candidates(repo, searcher=searcher)
    assert len(cands.hits["torch/long.py"]) == 2
    _shrink(repo / "torch" / "long.py")
    lexed = {fc.path: fc for fc in _ends(lambda: scan.lex_files(repo, cands))}
    fc = lexed["torch/long.py"]
    assert [c.text for c in fc.comments] == SHORT_TAGGED
    assert [c.line for c in fc.comments] == [1]
    assert fc.changed == scan.REREAD
    assert fc.hit_lines == (1,)
    assert lexed["torch/kept.py"].changed == ""


@pytest.mark.parametrize(("change", "what"), [(_vanish, scan.VANISHED), (_folder, scan.NOT_A_FILE)])
def test_a_file_that_vanished_or_became_a_folder_is_skipped(
    repo: Path, change: Callable[[Path], None], what: str
) -> None:
    cands = scan.find_candidates(repo, searcher="rg")
    change(repo / "torch" / "long.py")
    lexed = {fc.path: fc for fc in _ends(lambda: scan.lex_files(repo, cands))}
    assert lexed["torch/long.py"].changed == what
    assert lexed["torch/long.py"].comments == ()


@pytest.mark.parametrize(
    ("change", "word"), [(_shrink, "read again"), (_vanish, "vanished"), (_folder, "folder")]
)
def test_harvest_notes_each_file_that_changed_under_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch, change: Callable[[Path], None], word: str
) -> None:
    grep = scan.find_candidates

    def grep_then_checkout(*args: Any, **kwargs: Any) -> scan.Candidates:
        found = grep(*args, **kwargs)
        change(repo / "torch" / "long.py")  # another terminal, between the grep and the read
        return found

    monkeypatch.setattr(scan, "find_candidates", grep_then_checkout)
    result = _ends(
        lambda: hv.harvest(
            hv.HarvestRequest(repo=str(repo), limit=0, enrich_results=False, cache=False)
        )
    )
    data = to_json(result)
    changed = data["summary"]["changed_during_run"]
    assert list(changed) == ["torch/long.py"] and word in changed["torch/long.py"]
    assert any("torch/long.py" in n and word in n for n in data["notes"])
    texts = sorted(i.text for i in result.items)
    expected = sorted(["TODO: stays put", *(SHORT_TAGGED if change is _shrink else [])])
    assert texts == expected


def test_an_unchanged_tree_has_no_such_note(repo: Path) -> None:
    result = hv.harvest(
        hv.HarvestRequest(repo=str(repo), limit=0, enrich_results=False, cache=False)
    )
    assert to_json(result)["summary"]["changed_during_run"] == {}
    assert not result.notes


@pytest.mark.parametrize("change", [_vanish, _folder])
def test_show_of_a_file_that_changed_since_the_search_is_one_paragraph(
    repo: Path, monkeypatch: pytest.MonkeyPatch, change: Callable[[Path], None]
) -> None:
    from onboard.errors import OnboardError
    from onboard.workflows.harvest import collect

    item = next(
        i
        for i in hv.harvest(
            hv.HarvestRequest(repo=str(repo), limit=0, enrich_results=False, cache=False)
        ).items
        if i.path == "torch/long.py"
    )
    gather = collect.gather

    def gather_then_checkout(*args: Any, **kwargs: Any) -> Any:
        found = gather(*args, **kwargs)
        change(repo / "torch" / "long.py")
        return found

    monkeypatch.setattr(collect, "gather", gather_then_checkout)
    with pytest.raises(OnboardError) as exc:
        hv.show(hv.ShowRequest(item_id=item.id, repo=str(repo), enrich_results=False, cache=False))
    assert "torch/long.py" in exc.value.message and exc.value.next_step
