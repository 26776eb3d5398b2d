"""Find the tagged comments of a tree: grep for candidates, lex only those lines.

ripgrep finds the candidate lines and where each starts in its file (it is
what a developer would run, and the benchmark compares against it); ``git
grep`` is the fallback. Only files with a hit are read, and in them only the
lines that can hide or continue a comment are lexed (``lexer``).
"""

from __future__ import annotations

import errno
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from onboard import cache as onboard_cache
from onboard import proc
from onboard.errors import BadInput, OnboardError
from onboard.workflows.harvest import tags
from onboard.workflows.harvest.tags import Comment

# ripgrep's and git grep's spelling of the tag pattern.
RG_PATTERN = r"\b(?:TODO|FIXME|XXX|HACK)\b"
ERE_PATTERN = r"(^|[^[:alnum:]_])(TODO|FIXME|XXX|HACK)([^[:alnum:]_]|$)"
_GLOBS = tuple("*" + s for s in tags.SUFFIXES)
_SUFFIXES = tags.SUFFIXES

# Vendored code: PyTorch's submodules live under third_party/; the wheel
# installs their public headers next to PyTorch's own in torch/include
# (pybind11, fmt, google/protobuf, oneapi/dnnl, kineto, fbgemm, ...), and the
# reference tree puts those under third_party/include/. A name rule
# ("anything called fmt/") would also hit PyTorch's own torch/onnx or
# torch/utils/benchmark, so only the folder decides.
OWN_INCLUDE_DIRS = {"ATen", "c10", "caffe2", "torch"}
# Generated files: torchgen and tools/ write them under build/ (not in git;
# the reference tree keeps the wheel's copies there), into `generated/`
# folders, or mark them with "@generated" in their first lines (as
# torchgen's templates and tools/pyi/gen_pyi.py do).
_GENERATED_PATH_RE = re.compile(
    r"^build/|(^|/)generated/|^torch/version\.py$|^torch/include/ATen/ops/"
    r"|^torch/include/ATen/(RegisterSchema|[A-Za-z]+Functions(_inl)?|Operators|Config)\.h$"
)
_GENERATED_MARK = "@generated"


@dataclass(frozen=True)
class Candidates:
    """Lines the grep found, per file."""

    searcher: str  # "ripgrep 14.1.0" / "git grep"
    hits: dict[str, list[int]]  # repo-relative posix path -> sorted hit line numbers
    seconds: float
    # path -> the byte offset where each hit line starts (ripgrep says; git grep does not)
    starts: dict[str, list[int]] = field(default_factory=dict)

    @property
    def line_count(self) -> int:
        return sum(len(v) for v in self.hits.values())


# What happened to a file between the grep and its read (a `git checkout` in
# another terminal): said in the result, per file.
REREAD = "changed after the search: read again"
VANISHED = "vanished after the search: skipped"
NOT_A_FILE = "became a folder after the search: skipped"
UNREADABLE = "could not be read: skipped"


@dataclass(frozen=True)
class FileComments:
    path: str
    generated: bool  # "@generated" in its first lines
    unterminated: bool  # a string runs to the end of the file (tokenize would reject it)
    comments: tuple[Comment, ...]
    hit_lines: tuple[int, ...] = ()  # the candidate lines lexed (the grep's, or found again)
    changed: str = ""  # REREAD, VANISHED, NOT_A_FILE, UNREADABLE; "" when as the grep saw it

    @property
    def skipped(self) -> bool:
        return self.changed not in ("", REREAD)


def ripgrep_path() -> str | None:
    """The ``rg`` next to this interpreter (``pip install ripgrep``), else on PATH.

    The one beside ``sys.executable`` is the real binary; a pyenv shim on PATH
    costs a shell start per call.
    """
    here = Path(sys.executable).parent / "rg"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return proc.which("rg")


def eligible(path: str) -> bool:
    """Whether the grep searches ``path`` when it walks the tree (the globs; ripgrep skips
    hidden files and folders)."""
    return path.endswith(_SUFFIXES) and not any(p.startswith(".") for p in path.split("/"))


def find_candidates(
    root: Path,
    *,
    searcher: str = "auto",
    paths: Sequence[str] | None = None,
    name: str | None = None,
) -> Candidates:
    """Every line of a file of ``tags.SUFFIXES`` that matches a tag, by ripgrep or git grep.

    ``paths``: search only these files (repo-relative; each must be ``eligible``).
    ``name``: the searcher's name when the caller knows it (no ``rg --version``).
    """
    rg = ripgrep_path() if searcher in ("auto", "rg") else None
    if searcher == "rg" and rg is None:
        raise OnboardError(
            "ripgrep (`rg`) was asked for but is not installed.",
            next_step="Run `pip install ripgrep`, or use --searcher git.",
        )
    if name is not None and name.startswith("ripgrep") != (rg is not None):
        name = None  # the searcher changed since the caller learnt its name
    start = time.monotonic()
    if paths is not None and not paths:
        return Candidates(name or _searcher_name(rg), {}, 0.0)
    if rg is not None:
        hits, starts = _ripgrep(rg, root, paths)
        return Candidates(name or _searcher_name(rg), hits, time.monotonic() - start, starts)
    from onboard import git

    if not git.repository.is_repo(root):
        if searcher == "git":
            raise BadInput(
                f"{root} is not a git repository, so `git grep` (--searcher git) cannot search it.",
                next_step="Drop --searcher git (ripgrep searches any folder), or point --repo "
                "at a git checkout.",
            )
        raise OnboardError(
            f"{root} is not a git repository and ripgrep is not installed, so there is "
            "nothing to search it with.",
            next_step="Run `pip install ripgrep` (onboard prefers it), or point --repo at a "
            "git checkout.",
        )
    text = git.worktree.grep_null(
        root, ERE_PATTERN, list(paths) if paths is not None else list(_GLOBS)
    )
    found: dict[str, list[int]] = {}
    for row in text.splitlines():
        parts = row.split("\0", 2)
        if len(parts) >= 2 and parts[1].isdigit():
            found.setdefault(parts[0], []).append(int(parts[1]))
    return Candidates("git grep", _sorted(found), time.monotonic() - start)


def _ripgrep(
    rg: str, root: Path, paths: Sequence[str] | None
) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    args = [
        rg,
        "--no-config",
        "--no-heading",
        "--with-filename",
        "--line-number",
        "--byte-offset",  # where each hit line starts: the lexer jumps there
        "--null",
        "--color=never",
        "--no-ignore-parent",
        "--max-columns=1",  # the text is read from the file later; keep the pipe small
        "-e",
        RG_PATTERN,
    ]
    for glob in _GLOBS:
        args += ["-g", glob]
    if paths is None:
        args.append(".")
    else:
        args += ["--", *(f"./{p}" for p in paths)]
    result = proc.run(args, cwd=root, check=False, timeout=600, what="ripgrep")
    if result.returncode not in (0, 1):  # 1: no match
        raise OnboardError(
            f"ripgrep failed in {root} (exit {result.returncode}): {result.stderr.strip()[-300:]}",
            next_step="Check that the folder is readable, or run with --searcher git.",
        )
    found: dict[str, list[tuple[int, int]]] = {}
    for row in result.stdout.splitlines():
        path, sep, rest = row.partition("\0")
        if not sep:
            continue
        number, _, rest = rest.partition(":")
        offset, _, _ = rest.partition(":")
        if number.isdigit() and offset.isdigit():
            found.setdefault(path.removeprefix("./"), []).append((int(number), int(offset)))
    hits: dict[str, list[int]] = {}
    starts: dict[str, list[int]] = {}
    for path in sorted(found):
        rows = sorted(set(found[path]))
        hits[path] = [line for line, _ in rows]
        starts[path] = [offset for _, offset in rows]
    return hits, starts


def _sorted(hits: dict[str, list[int]]) -> dict[str, list[int]]:
    return {p: sorted(set(v)) for p, v in sorted(hits.items())}


def _searcher_name(rg: str | None) -> str:
    if rg is None:
        return "git grep"
    version = _rg_version(rg)
    return f"ripgrep {version}".strip()


_RG_VERSIONS: dict[tuple[str, int], str] = {}


def _rg_version(rg: str) -> str:
    """``rg --version``'s number (asked once per binary and process)."""
    try:
        stamp = (rg, Path(rg).stat().st_mtime_ns)
    except OSError:
        stamp = (rg, 0)
    if stamp not in _RG_VERSIONS:
        result = proc.run([rg, "--version"], check=False, timeout=30)
        first = result.stdout.splitlines()[0] if result.stdout else ""
        _RG_VERSIONS[stamp] = first.split()[1] if len(first.split()) > 1 else ""
    return _RG_VERSIONS[stamp]


def vendored(path: str) -> bool:
    parts = path.split("/")
    if parts[0] == "third_party":
        return True
    for i, part in enumerate(parts[:-1]):
        if part == "include" and i > 0 and parts[i - 1] == "torch" and i + 1 < len(parts):
            # torch/include/<x>: PyTorch's own headers or a vendored library's.
            return parts[i + 1] not in OWN_INCLUDE_DIRS
    return False


def generated_path(path: str) -> bool:
    return _GENERATED_PATH_RE.search(path) is not None


def generated_header(source: str) -> bool:
    head = source[:2048]
    return _GENERATED_MARK in head and any(_GENERATED_MARK in ln for ln in head.splitlines()[:12])


# --------------------------------------------------------------------------
# Lexing the files with hits


def cache_dir() -> Path:
    return onboard_cache.cache_dir("harvest")


read_json = onboard_cache.read_json
write_json = onboard_cache.write_json


def lex_files(
    root: Path,
    cands: Candidates,
    *,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[FileComments]:
    """Tagged comments of every file with a hit, in the order of ``cands.hits``."""
    out: list[FileComments] = []
    total = len(cands.hits)
    for n, (path, lines) in enumerate(cands.hits.items()):
        out.append(lex_file(root, path, lines, cands.starts.get(path)))
        if progress is not None:
            progress(n + 1, total, path)
    return out


def lex_file(
    root: Path, path: str, lines: list[int], starts: list[int] | None = None
) -> FileComments:
    """One file's tagged comments. A file that changed after the grep is lexed at
    the tags it holds now; one that vanished or is no file any more is skipped
    (``changed`` says which)."""
    from onboard.workflows.harvest import lexer  # its patterns compile only when lexing

    try:
        data = (root / path).read_bytes()
    except OSError as exc:
        gone = {errno.ENOENT: VANISHED, errno.ENOTDIR: VANISHED, errno.EISDIR: NOT_A_FILE}
        what = gone.get(exc.errno or 0, UNREADABLE)
        return FileComments(path, False, False, (), tuple(lines), what)
    hits = (
        list(zip(lines, starts, strict=True))
        if starts is not None and len(starts) == len(lines)
        else lexer.hit_lines(data, lines)
    )
    changed = ""
    if len(hits) != len(lines) or not lexer.hits_hold(data, hits):
        hits, changed = lexer.find_hits(data), REREAD
    comments, unterminated = lexer.comments_on_lines(path, data, hits)
    # "@generated" in the first 2048 characters (at most 4 bytes each).
    head = data[:8192]
    generated = _GENERATED_MARK.encode() in head and generated_header(
        head.decode("utf-8", "replace")
    )
    hit_lines = tuple(line for line, _ in hits)
    return FileComments(path, generated, unterminated, tuple(comments), hit_lines, changed)
