"""One harvested comment, and the explainable score that orders them.

Every point an item gets comes with a sentence saying why, so a newcomer can
disagree with the ranking instead of trusting it. What makes a good first
task: a change that needs no C++ rebuild, opens with a small action (remove,
rename, add a test: the comment's intent, not a word anywhere in it), is
settled (no "investigate", "not sure", question) and waits for nothing else,
has a test next to it to prove the change, and belongs to nobody in
particular (a ``TODO(name)`` is someone's plan: ask them first).
``FIXME``/``HACK`` in core code usually guards something subtle. Comments
naming one issue are one task: ``filters.Filters.first`` shows the best of them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard.cache import sha1_hex
from onboard.jsonable import spec
from onboard.workflows.harvest import forms

# Small, local actions: the comment says what to do, and it is little. Matched at
# the comment's intent (its first words, ``intent``), never anywhere in it: in
# "investigate how to remove this" the task is the investigation.
# (Matched against the lower-cased text: re.I makes these ~3x slower.)
_SMALL_RE = re.compile(
    r"(remove|delete|drop|rename|simplify|clean ?up|unused|dead code|typo|"
    r"add (?:a |some |more )?tests?|test (?:this|that)|type (?:hint|annotation)s?|annotate|"
    r"docstring|document|use \S+ instead|replace (?:this|with)|switch to|"
    r"move (?:this|it) (?:to|into)|inline)\b"
)
_SMALL_ANYWHERE_RE = re.compile(r"\b" + _SMALL_RE.pattern)
# Words before the action that do not change it ("please remove", "we should rename").
_FILLER_RE = re.compile(
    r"(?:(?:please|we|you|i|should|must|need|needs|have|has|to|let's|lets|eventually|"
    r"also|just|then|soon|first|probably|maybe|perhaps|can|could|will|would|might)\b[\s,]*)+"
)
# An opening condition: the action is the main clause's ("once X lands, remove Y").
_CONDITION_RE = re.compile(r"(?:when|once|after|until|if)\b")
# Not settled: what to do is still to be found out, wherever it is said.
_UNSURE_RE = re.compile(
    r"\b(investigate|figure out|not sure|unclear|unknown|maybe|perhaps|consider|"
    r"think about|see (?:if|whether)|look into)\b|\?"
)
# Waiting for another change ("remove this once X lands"): done only when that one is.
_WAITS_RE = re.compile(
    r"\b(?:once|until)\b|\b(?:when|after)\b[^.;]{0,80}?\b(?:is|are|gets?|lands?|landed|merged|"
    r"fixed|supports?|supported|implement\w*|available|ready|removed|deprecated|settled)\b"
    r"|\b(?:when|after) (?:https?://|#\d)"
)
# Open-ended wording: design work, performance.
_BIG_RE = re.compile(
    r"\b(refactor\w*|redesign|rewrite|re-?architect|implement\w*|support (?:for )?|"
    r"performance|perf|optimi[sz]\w*|properly|in general|generali[sz]e)\b"
)


def intent(body: str) -> re.Match[str] | None:
    """The small action a comment opens with (its words lower-cased), if any: the
    first words after fillers; after an opening condition, those of the main clause
    (after its comma, else the first small action in it)."""
    words = body.lower().lstrip(" :-,.")
    filler = _FILLER_RE.match(words)
    at = filler.end() if filler else 0
    if _CONDITION_RE.match(words, at):
        comma = words.find(",", at)
        if comma < 0:
            return _SMALL_ANYWHERE_RE.search(words, at)
        words, at = words[comma + 1 :].lstrip(), 0
        filler = _FILLER_RE.match(words)
        at = filler.end() if filler else 0
    return _SMALL_RE.match(words, at)


# Core code: the dispatcher, autograd, the compiler stack, codegen.
_CORE_PREFIXES = (
    "aten/", "c10/", "torch/csrc/", "torchgen/", "torch/_C/", "torch/autograd/",
    "torch/_dynamo/", "torch/_inductor/", "torch/fx/", "torch/_subclasses/",
    "torch/_functorch/", "torch/_higher_order_ops/", "torch/_prims", "torch/_refs/",
    "torch/_decomp/", "torch/_ops.py", "torch/_tensor.py", "torch/__init__.py",
    "torch/overrides.py", "torch/library.py",
)  # fmt: skip

PYTHON_ONLY = 3
NO_REBUILD = 1  # JavaScript, Jinja templates: no rebuild, but no Python test to prove it
SMALL = 2
OPEN_ENDED = -1
UNSURE = -2
WAITS = -1
TEST_NEARBY = 1
NO_OWNER = 1
OWNER = -1
LINKED_ISSUE = 1
INTERNAL_ID = -1
CORE_FIXME = -2
NO_TEXT = -2
LONG_TEXT = -1
NEEDS_REBUILD = -1
NEWCOMER_ISSUE = 3
CLOSED_ISSUE = 1

LONG_TEXT_CHARS = 300


@dataclass(frozen=True)
class Reason:
    points: int
    why: str


def _places(items: list[Item]) -> list[dict[str, object]]:
    return [{"id": i.id, "path": i.path, "line": i.line} for i in items]


@dataclass
class Item:
    """A tagged comment of the tree. JSON keys: its fields (not col; the form's parts,
    python_only and score after them; linked as linked_issues, same_issue as {id,
    path, line})."""

    id: str
    path: str
    line: int
    end_line: int
    col: int = field(metadata=spec(omit=True))
    language: str  # python / c++ / cuda / objc++
    module: str  # dotted: torch.nn.modules.conv, aten.src.ATen.native.Foo
    text: str  # the whole comment, continuation lines joined
    form: forms.Form = field(metadata=spec(omit=True))  # its parts are the item's keys
    reasons: list[Reason] = field(default_factory=list)
    test_file: str | None = None
    url: str | None = None
    blame: dict[str, Any] | None = None
    # enriched issues
    linked: list[dict[str, Any]] = field(default_factory=list, metadata=spec(key="linked_issues"))
    # Lower-ranked comments naming an issue or PR this one names (``filters.Filters.first``):
    # one task, listed once (in JSON by where they are).
    same_issue: list[Item] = field(default_factory=list, metadata=spec(convert=_places))

    @property
    def score(self) -> int:
        return sum(r.points for r in self.reasons)

    @property
    def python_only(self) -> bool:
        return self.language == "python"

    @property
    def tag(self) -> str:
        return self.form.tag

    def json_extra(self) -> dict[str, object]:
        f = self.form
        return {
            "tag": f.tag,
            "kind": f.kind,
            "owners": f.owners,
            "issues": f.issues,
            "pulls": f.pulls,
            "internal_ids": f.internal_ids,
            "other_links": f.other_links,
            "body": f.body,
            "python_only": self.python_only,
            "score": self.score,
        }


def module_of(path: str) -> str:
    stem = path.rsplit(".", 1)[0]
    if stem.endswith("/__init__"):
        stem = stem[: -len("/__init__")]
    return stem.replace("/", ".")


def matches_module(module: str, wanted: str) -> bool:
    """``autograd`` matches torch.autograd.* and torch.csrc.autograd.*;
    ``nn.modules`` a run of components; a leading ``_`` is optional."""
    want = [w.lstrip("_") for w in wanted.strip(".").split(".") if w]
    have = [p.lstrip("_") for p in module.split(".")]
    if not want:
        return True
    n = len(want)
    return any(have[i : i + n] == want for i in range(len(have) - n + 1))


def stable_id(path: str, text: str, occurrence: int = 0, *, normalised: str | None = None) -> str:
    """Path + normalised text (no line number): the id survives edits above it.

    Identical comments in one file get their order of appearance mixed in.
    ``normalised``: ``forms.normalise(text)``, when the caller has it already.
    """
    key = f"{path}\0{forms.normalise(text) if normalised is None else normalised}"
    if occurrence:
        key += f"\0{occurrence}"
    return sha1_hex(key.encode())[:10]


class NearbyTests:
    """Where the tests are: ``test/`` of a full checkout, and siblings."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._by_name: dict[str, str] | None = None
        self._dirs: dict[str, frozenset[str]] = {}

    @property
    def by_name(self) -> dict[str, str]:
        """test_*.py file name -> its path under test/ (walked on first use)."""
        if self._by_name is None:
            self._by_name = {}
            test_dir = self.root / "test"
            if test_dir.is_dir():
                for dirpath, dirnames, filenames in os.walk(test_dir):
                    dirnames[:] = [d for d in dirnames if not d.startswith((".", "__"))]
                    rel = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
                    for name in filenames:
                        if name.startswith("test_") and name.endswith(".py"):
                            self._by_name.setdefault(name, f"{rel}/{name}")
        return self._by_name

    def _listing(self, folder: str) -> frozenset[str]:
        if folder not in self._dirs:
            try:
                self._dirs[folder] = frozenset(os.listdir(self.root / folder))
            except OSError:
                self._dirs[folder] = frozenset()
        return self._dirs[folder]

    def near(self, path: str) -> str | None:
        folder, _, name = path.rpartition("/")
        stem = name.rsplit(".", 1)[0].lstrip("_")
        if name.startswith("test_"):
            return path  # the comment is in a test already
        siblings = self._listing(folder)
        for cand in (f"test_{stem}.py", f"{stem}_test.py"):
            if cand in siblings:
                return f"{folder}/{cand}" if folder else cand
        hit = self.by_name.get(f"test_{stem}.py")
        if hit:
            return hit
        parts = [p.lstrip("_") for p in folder.split("/") if p and p != "torch"]
        for part in reversed(parts):
            hit = self.by_name.get(f"test_{part}.py")
            if hit:
                return hit
        return None


def score(item: Item, tests: NearbyTests | None) -> None:
    """Fill ``item.reasons`` (the score is their sum)."""
    r: list[Reason] = []
    f = item.form
    if item.python_only:
        r.append(Reason(PYTHON_ONLY, "Python-only: no C++ rebuild to try a change"))
    elif item.language in ("javascript", "jinja"):
        r.append(Reason(NO_REBUILD, f"{item.language}: no C++ rebuild to try a change"))
    elif item.language == "yaml":
        r.append(Reason(NEEDS_REBUILD, "yaml: codegen reads it, a change needs a rebuild"))
    else:
        r.append(Reason(NEEDS_REBUILD, f"{item.language}: a change needs a rebuild"))
    body = f.body or item.text
    if len(forms.normalise(f.body)) < 8:
        r.append(Reason(NO_TEXT, "says little about what to do"))
    else:
        words = body.lower()
        small = intent(body)
        if small:
            r.append(Reason(SMALL, f'small, local wording ("{small.group(0)}")'))
        unsure = _UNSURE_RE.search(words)
        if unsure:
            what = "a question" if unsure.group(0) == "?" else f'"{unsure.group(0)}"'
            r.append(Reason(UNSURE, f"open-ended, not settled ({what}): find out first"))
        big = _BIG_RE.search(words)
        if big and not small and not unsure:
            r.append(Reason(OPEN_ENDED, f'open-ended ("{big.group(0)}")'))
        waits = _WAITS_RE.search(words)
        if waits:
            what = " ".join(words[waits.start() :].split()[:4])
            r.append(Reason(WAITS, f'waits for another change ("{what}"): check it landed'))
    if len(item.text) > LONG_TEXT_CHARS:
        r.append(Reason(LONG_TEXT, "a long explanation: likely not a small change"))
    if tests is not None:  # None: re-scoring, the test file is known already
        item.test_file = tests.near(item.path)
    if item.test_file == item.path:
        r.append(Reason(TEST_NEARBY, "in a test file: the change is its own test"))
    elif item.test_file:
        r.append(Reason(TEST_NEARBY, f"a test file nearby: {item.test_file}"))
    if f.owners:
        who = ", ".join(f.owners)
        r.append(Reason(OWNER, f"TODO({who}): someone's plan, ask {who} first"))
    elif f.kind in (forms.BARE, forms.ISSUE):
        r.append(Reason(NO_OWNER, "no named owner"))
    if f.issues or f.pulls:
        first = (f.issues or f.pulls)[0]
        r.append(Reason(LINKED_ISSUE, f"links #{first} for context"))
    if f.internal_ids:
        r.append(Reason(INTERNAL_ID, f"internal task id {f.internal_ids[0]}: context not public"))
    if f.tag in ("FIXME", "HACK") and item.path.startswith(_CORE_PREFIXES):
        r.append(Reason(CORE_FIXME, f"{f.tag} in core code: likely subtle"))
    for issue in item.linked:
        r.extend(issue_reasons(issue))
    item.reasons = r


def issue_reasons(issue: dict[str, Any]) -> list[Reason]:
    number = issue.get("number")
    labels = {str(x).lower() for x in issue.get("labels", [])}
    if issue.get("state") == "closed":
        return [
            Reason(
                CLOSED_ISSUE, f"#{number} is closed: the TODO may be stale (check, then remove it)"
            )
        ]
    newcomer = sorted(labels & {"good first issue", "actionable"})
    if newcomer:
        return [Reason(NEWCOMER_ISSUE, f'#{number} is open and labelled "{newcomer[0]}"')]
    return []


def sort_key(item: Item) -> tuple[int, int, str, int]:
    return (-item.score, len(item.text), item.path, item.line)
