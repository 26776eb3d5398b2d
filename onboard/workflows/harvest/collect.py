"""Every harvested comment of a tree, ranked, and kept per tree state.

One collection: grep for candidate lines -> lex the lines that matter in the
files with hits (``scan``, ``lexer``) -> skip vendored and generated code,
counting what was skipped -> parse each comment's form and score it
(``forms``, ``rank``).

The result is cached per tree state: the HEAD commit plus the size and mtime
of every changed or untracked file (``git status``, which reads git's own
stat cache). The same state again: nothing is grepped or lexed. The same
HEAD with other changes (an edit): only the files whose state differs are
grepped and lexed again, the rest comes from the cache. Anything else (a new
commit, no git, an explicit ``--searcher``, ``--no-cache``): the whole tree.
Files git ignores are not watched: an edit there shows after the next commit
or with ``--no-cache``.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import git, proc
from onboard.cache import Row, Sealed, cache_dir, read_sealed, sha1_hex, write_sealed
from onboard.git.status import TreeState
from onboard.report import Reporter
from onboard.workflows.harvest import forms, rank
from onboard.workflows.harvest.rank import Item
from onboard.workflows.harvest.stored import Counts, StoredItems, counts_of
from onboard.workflows.harvest.tags import language
from onboard.workflows.harvest.target import Target

# scan (the grep and the lexer) is imported where the tree is searched: a warm
# run reads the whole result from the cache and needs none of it.
if TYPE_CHECKING:
    from onboard.workflows.harvest import scan

# The cached result's format. Bump when lexing, parsing or scoring changes.
SCAN_VERSION = 7
# Past this many changed files, one pass over the whole tree is as quick.
INCREMENTAL_MAX_FILES = 200

OWN = "own"
VENDORED = "vendored"
GENERATED = "generated"


@dataclass
class FileResult:
    """What one file with grep hits contributes."""

    path: str
    hits: int  # candidate lines
    non_comment: int  # hits outside any comment (own files only)
    kind: str  # own / vendored / generated
    comments: int  # tagged comments (harvested, or skipped when not own)
    unterminated: bool  # a string runs to the end of the file
    items: list[Item]  # the harvested ones (own files only)


@dataclass
class Scan:
    target: Target
    searcher: str
    files: dict[str, FileResult]  # by path, sorted
    items: Sequence[Item]  # every harvested comment, ranked (built when used: StoredItems)
    files_lexed: int
    files_cached: int
    seconds: dict[str, float]
    cache: str = "none"  # "tree" (whole result), "files" (changed files redone), "none"
    # The totals (tags, kinds, Python items) of a cached result: no item built for them.
    stored_counts: Counts | None = None
    head: str | None = None  # the HEAD commit `git status` gave (None: not asked)
    # path -> what happened to it between the grep and its read (``scan.REREAD``, ...)
    changed_during_run: dict[str, str] = field(default_factory=dict)

    def counts(self) -> Counts:
        """Items per tag, per kind, and how many are in Python files."""
        return self.stored_counts if self.stored_counts is not None else counts_of(self.items)

    def materialize(self) -> None:
        """Every item built and in its file's list (a cached result builds them when
        used): for what needs them all, such as the save."""
        if isinstance(self.items, StoredItems):
            for path, items in self.items.by_file().items():
                if path in self.files and not self.files[path].items:
                    self.files[path].items = items
            self.items = list(self.items)

    def changed_note(self) -> str | None:
        """One line for the files that changed while harvest read the tree (None: none)."""
        changed = self.changed_during_run
        if not changed:
            return None
        shown = "; ".join(f"{path} {what}" for path, what in list(changed.items())[:5])
        more = f"; and {len(changed) - 5} more" if len(changed) > 5 else ""
        return (
            f"{len(changed)} file(s) changed while harvest read the tree (a checkout or an "
            f"edit elsewhere?): {shown}{more}. Run `onboard harvest` again for a settled tree."
        )

    def _sum(self, what: Callable[[FileResult], int]) -> int:
        return sum(what(f) for f in self.files.values())

    @property
    def candidate_lines(self) -> int:
        return self._sum(lambda f: f.hits)

    @property
    def files_with_hits(self) -> int:
        return len(self.files)

    @property
    def non_comment_hits(self) -> int:
        return self._sum(lambda f: f.non_comment)

    @property
    def skipped_vendored(self) -> int:
        return self._sum(lambda f: f.comments if f.kind == VENDORED else 0)

    @property
    def skipped_generated(self) -> int:
        return self._sum(lambda f: f.comments if f.kind == GENERATED else 0)

    @property
    def skipped_vendored_files(self) -> int:
        return self._sum(lambda f: f.kind == VENDORED)

    @property
    def skipped_generated_files(self) -> int:
        return self._sum(lambda f: f.kind == GENERATED)

    @property
    def unterminated_files(self) -> list[str]:
        return [f.path for f in self.files.values() if f.unterminated]


def cache_folder(cache: Path | None | bool) -> Path | None:
    """True: the user's cache (XDG_CACHE_HOME/onboard/harvest); a path: that folder;
    False or None: no cache."""
    if cache is True:
        return cache_dir("harvest")
    if cache is False or cache is None:
        return None
    return Path(cache)


def gather(
    target: Target,
    *,
    searcher: str,
    cache: Path | None,
    reporter: Reporter,
    save_in_background: bool = False,
) -> Scan:
    """Every harvested comment of the tree, ranked (from the cache when it holds).

    ``save_in_background``: a changed result is written to the cache by a detached
    copy of this process once this run has answered (``proc.detach_after_run``).
    """

    def save(result: Scan, state: TreeState) -> None:
        assert cache is not None
        if save_in_background:
            proc.detach_after_run(lambda: _save(result, cache, state))
        else:
            _save(result, cache, state)

    t0 = time.monotonic()
    state: TreeState | None = None
    if cache is not None and searcher == "auto":  # an explicit --searcher means: run that one
        # `git status` runs in its own process while the stored result is read
        # (the usual case is a hit, and the two overlap); whether that result is
        # of this HEAD is checked once git answers.
        pending = git.status.start_tree_state(target.root)
        try:
            sealed = read_sealed(_cache_file(target, cache), HEADER_SHAPE)
            stored = _stored(target, sealed) if sealed is not None else None
            state = pending.result()
        finally:
            pending.stop()  # (nothing to stop once it answered)
        if state is not None and stored is not None and stored[0].head == state.head:
            result = _reuse(target, stored[1], stored[0], state, reporter)
            if result is not None:
                result.head = state.head
                result.seconds = {"tree_cache": round(time.monotonic() - t0, 3)}
                if result.cache == "files":
                    save(result, state)
                return result
    result = _whole_tree(target, searcher, reporter)
    if state is not None and cache is not None:
        result.head = state.head
        save(result, state)
    return result


# --------------------------------------------------------------------------
# The whole tree


def _whole_tree(target: Target, searcher: str, reporter: Reporter) -> Scan:
    t0 = time.monotonic()
    reporter.step(f"searching {target.root} for TODO/FIXME/XXX/HACK")
    from concurrent.futures import ThreadPoolExecutor

    from onboard.workflows.harvest import scan

    # The grep runs in its own process; index the tests meanwhile.
    with ThreadPoolExecutor(max_workers=1) as pool:
        grep = pool.submit(scan.find_candidates, target.root, searcher=searcher)
        tests = rank.NearbyTests(target.root)
        tests.by_name  # noqa: B018 (walks test/ now, while the grep runs)
        cands = grep.result()
    reporter.detail(f"{cands.searcher}: {cands.line_count} lines in {len(cands.hits)} files")
    with reporter.task("checking which hits are real comments", total=len(cands.hits)) as task:
        step = max(1, len(cands.hits) // 50)

        def progress(n: int, total: int, path: str) -> None:
            if n % step == 0 or n == total:
                task.update(completed=n, total=total, detail=path[-60:])

        lexed = scan.lex_files(target.root, cands, progress=progress)
    t_lex = time.monotonic()
    files = dict(sorted((fc.path, file_result(fc, tests)) for fc in lexed))
    items = _ranked(files.values())
    t_rank = time.monotonic()
    return Scan(
        target=target,
        searcher=cands.searcher,
        files=files,
        items=items,
        files_lexed=sum(not fc.skipped for fc in lexed),
        files_cached=0,
        seconds={
            "grep": round(cands.seconds, 3),
            "lex": round(t_lex - t0 - cands.seconds, 3),
            "rank": round(t_rank - t_lex, 3),
        },
        changed_during_run={fc.path: fc.changed for fc in lexed if fc.changed},
    )


def file_result(fc: scan.FileComments, tests: rank.NearbyTests) -> FileResult:
    """One file's comments as ranked items, or counted as skipped."""
    from onboard.workflows.harvest import scan

    path, comments, hit_lines = fc.path, fc.comments, fc.hit_lines
    if fc.skipped:  # gone since the grep: its hits still count
        return FileResult(path, len(hit_lines), 0, OWN, 0, False, [])
    if scan.vendored(path):
        return FileResult(path, len(hit_lines), 0, VENDORED, len(comments), fc.unterminated, [])
    if fc.generated or scan.generated_path(path):
        return FileResult(path, len(hit_lines), 0, GENERATED, len(comments), fc.unterminated, [])
    covered: set[int] = set()
    for c in comments:
        covered.update(range(c.line, c.end_line + 1))
    non_comment = sum(1 for ln in hit_lines if ln not in covered)
    seen: Counter[str] = Counter()
    lang = language(path) or "c++"
    module = rank.module_of(path)
    items = []
    for c in comments:
        if forms.onboards_own(c.text):
            continue  # a new-op scaffold's note to its author, not PyTorch's TODO
        norm = forms.normalise(c.text)
        occurrence = seen[norm]
        seen[norm] += 1
        item = Item(
            id=rank.stable_id(path, c.text, occurrence, normalised=norm),
            path=path,
            line=c.line,
            end_line=c.end_line,
            col=c.col,
            language=lang,
            module=module,
            text=c.text,
            form=forms.parse(c.text),
        )
        rank.score(item, tests)
        items.append(item)
    return FileResult(path, len(hit_lines), non_comment, OWN, len(comments), fc.unterminated, items)


def _ranked(files: Iterable[FileResult]) -> list[Item]:
    return sorted((i for f in files for i in f.items), key=rank.sort_key)


# --------------------------------------------------------------------------
# The tree state and the cached result


def _cache_file(target: Target, cache: Path) -> Path:
    return cache / f"tree-{sha1_hex(str(target.root).encode())[:16]}.json"


def _reuse(
    target: Target, scan_: Scan, old: TreeState, now: TreeState, reporter: Reporter
) -> Scan | None:
    """The stored result when the tree is as it was; redone for the changed files when
    few changed; None when the whole tree must be searched again."""
    gone = [-1]  # not in the list at all (a deleted file is in it, as None)
    dirty = sorted(
        p
        for p in old.changed.keys() | now.changed.keys()
        if old.changed.get(p, gone) != now.changed.get(p, gone)
    )
    if not dirty:
        scan_.cache = "tree"
        return scan_
    if len(dirty) > INCREMENTAL_MAX_FILES or any(_is_test_file(p) for p in dirty):
        # A test file added or removed changes the "a test file nearby" reason elsewhere.
        return None
    from onboard.workflows.harvest import scan

    t0 = time.monotonic()
    reporter.detail(f"{len(dirty)} changed file(s) since the cached result: searching those")
    # A dirty path is searched when it is a file now: changed (a size and mtime), or
    # gone from `git status` because it is as HEAD has it again (`git checkout --
    # FILE`, `git stash`). Only a path that is None (deleted) or absent and no file
    # (an untracked file removed) has no items.
    searched = [
        p
        for p in dirty
        if now.changed.get(p, gone) is not None and scan.eligible(p) and (target.root / p).is_file()
    ]
    cands = scan.find_candidates(target.root, searcher="auto", paths=searched, name=scan_.searcher)
    tests = rank.NearbyTests(target.root)
    redone = set(dirty)
    files = {p: f for p, f in scan_.files.items() if p not in redone}
    lexed = 0
    added: list[Item] = []
    changed: dict[str, str] = {}
    for path, lines in cands.hits.items():
        fc = scan.lex_file(target.root, path, lines, cands.starts.get(path))
        lexed += not fc.skipped
        if fc.changed:
            changed[path] = fc.changed
        files[path] = file_result(fc, tests)
        added += files[path].items
    files = dict(sorted(files.items()))
    # The other items keep their ranking (an edit changes only its file's items:
    # a test file added or removed took the whole-tree path above); the new ones
    # go where a stable sort of everything would put them.
    stored = scan_.items
    assert isinstance(stored, StoredItems) and scan_.stored_counts is not None  # from _stored
    tags, kinds, python = scan_.stored_counts
    old_tags, old_kinds, old_python = stored.counts_of_files(redone)
    new_tags, new_kinds, new_python = counts_of(added)
    return Scan(
        target=target,
        searcher=scan_.searcher,
        files=files,
        items=stored.updated(redone, added),
        stored_counts=(
            tags - old_tags + new_tags,
            kinds - old_kinds + new_kinds,
            python - old_python + new_python,
        ),
        files_lexed=lexed,
        files_cached=len(files) - lexed,
        seconds={"update": round(time.monotonic() - t0, 3)},
        cache="files",
        changed_during_run=changed,
    )


def _is_test_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.startswith("test_") or name.endswith("_test.py")


def _save(result: Scan, cache: Path, state: TreeState) -> None:
    result.materialize()
    reasons: dict[tuple[int, str], int] = {}  # most reasons repeat word for word: one table
    number: dict[int, int] = {}  # id(item) -> its place in the files' order

    def row(i: Item) -> list[Any]:
        number[id(i)] = len(number)
        why = [reasons.setdefault((r.points, r.why), len(reasons)) for r in i.reasons]
        return [i.id, i.line, i.end_line, i.col, i.text, list(i.form), why, i.test_file]

    files = []
    rows_of_files: list[bytes] = []
    at = 0
    for f in result.files.values():
        # Each file's items as JSON of their own, in the attachment: a warm run
        # parses only the files whose items it shows.
        rows = json.dumps([row(i) for i in f.items], separators=(",", ":")).encode()
        files.append(
            [f.path, f.hits, f.non_comment, f.kind, f.comments, f.unterminated, len(f.items), at,
             len(rows)]
        )  # fmt: skip
        rows_of_files.append(rows)
        at += len(rows)
    tags, kinds, python = result.counts()
    linking = [i for i in result.items if i.form.issues or i.form.pulls]
    header = {
        "version": SCAN_VERSION,
        "root": str(result.target.root),
        "head": state.head,
        "changed": state.changed,
        "searcher": result.searcher,
    }
    body = {
        "reasons": [list(r) for r in reasons],
        "files": files,
        # The ranking, the items that name an issue or a PR (the only ones whose
        # score can change without an edit) with the numbers they name, and the
        # totals: a warm run needs no item but those it shows.
        "order": [number[id(i)] for i in result.items],
        "linking": [number[id(i)] for i in linking],
        "linked": [[list(i.form.issues), list(i.form.pulls)] for i in linking],
        "counts": {"tags": dict(tags), "kinds": dict(kinds), "python": python},
    }
    write_sealed(_cache_file(result.target, cache), header, body, b"".join(rows_of_files))


# The header _save writes: checked on every read (the body is sealed by its digest).
HEADER_SHAPE = {
    "version": int,
    "root": str,
    "head": str,
    "changed": {str: (Row(int, int), None)},
    "searcher": str,
}


def _stored(target: Target, sealed: Sealed) -> tuple[TreeState, Scan] | None:
    """The cached result of this tree and the state it was of, or None (also when
    it does not validate)."""
    header = sealed.header
    if header["version"] != SCAN_VERSION or header["root"] != str(target.root):
        return None
    data = sealed.body()
    if type(data) is not dict:
        return None
    try:
        state = TreeState(header["head"], header["changed"])
        files: dict[str, FileResult] = {}
        parts: list[tuple[str, int, int, int]] = []
        for path, hits, non_comment, kind, comments, unterminated, count, at, size in data["files"]:
            files[path] = FileResult(path, hits, non_comment, kind, comments, unterminated, [])
            parts.append((path, count, at, size))
        items = StoredItems(
            parts, data["order"], data["linking"], data["linked"], data["reasons"],
            sealed.attachment,
        )  # fmt: skip
        counts = data["counts"]
        scan_ = Scan(
            target=target,
            searcher=header["searcher"],
            files=files,
            items=items,
            files_lexed=0,
            files_cached=len(files),
            seconds={},
            stored_counts=(Counter(counts["tags"]), Counter(counts["kinds"]), counts["python"]),
        )
        return state, scan_
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return None
