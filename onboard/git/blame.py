"""Blame: who last changed each line, limited to the lines a user is shown (never a
whole tree)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from onboard.errors import OnboardError
from onboard.git import core, repository
from onboard.git.core import PathLike


@dataclass(frozen=True)
class BlameLine:
    """One line of ``git blame --porcelain``."""

    final_line: int  # in the file as it is now
    sha: str
    orig_line: int  # in the file as that commit left it
    orig_path: str  # the file's name in that commit (moves and copies followed)
    text: str
    boundary: bool = False  # the oldest commit of a shallow history: the line may be older
    previous: str | None = None  # "<sha> <path>" of the version before, when known


_HEADER = re.compile(r"^([0-9a-f]{40}) (\d+) (\d+)(?: (\d+))?$")


def blame(
    repo: PathLike,
    path: str,
    ranges: Sequence[tuple[int, int]],
    *,
    rev: str | None = None,
    ignore_revs: Iterable[str] = (),
    moves: bool = True,
    timeout: float = 600,
) -> list[BlameLine]:
    """``git blame --porcelain -M -C`` of the lines in ``ranges`` (1-based, inclusive),
    skipping ``ignore_revs`` as ``--ignore-rev`` does (their lines go to the commit
    before, where git can tell). A line of a shallow history's oldest commit is
    marked ``boundary`` (it may be older); ``--root`` keeps a real first commit unmarked."""
    args = ["blame", "--porcelain", "--root"]
    if moves:
        args += ["-M", "-C"]
    for sha in ignore_revs:
        args += ["--ignore-rev", sha]
    for start, end in ranges:
        args += ["-L", f"{start},{end}"]
    if rev:
        args.append(rev)
    args += ["--", path]
    result = core.git(
        repo, *args, check=False, timeout=timeout, what=f"`git blame` of {path}", whole=False
    )
    if result.returncode != 0:
        raise OnboardError(
            f"`git blame` of {path} failed: {result.stderr.strip() or 'no output'}",
            next_step="Check that the file is tracked in this checkout (`git ls-files "
            f"{path}`) and run the command again.",
        )
    shallow = set(repository.shallow_boundary(repo))
    return [
        replace(ln, boundary=True) if ln.sha in shallow else ln
        for ln in parse_porcelain(result.stdout)
    ]


def parse_porcelain(text: str) -> list[BlameLine]:
    """Blame's porcelain format: a header per line, commit details the first time a
    commit appears, then the line itself after a TAB."""
    details: dict[str, dict[str, str]] = {}
    out: list[BlameLine] = []
    current: tuple[str, int, int] | None = None
    for line in text.split("\n"):
        if current is None:
            mo = _HEADER.match(line)
            if mo:
                current = (mo.group(1), int(mo.group(2)), int(mo.group(3)))
                details.setdefault(current[0], {})
            continue
        if line.startswith("\t"):
            sha, orig, final = current
            info = details[sha]
            out.append(
                BlameLine(
                    final_line=final,
                    sha=sha,
                    orig_line=orig,
                    orig_path=info.get("filename", ""),
                    text=line[1:],
                    boundary=False,
                    previous=info.get("previous"),
                )
            )
            current = None
            continue
        key, _, value = line.partition(" ")
        details[current[0]][key] = value
    return out


def blame_porcelain(
    repo: PathLike,
    path: str,
    ranges: Sequence[tuple[int, int]],
    *,
    timeout: float = 120,
) -> str:
    """``git blame --porcelain -L a,b -L c,d -- path`` (one call per file)."""
    args = ["blame", "--porcelain"]
    for start, end in ranges:
        args += ["-L", f"{start},{end}"]
    args += ["--", path]
    return core.git(repo, *args, timeout=timeout, what=f"`git blame` of {path}").stdout


@dataclass(frozen=True)
class Hunk:
    """One hunk of ``git diff -U0``: the lines a commit removed and the lines it added
    in their place, ``start`` and ``count`` in the commit's version of the file."""

    start: int
    count: int
    removed: tuple[str, ...]
    added: tuple[str, ...]


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def hunks_of(repo: PathLike, line: BlameLine) -> list[Hunk] | None:
    """The hunks of the commit that ``line`` is blamed on, in its file (followed from
    the version before, ``previous``); None when git names no version before (the
    commit added the file, or the line came from a copy)."""
    if not line.previous or " " not in line.previous:
        return None
    before, before_path = line.previous.split(" ", 1)
    result = core.git(
        repo, "diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "-M",
        before, line.sha, "--", before_path, line.orig_path,
        check=False, timeout=None, what=f"`git diff` of {line.orig_path}", whole=False,
    )  # fmt: skip
    if result.returncode != 0:
        return None
    found: list[Hunk] = []
    current: tuple[int, int] | None = None
    removed: list[str] = []
    added: list[str] = []
    for text in result.stdout.split("\n"):
        mo = _HUNK.match(text)
        if mo:
            if current is not None:
                found.append(Hunk(*current, tuple(removed), tuple(added)))
            count = int(mo.group(2)) if mo.group(2) is not None else 1
            current, removed, added = (int(mo.group(1)), count), [], []
        elif current is not None and text.startswith("-"):
            removed.append(text[1:])
        elif current is not None and text.startswith("+"):
            added.append(text[1:])
    if current is not None:
        found.append(Hunk(*current, tuple(removed), tuple(added)))
    return found
