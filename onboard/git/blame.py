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
