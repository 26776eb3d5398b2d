"""`onboard harvest` swept over the installed wheel's files: every suffix in which
ripgrep finds a tag, checked against a truth of the test's own per language;
the cache against `--no-cache` through edit, restore, branch checkout and stash;
and the ranking against an oracle computed from the comments' text.

The truths never use onboard's lexer: Python's ``tokenize``; for C-like files a
character scanner written here; for YAML, PyYAML's scanner (where its scalars
are) and the YAML rule that ``#`` starts a comment at the start of a line or
after whitespace outside a scalar; for JavaScript a character scanner written
here; for Jinja templates, Jinja's own lexer for its comments and ``tokenize``
over the template's text with Jinja's constructs blanked.

The normal suite sweeps a fixed, seeded sample of the wheel (every YAML,
JavaScript and Jinja file, every tagged file of the rarer suffixes, 60 Python
files and 60 headers); ``test_whole_wheel_sweep`` (slow) sweeps the whole
reference tree. Numbers: docs/truth.md, section "harvest sweep".
"""

from __future__ import annotations

import io
import random
import re
import subprocess
import tokenize
from collections import Counter
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml
from fixtures.pytorch_repo import find_package_dir, find_torch_dir

from onboard.jsonable import to_json
from onboard.workflows import harvest as hv
from onboard.workflows.harvest import scan, tags

ROOT = Path(__file__).resolve().parents[1]
TAG = re.compile(r"\b(TODO|FIXME|XXX|HACK)\b")
SEED = 2026
COMMIT = "cf30153c4c131c8164ee7798e5022d810682e2cb"

# --------------------------------------------------------------------------
# The truths: the lines where a tagged comment starts, one entry per comment line
# holding a tag (a spliced // comment counts once, at its first line).


def python_truth(text: str) -> Counter[int]:
    found: Counter[int] = Counter()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT and TAG.search(tok.string):
            found[tok.start[0]] += 1
    return found


def c_truth(text: str) -> Counter[int]:
    """A character scanner for C, C++, CUDA, Objective-C and Metal: comments, strings,
    char literals, raw strings and digit separators."""
    found: Counter[int] = Counter()
    i, n, line = 0, len(text), 1
    prev = ""  # the last code character
    number = False  # inside a number (where ' separates digits)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            prev, number = c, False
            continue
        if text.startswith("//", i):
            start, j = line, i
            while j < n and text[j] != "\n":
                if text.startswith("\\\n", j) or text.startswith("\\\r\n", j):
                    j = text.index("\n", j) + 1
                    line += 1
                    continue
                j += 1
            if TAG.search(text[i:j]):
                found[start] += 1
            i = j
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for k, part in enumerate(text[i:end].split("\n")):
                if TAG.search(part):
                    found[line + k] += 1
            line += text.count("\n", i, end)
            i = end
            continue
        raw = re.compile(r'(?:u8|[uUL])?R"([^()\\\s"]{0,16})\(').match(text, i)
        if raw and not (prev.isalnum() or prev == "_"):
            end = text.find(")" + raw.group(1) + '"', raw.end())
            if end >= 0:
                end += len(raw.group(1)) + 2
                line += text.count("\n", i, end)
                i, prev = end, '"'
                continue
        if c == '"' or (c == "'" and not number):
            j = i + 1
            while j < n and text[j] != c and (c == '"' or text[j] != "\n"):
                if text[j] == "\\":
                    j += 1
                elif text[j] == "\n":
                    break
                j += 1
            line += text.count("\n", i, min(j + 1, n))
            i, prev = j + 1, c
            continue
        if c.isdigit() and not (prev.isalnum() or prev == "_"):
            number = True
        elif number and not (c.isalnum() or c in ".'_"):
            number = False
        prev = c
        i += 1
    return found


def yaml_truth(text: str) -> Counter[int]:
    """``#`` at a line's start or after whitespace, outside every scalar PyYAML's
    scanner finds, starts a comment."""
    spans = sorted(
        (t.start_mark.index, t.end_mark.index)
        for t in yaml.scan(text, Loader=yaml.SafeLoader)
        if isinstance(t, yaml.ScalarToken)
    )
    found: Counter[int] = Counter()
    at = 0
    for number, line in enumerate(text.split("\n"), 1):
        for m in re.finditer("#", line):
            p = at + m.start()
            if m.start() and line[m.start() - 1] not in " \t":
                continue
            if any(a <= p < b for a, b in spans):
                continue
            if TAG.search(line[m.start() :]):
                found[number] += 1
            break
        at += len(line) + 1
    return found


_JS_REGEX_BEFORE = set("(,=:[!&|?{};+-*%<>~^")
_JS_KEYWORDS = {"return", "typeof", "case", "do", "else", "in", "of", "new", "throw", "void"}


def js_truth(text: str) -> Counter[int]:
    """A character scanner for JavaScript: strings, template literals with ``${}``
    (nested), regular expressions where a value may start, and comments."""
    found: Counter[int] = Counter()
    i, n = 0, len(text)
    modes = ["code"]  # "code", "template", or "sub" (code inside ${ }) with brace counts
    braces = [0]
    last = ""  # the last significant code token

    def line_at(k: int) -> int:
        return text.count("\n", 0, k) + 1

    while i < n:
        c = text[i]
        if modes[-1] == "template":
            if c == "\\":
                i += 2
            elif c == "`":
                modes.pop()
                braces.pop()
                i, last = i + 1, "value"
            elif text.startswith("${", i):
                modes.append("sub")
                braces.append(0)
                i, last = i + 2, "("
            else:
                i += 1
            continue
        if c.isspace():
            i += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            if TAG.search(text[i:j]):
                found[line_at(i)] += 1
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            first = line_at(i)
            for k, part in enumerate(text[i:j].split("\n")):
                if TAG.search(part):
                    found[first + k] += 1
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i, last = j + 1, "value"
            continue
        if c == "`":
            modes.append("template")
            braces.append(0)
            i += 1
            continue
        if c == "/" and (last == "" or last in _JS_REGEX_BEFORE or last in _JS_KEYWORDS):
            j, in_class = i + 1, False
            while j < n and text[j] != "\n" and (in_class or text[j] != "/"):
                if text[j] == "\\":
                    j += 1
                elif text[j] == "[":
                    in_class = True
                elif text[j] == "]":
                    in_class = False
                j += 1
            i, last = j + 1, "value"
            continue
        if c == "{":
            braces[-1] += 1
        elif c == "}":
            if modes[-1] == "sub" and braces[-1] == 0:
                modes.pop()
                braces.pop()
                i += 1
                continue
            braces[-1] -= 1
        word = re.compile(r"[\w$]+").match(text, i)
        if word:
            last = word.group() if word.group() in _JS_KEYWORDS else "value"
            i = word.end()
            continue
        last = "value" if c in ")]}" else c
        i += 1
    return found


def jinja_truth(text: str, written: str) -> Counter[int]:
    """Jinja's lexer: its comments, and the text it passes through (its data
    tokens), where the language the template writes has comments."""
    env = jinja2.Environment()
    blank = [ch if ch == "\n" else " " for ch in text]
    found: Counter[int] = Counter()
    cursor = 0
    for lineno, kind, value in env.lex(text):
        at = text.find(value, cursor) if value else cursor
        assert at >= 0, (lineno, kind, value)
        cursor = at + len(value)
        if kind == "data":
            blank[at:cursor] = list(value)
        elif kind == "comment":
            for k, part in enumerate(value.split("\n")):
                if TAG.search(part):
                    found[lineno + k] += 1
    data = "".join(blank)
    if written.endswith((".py", ".pyi")):
        found += python_truth(data)
    elif written.endswith(tags.C_SUFFIXES):
        found += c_truth(data)
    return found


def truth(path: str, text: str) -> Counter[int]:
    if path.endswith(tags.JINJA_SUFFIXES):
        return jinja_truth(text, path[: path.rfind(".")])
    if path.endswith(tags.PYTHON_SUFFIXES):
        return python_truth(text)
    if path.endswith(tags.YAML_SUFFIXES):
        return yaml_truth(text)
    if path.endswith(tags.JS_SUFFIXES):
        return js_truth(text)
    if path.endswith(tags.C_SUFFIXES):
        return c_truth(text)
    raise AssertionError(f"no truth for {path}")


def test_the_truths_on_small_cases() -> None:
    # Each truth scanner on what fakes a comment in its language.
    assert c_truth('int a = 1\'000; // TODO: x\nchar* s = "// TODO no";\n/* a\n TODO b */\n') == {
        1: 1,
        4: 1,
    }
    assert c_truth('auto r = R"x(// TODO no)x"; // HACK: yes\n') == {1: 1}
    assert yaml_truth("a: 'b # TODO no'\nc: |\n  # TODO no\n# TODO: yes\nd: e#TODO no\n") == {4: 1}
    assert js_truth(
        "s = `${`// TODO no`}` // TODO: yes\nr = /\\/\\/ TODO no/;\nx = a / b; // FIXME\n"
    ) == {
        1: 1,
        3: 1,
    }
    assert jinja_truth("{# TODO: j #}\nx = {{ '# TODO no' }}  # XXX: py\n", "a.py") == {1: 1, 2: 1}


# --------------------------------------------------------------------------
# The trees


def _wheel_files() -> dict[str, Path]:
    """Every file of the installed torch and torchgen, by its path in the wheel."""
    out: dict[str, Path] = {}
    for package in (find_torch_dir(), find_package_dir("torchgen")):
        for path in package.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (
                ".so", ".pyc", ".a", ".dylib", ".lib", ".dll"
            ):  # fmt: skip
                out[path.relative_to(package.parent).as_posix()] = path
    return out


def _tagged(path: Path) -> bool:
    try:
        return TAG.search(path.read_text(encoding="utf-8", errors="replace")) is not None
    except OSError:
        return False


def _sample() -> dict[str, Path]:
    """The seeded sample: every file lexed whole and every tagged file of the rarer
    suffixes, 60 tagged Python files and 60 tagged headers."""
    files = _wheel_files()
    whole = {p: f for p, f in files.items() if p.endswith(tags.WHOLE_FILE_SUFFIXES)}
    rest = {p: f for p, f in files.items() if p.endswith(tags.SUFFIXES) and p not in whole}
    tagged = {p: f for p, f in rest.items() if _tagged(f)}
    rng = random.Random(SEED)
    py = sorted(p for p in tagged if p.endswith(".py"))
    headers = sorted(p for p in tagged if p.endswith(".h"))
    picked = set(rng.sample(py, 60)) | set(rng.sample(headers, 60))
    picked |= {p for p in tagged if not p.endswith((".py", ".h"))}
    return {**whole, **{p: tagged[p] for p in picked}}


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def _tree(dest: Path, files: dict[str, Path]) -> Path:
    for rel, src in files.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(src.read_bytes())
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "add", "-A")
    _git(dest, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "wheel sample")
    return dest


@pytest.fixture(scope="module")
def sample_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tree(tmp_path_factory.mktemp("sweep") / "tree", _sample())


# --------------------------------------------------------------------------
# The sweep


def _tagged_suffixes(root: Path) -> dict[str, list[str]]:
    """Every file ripgrep finds a tag in (all suffixes, not harvest's globs), by suffix."""
    rg = scan.ripgrep_path()
    assert rg is not None, "ripgrep comes with onboard (`pip install ripgrep`)"
    done = subprocess.run(
        [rg, "--no-config", "-l", "-e", scan.RG_PATTERN, "."], cwd=root, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    out: dict[str, list[str]] = {}
    for line in sorted(done.stdout.splitlines()):
        path = line.removeprefix("./")
        name = path.rsplit("/", 1)[-1]
        suffix = "." + name.rsplit(".", 1)[-1] if "." in name else name
        out.setdefault(suffix, []).append(path)
    return out


def _read_suffixes_in_the_guide() -> tuple[set[str], str]:
    """The suffixes docs/guide/harvest.md says harvest reads, and its sentence on the rest."""
    guide = (ROOT / "docs" / "guide" / "harvest.md").read_text(encoding="utf-8")
    read = re.search(r"Files read: (.*?)\.\s", guide, re.S)
    rest = re.search(r"[^.]*Every other suffix is not read[^.]*\.", guide)
    assert read and rest, "docs/guide/harvest.md no longer says which files harvest reads"
    return set(re.findall(r"`(\.[\w.]+)`", read.group(1))), rest.group(0)


def sweep(root: Path) -> dict[str, dict[str, int]]:
    """Per suffix: files, tagged comments by the truth, and files where harvest agrees
    exactly. Asserts every file is exact."""
    by_suffix = _tagged_suffixes(root)
    read, rest = _read_suffixes_in_the_guide()
    assert read == set(tags.SUFFIXES)
    cands = scan.find_candidates(root)
    result = hv.harvest(
        hv.HarvestRequest(repo=str(root), limit=0, enrich_results=False, cache=False)
    )
    items: dict[str, Counter[int]] = {}
    for item in result.scan.items:
        items.setdefault(item.path, Counter())[item.line] += 1
    numbers: dict[str, dict[str, int]] = {}
    wrong: list[tuple[str, Any, Any]] = []
    for suffix, paths in sorted(by_suffix.items()):
        if not any(p.endswith(tags.SUFFIXES) for p in paths):
            # Not read: the guide says so.
            assert "Every other suffix is not read" in rest, suffix
            numbers[suffix] = {"files": len(paths), "not_read": 1}
            continue
        row = numbers.setdefault(suffix, {"files": 0, "comments": 0, "exact": 0})
        for path in paths:
            text = (root / path).read_text(encoding="utf-8", errors="replace")
            expected = truth(path, text)
            lexed = scan.lex_file(root, path, cands.hits.get(path, []), cands.starts.get(path))
            got = Counter(c.line for c in lexed.comments)
            own = not (scan.vendored(path) or scan.generated_path(path) or lexed.generated)
            shown = items.get(path, Counter())
            row["files"] += 1
            row["comments"] += sum(expected.values())
            if got == expected and shown == (expected if own else Counter()):
                row["exact"] += 1
            else:
                wrong.append(
                    (path, sorted((expected - got).items()), sorted((got - expected).items()))
                )
    assert not wrong, wrong[:10]
    return numbers


def test_sample_of_the_wheel_every_tagged_suffix_against_its_truth(sample_tree: Path) -> None:
    numbers = sweep(sample_tree)
    # The sample holds every suffix the wheel has tags in, YAML, JS and Jinja included.
    assert {".py", ".h", ".yaml", ".js", ".jinja", ".pyi", ".cpp", ".hpp", ".cuh"} <= set(numbers)
    assert numbers[".yaml"]["comments"] >= 24  # native_functions.yaml and derivatives.yaml
    assert numbers[".js"]["comments"] >= 10  # torch/utils/model_dump/code.js


@pytest.mark.slow
def test_whole_wheel_sweep(tmp_path: Path) -> None:
    from onboard.workflows import reference_tree as rt

    plan = rt.plan(find_torch_dir(), find_package_dir("torchgen"))
    root = tmp_path / "reference"
    rt.build(root, plan, torch_version="2.13.0+cpu", commit=COMMIT, version_txt="2.13.0")
    numbers = sweep(root)
    print(numbers)  # the figures docs/truth.md records (pytest -s)
    assert sum(r.get("comments", 0) for r in numbers.values()) > 3000


# --------------------------------------------------------------------------
# The cache: a warm answer is the --no-cache answer, whatever git did to the tree

_CACHE_TREE = {
    "torch/nn/a.py": "# TODO: remove the old path\nx = 1\n",
    "torch/nn/b.py": "y = 2  # FIXME: rename y\n",
    "aten/src/ATen/native/native_functions.yaml": "# TODO: drop this entry\n- func: f() -> ()\n",
    "torch/utils/viewer.js": "// TODO: remove the fallback\nlet a = 1;\n",
}


@pytest.fixture
def cache_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel, text in _CACHE_TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tree")
    return root


def _items(root: Path, cache: Path | bool) -> tuple[list[dict[str, Any]], str]:
    result = hv.harvest(
        hv.HarvestRequest(repo=str(root), limit=0, enrich_results=False, cache=cache)
    )
    return to_json(result)["items"], result.summary()["cache"]


def _assert_warm_is_fresh(root: Path, cache: Path, state: str) -> None:
    warm, how = _items(root, cache)
    fresh, _ = _items(root, False)
    assert warm == fresh, f"after {state}: cached {how}"
    again, how = _items(root, cache)  # what that run saved
    assert again == fresh and how == "tree", f"after {state}, the saved result"


@pytest.mark.parametrize("path", ["torch/nn/a.py", "aten/src/ATen/native/native_functions.yaml"])
def test_edit_then_git_checkout_restores_the_files_items(
    cache_repo: Path, tmp_path: Path, path: str
) -> None:
    cache = tmp_path / "cache"
    _assert_warm_is_fresh(cache_repo, cache, "the first run")
    edited = cache_repo / path
    edited.write_text(edited.read_text() + "# TODO: an edit\n", encoding="utf-8")
    _assert_warm_is_fresh(cache_repo, cache, "an edit")
    _git(cache_repo, "checkout", "--", path)
    # The restored file is as HEAD has it: its TODOs are back, cached or not.
    _assert_warm_is_fresh(cache_repo, cache, "git checkout -- FILE")
    warm, _ = _items(cache_repo, cache)
    assert sum(i["path"] == path for i in warm) == 1


def test_branch_checkout_and_stash_against_no_cache(cache_repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _assert_warm_is_fresh(cache_repo, cache, "the first run")
    _git(cache_repo, "checkout", "-q", "-b", "other")
    (cache_repo / "torch/nn/b.py").write_text("y = 2\n", encoding="utf-8")
    (cache_repo / "torch/nn/c.py").write_text("# HACK: new on the branch\n", encoding="utf-8")
    _git(cache_repo, "add", "-A")
    _git(cache_repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "other")
    _assert_warm_is_fresh(cache_repo, cache, "a commit on a branch")
    _git(cache_repo, "checkout", "-q", "main")
    _assert_warm_is_fresh(cache_repo, cache, "git checkout main")
    js = cache_repo / "torch/utils/viewer.js"
    js.write_text("let a = 1;\n", encoding="utf-8")  # its TODO removed
    _assert_warm_is_fresh(cache_repo, cache, "an edit")
    _git(cache_repo, "stash", "-q")
    _assert_warm_is_fresh(cache_repo, cache, "git stash")
    _git(cache_repo, "stash", "pop", "-q")
    _assert_warm_is_fresh(cache_repo, cache, "git stash pop")
    _git(cache_repo, "checkout", "-q", "other")
    _assert_warm_is_fresh(cache_repo, cache, "git checkout other")


# --------------------------------------------------------------------------
# The ranking: what a newcomer can finish, judged from the comments' text alone

_ORACLE_NUMBER = re.compile(
    r"(?<![\w&/])(?:#|gh-)(\d{4,6})\b|github\.com/pytorch/pytorch/(?:issues|pull)/(\d+)"
)
_ORACLE_TAG = re.compile(r"\b(?:TODO|FIXME|XXX|HACK)\b\s?(?:\(([^)]*)\))?[\s:,.-]*")
_ORACLE_ACTION = re.compile(
    r"(?:please |we should |should )?(?:remove|delete|drop|rename|simplify|clean ?up|"
    r"add (?:a |more |some )?tests?|test this|use |replace|move|inline|document)\b",
    re.I,
)
_ORACLE_UNSURE = re.compile(r"investigate|figure out|not sure|unclear|maybe|perhaps|\?", re.I)


def _numbers(text: str) -> set[int]:
    return {int(a or b) for a, b in _ORACLE_NUMBER.findall(text)}


def _finishable(path: str, text: str) -> bool:
    """Python (no rebuild), says what to do with an action as its first words, is
    settled, and is nobody's in particular (``TODO(name)``)."""
    tag = _ORACLE_TAG.search(text)
    if tag is None or not path.endswith(".py"):
        return False
    inside = tag.group(1) or ""
    owned = bool(inside) and not inside.startswith(("#", "future", "follow")) and " " not in inside
    body = text[tag.end() :]
    return bool(_ORACLE_ACTION.match(body)) and not _ORACLE_UNSURE.search(text) and not owned


def test_the_action_is_the_comments_intent_and_doubt_ranks_low(tmp_path: Path) -> None:
    # The finishable ones are the longest: length (the last tie-breaker) cannot order them.
    comments = [
        "TODO: remove this helper and its two callers in this module",
        "TODO: Investigate how to remove this",
        "TODO: figure out whether to remove it",
        "TODO: not sure we can drop this",
        "TODO: please rename the flag to the name the docs use",
        "TODO: wrong here, remove it?",
    ]
    root = tmp_path / "repo"
    (root / "torch").mkdir(parents=True)
    (root / "torch" / "util.py").write_text(
        "".join(f"# {c}\nx{n} = {n}\n" for n, c in enumerate(comments)), encoding="utf-8"
    )
    _git(root, "init", "-q", "-b", "main")
    order = [
        i.text
        for i in hv.harvest(
            hv.HarvestRequest(repo=str(root), limit=0, enrich_results=False, cache=False)
        ).items
    ]
    good = [t for t in comments if _finishable("torch/util.py", t)]
    doubtful = [t for t in comments if _ORACLE_UNSURE.search(t)]
    assert len(good) == 2 and all(len(g) > max(map(len, comments[1:4])) for g in good)
    assert len(doubtful) == 4
    assert max(order.index(t) for t in good) < min(order.index(t) for t in doubtful)


def test_one_item_per_linked_issue(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    files = {
        "torch/a.py": "# TODO: remove this padding once #12345 lands\n",
        "torch/b.py": "# TODO: remove this padding, see #12345\n",
        "torch/c.py": "# TODO: remove the copy: https://github.com/pytorch/pytorch/issues/12345\n",
        "torch/d.py": "# TODO: rename the flag (#23456)\n",
        "torch/e.py": "# TODO: remove the shim after gh-12345 is fixed\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    result = hv.harvest(
        hv.HarvestRequest(repo=str(root), limit=2, enrich_results=False, cache=False)
    )
    shown = to_json(result)["items"]
    assert [sorted(_numbers(i["text"])) for i in shown] in ([[12345], [23456]], [[23456], [12345]])
    lead = next(i for i in shown if 12345 in _numbers(i["text"]))
    others = {p for p, t in files.items() if 12345 in _numbers(t)} - {lead["path"]}
    assert {s["path"] for s in lead["same_issue"]} == others


@pytest.fixture(scope="module")
def wheel_python_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every tagged Python file of the wheel's torch package."""
    files = {p: f for p, f in _wheel_files().items() if p.endswith(".py") and _tagged(f)}
    return _tree(tmp_path_factory.mktemp("rank") / "tree", files)


def test_the_wheels_top_ten_are_first_tasks_one_per_issue(wheel_python_tree: Path) -> None:
    result = hv.harvest(
        hv.HarvestRequest(repo=str(wheel_python_tree), limit=0, enrich_results=False, cache=False)
    )
    every = [(i.path, i.text) for i in result.scan.items]
    # The wheel holds finishable comments that name the same issue: one slot for them.
    per_issue = Counter(n for p, t in every if _finishable(p, t) for n in _numbers(t))
    assert any(count > 1 for count in per_issue.values())
    top = hv.harvest(
        hv.HarvestRequest(repo=str(wheel_python_tree), limit=10, enrich_results=False, cache=False)
    )
    shown = [(i.path, i.text) for i in top.items]
    assert len(shown) == 10
    named = [n for _, t in shown for n in _numbers(t)]
    assert len(named) == len(set(named)), named
    assert not [t for _, t in shown if _ORACLE_UNSURE.search(t)]
    finishable = [t for p, t in shown if _finishable(p, t)]
    assert len(finishable) >= 8, [t for p, t in shown if not _finishable(p, t)]
