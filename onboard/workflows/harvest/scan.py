"""Find the tagged comments of a tree: grep for candidates, lex only those files.

ripgrep finds the candidate lines (it is what a developer would run, and the
benchmark compares against it); ``git grep`` is the fallback. Only files with
a hit are read and lexed, and what the lexer found is cached per file (keyed
by size and mtime), so a second run costs little more than the grep itself.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
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
_GLOBS = tuple("*" + s for s in (*tags.PYTHON_SUFFIXES, *tags.C_SUFFIXES))

CACHE_VERSION = 1

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

    @property
    def line_count(self) -> int:
        return sum(len(v) for v in self.hits.values())


@dataclass(frozen=True)
class FileComments:
    path: str
    generated: bool
    fallback: bool  # tokenize rejected the file; the regex lexer was used
    comments: tuple[Comment, ...]


@dataclass
class ScanStats:
    files_lexed: int = 0
    files_cached: int = 0
    fallback_files: list[str] = field(default_factory=list)
    lex_seconds: float = 0.0


def ripgrep_path() -> str | None:
    """The ``rg`` next to this interpreter (``pip install ripgrep``), else on PATH.

    The one beside ``sys.executable`` is the real binary; a pyenv shim on PATH
    costs a shell start per call.
    """
    here = Path(sys.executable).parent / "rg"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return proc.which("rg")


def find_candidates(root: Path, *, searcher: str = "auto") -> Candidates:
    """Every line of a Python/C-family file that matches a tag, by ripgrep or git grep."""
    rg = ripgrep_path() if searcher in ("auto", "rg") else None
    if searcher == "rg" and rg is None:
        raise OnboardError(
            "ripgrep (`rg`) was asked for but is not installed.",
            next_step="Run `pip install ripgrep`, or use --searcher git.",
        )
    start = time.monotonic()
    if rg is not None:
        hits = _ripgrep(rg, root)
        version = _rg_version(rg)
        return Candidates(f"ripgrep {version}".strip(), hits, time.monotonic() - start)
    from onboard import git

    if not git.is_repo(root):
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
    text = git.grep_null(root, ERE_PATTERN, list(_GLOBS))
    found: dict[str, list[int]] = {}
    for row in text.splitlines():
        parts = row.split("\0", 2)
        if len(parts) >= 2 and parts[1].isdigit():
            found.setdefault(parts[0], []).append(int(parts[1]))
    return Candidates("git grep", _sorted(found), time.monotonic() - start)


def _ripgrep(rg: str, root: Path) -> dict[str, list[int]]:
    args = [
        rg,
        "--no-config",
        "--no-heading",
        "--with-filename",
        "--line-number",
        "--null",
        "--color=never",
        "--no-ignore-parent",
        "--max-columns=1",  # the text is read from the file later; keep the pipe small
        "-e",
        RG_PATTERN,
    ]
    for glob in _GLOBS:
        args += ["-g", glob]
    args.append(".")
    result = proc.run(args, cwd=root, check=False, timeout=600, what="ripgrep")
    if result.returncode not in (0, 1):  # 1: no match
        raise OnboardError(
            f"ripgrep failed in {root} (exit {result.returncode}): {result.stderr.strip()[-300:]}",
            next_step="Check that the folder is readable, or run with --searcher git.",
        )
    hits: dict[str, list[int]] = {}
    for row in result.stdout.splitlines():
        path, sep, rest = row.partition("\0")
        if not sep:
            continue
        number, _, _ = rest.partition(":")
        if number.isdigit():
            hits.setdefault(path.removeprefix("./"), []).append(int(number))
    return _sorted(hits)


def _sorted(hits: dict[str, list[int]]) -> dict[str, list[int]]:
    return {p: sorted(set(v)) for p, v in sorted(hits.items())}


def _rg_version(rg: str) -> str:
    result = proc.run([rg, "--version"], check=False, timeout=30)
    first = result.stdout.splitlines()[0] if result.stdout else ""
    return first.split()[1] if len(first.split()) > 1 else ""


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
# The per-file cache


def cache_dir() -> Path:
    return onboard_cache.cache_dir("harvest")


def _cache_file(root: Path, directory: Path) -> Path:
    key = hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:16]
    return directory / f"scan-{key}.json"


write_json = onboard_cache.write_json


# path -> [size, mtime_ns, generated, fallback, [[line, end_line, col, text], ...]]
CACHE_SHAPE = {
    "version": int,
    "files": {
        str: onboard_cache.Row(int, int, bool, bool, [onboard_cache.Row(int, int, int, str)])
    },
}


def _load_cache(path: Path) -> dict[str, list[object]]:
    data = onboard_cache.read_valid(path, CACHE_SHAPE)
    if data.get("version") != CACHE_VERSION:
        return {}
    files: dict[str, list[object]] = data["files"]
    return files


def _save_cache(path: Path, files: dict[str, list[object]]) -> None:
    write_json(path, {"version": CACHE_VERSION, "files": files})


def load_cache(root: Path, cache: Path | None) -> dict[str, list[object]]:
    """The cached lexer results for ``root`` (empty when there are none)."""
    return _load_cache(_cache_file(root, cache)) if cache is not None else {}


# Lexing every Python file with a hit through tokenize costs ~15 s of CPU on
# the wheel's tree (tokenize is pure Python): spread a cold run over the
# cores. Below this many files, starting the workers costs more than it saves.
PARALLEL_MIN_FILES = 200


def lex_files(
    root: Path,
    hits: dict[str, list[int]],
    *,
    cache: Path | None,
    progress: Callable[[int, int, str], None] | None = None,
    cached: dict[str, list[object]] | None = None,
    workers: int | None = None,
) -> tuple[list[FileComments], ScanStats]:
    """Tagged comments of every file with a hit (cached per file by size and mtime).

    ``cached``: what ``load_cache`` returned, when the caller loaded it already.
    ``workers``: processes for the files to lex (default: the CPU count when
    there are at least PARALLEL_MIN_FILES of them, else 1).
    """
    stats = ScanStats()
    cache_path = _cache_file(root, cache) if cache is not None else None
    old = cached if cached is not None else load_cache(root, cache)
    new: dict[str, list[object]] = {}
    start = time.monotonic()
    todo: list[tuple[str, str, int, list[int]]] = []
    for path, lines in hits.items():
        try:
            st = (root / path).stat()
        except OSError:
            continue
        key = [st.st_size, st.st_mtime_ns]
        entry = old.get(path)
        if entry is not None and entry[0] == key[0] and entry[1] == key[1]:
            stats.files_cached += 1
            new[path] = entry
        else:
            todo.append((str(root / path), path, lines[-1], key))
    if workers is None:
        workers = (os.cpu_count() or 1) if len(todo) >= PARALLEL_MIN_FILES else 1
    for n, (path, entry) in enumerate(_lex_many(todo, workers)):
        new[path] = entry
        stats.files_lexed += 1
        if progress is not None:
            progress(n + 1, len(todo), path)
    out: list[FileComments] = []
    for path in hits:
        entry = new.get(path)
        if entry is None:
            continue
        generated, fallback, raw = bool(entry[2]), bool(entry[3]), entry[4]
        if fallback:
            stats.fallback_files.append(path)
        comments = tuple(Comment(*c) for c in raw)  # type: ignore[attr-defined]
        out.append(FileComments(path, generated, fallback, comments))
    stats.lex_seconds = time.monotonic() - start
    if cache_path is not None and (stats.files_lexed or set(new) != set(old)):
        _save_cache(cache_path, new)
    return out, stats


def _lex_many(
    todo: list[tuple[str, str, int, list[int]]], workers: int
) -> Iterator[tuple[str, list[object]]]:
    if workers <= 1 or len(todo) < 2:
        for job in todo:
            yield job[1], _lex_job(job)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn, not fork: the parent may run threads (rich's progress refresh).
    context = multiprocessing.get_context("spawn")
    chunk = max(1, len(todo) // (workers * 8))
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for job, entry in zip(todo, pool.map(_lex_job, todo, chunksize=chunk), strict=True):
            yield job[1], entry


def _lex_job(job: tuple[str, str, int, list[int]]) -> list[object]:
    full, path, stop_line, key = job
    return _lex_one(Path(full), path, stop_line, key)


def _lex_one(full: Path, path: str, stop_line: int, key: list[int]) -> list[object]:
    try:
        source = full.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return [*key, False, False, []]
    from onboard.workflows.harvest import lexer  # tokenize: only when a file is lexed

    comments, fallback = lexer.tagged_comments(path, source, stop_line)
    generated = generated_header(source)
    return [*key, generated, fallback, [[c.line, c.end_line, c.col, c.text] for c in comments]]
