"""Which checkout `reviews` and `blame` read, and what the user named in it.

The checkout is ``--repo``, else the workspace's (``--workspace``, found by
walking up), else the git repository around the current folder. A target is a
file (relative to the current folder or to the checkout's top; an old name that
history renamed is followed to today's), or an op `onboard where` knows, whose
files it names.
"""

from __future__ import annotations

import difflib
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onboard import git
from onboard.errors import BadInput, NoWorkspace
from onboard.workspace import CLONE, Workspace

DEFAULT_UPSTREAM = "pytorch/pytorch"

# Files every op's pull request touches: only the op's own entry in them counts.
REGISTRIES = {
    "aten/src/ATen/native/native_functions.yaml": re.compile(r"^- func:"),
    "tools/autograd/derivatives.yaml": re.compile(r"^- name:"),
    "torch/testing/_internal/common_methods_invocations.py": re.compile(r"^    \w*Info\("),
}
_ENTRY_MAX_LINES = 40


@dataclass(frozen=True)
class Tree:
    repo: Path  # the top of the checkout
    ws: Workspace | None
    kind: str  # clone (onboard's, may fetch history) / repo (the user's, used as is) / reference
    commit: str | None  # the installed torch's commit when this checkout is of it
    upstream: str = DEFAULT_UPSTREAM

    @property
    def is_reference(self) -> bool:
        return self.kind == "reference"


@dataclass(frozen=True)
class Target:
    """A file to read history for; ``ranges`` narrow it to an op's own lines."""

    path: str
    ranges: tuple[tuple[int, int], ...] = ()
    why: str = ""


def pulls_repo(repo: Path) -> str | None:
    """OWNER/NAME whose pull requests a subject's ``(#1013)`` names. In a tree that is
    PyTorch's (a clone of a fork, of a mirror or of a local path), pytorch/pytorch's:
    the numbers in PyTorch's history are its PRs, and a fork on GitHub has none of them.
    In any other repository, its own GitHub remote's (``git.remote.github_repo``), and
    None without one: the number then links nowhere."""
    if (repo / "aten/src/ATen/native/native_functions.yaml").is_file() and (
        repo / "torch" / "__init__.py"
    ).is_file():
        return DEFAULT_UPSTREAM
    return git.remote.github_repo(repo)


def open_tree(workspace: str | None, repo: str | None, upstream: str = DEFAULT_UPSTREAM) -> Tree:
    from onboard import workspace as ws_mod

    ws = ws_mod.find(workspace) if (repo is None or workspace is not None) else None
    if repo is not None:
        named = Path(repo).expanduser()
        top = git.repository.toplevel(named) if named.is_dir() else None
        if top is None:
            refused = git.repository.refusal(named, usage=True)  # another user's repository
            if refused is not None:
                raise refused
            state = "does not exist" if not named.exists() else "is not inside a git repository"
            raise BadInput(
                f"--repo {named} {state}.",
                next_step="Pass the path of a PyTorch checkout (a git clone) with --repo.",
            )
        root = top
        if ws is not None and Path(ws.checkout_path).resolve() != root.resolve():
            ws = None
    elif ws is not None:
        root = ws.checkout_path.resolve()
    else:
        top = git.repository.toplevel(Path.cwd())
        if top is None:
            refused = git.repository.refusal(Path.cwd())
            if refused is not None:
                raise refused
            raise NoWorkspace(
                f"No PyTorch checkout here: {Path.cwd()} is neither in an onboard workspace "
                "nor in a git repository.",
                next_step="Run this inside your PyTorch clone, pass --repo PATH, or make a "
                "workspace: `onboard setup DIR` (a clone, which fetches history when needed).",
            )
        root = top
    if ws is not None and ws.is_reference:
        return Tree(root, ws, "reference", ws.commit, upstream)
    if ws is not None and ws.checkout_kind == CLONE:
        return Tree(root, ws, "clone", ws.commit, upstream)
    return Tree(root, ws, "repo", None, upstream)


def quote(path: str) -> str:
    return shlex.quote(path)


def repo_path(tree: Tree, name: str, *, tracked: list[str] | None = None) -> str:
    """``name`` (relative to the current folder, or to the checkout's top) as a path
    in the checkout; an old name history renamed becomes today's; anything else is
    bad input naming the closest files."""
    name = name.strip()
    here = Path(name).expanduser()
    candidates = [here if here.is_absolute() else Path.cwd() / here, tree.repo / name]
    for cand in candidates:
        try:
            rel = cand.resolve().relative_to(tree.repo.resolve())
        except ValueError:
            continue
        if cand.is_file():
            return rel.as_posix()
    rel_name = name.lstrip("./")
    if not tree.is_reference:
        renamed = git.history.renamed_to(tree.repo, rel_name)
        if renamed and (tree.repo / renamed).is_file():
            return renamed
    files = tracked if tracked is not None else git.status.tracked_files(tree.repo)
    closest = closest_names(rel_name, files)
    hint = f" Closest names: {', '.join(closest)}." if closest else ""
    raise BadInput(
        f"{name} is not a file in the checkout {tree.repo}.{hint}",
        next_step=(
            f"Use a path from the checkout's top, e.g. `{quote(closest[0])}`."
            if closest
            else f"List the files with `git -C {quote(str(tree.repo))} ls-files | grep NAME`."
        ),
    )


def closest_names(name: str, files: list[str], n: int = 5) -> list[str]:
    base = name.rsplit("/", 1)[-1]
    same_base = [f for f in files if f.rsplit("/", 1)[-1] == base]
    by_path = difflib.get_close_matches(name, files, n=n, cutoff=0.6)
    bases = {f.rsplit("/", 1)[-1]: f for f in files}
    by_base = [bases[b] for b in difflib.get_close_matches(base, list(bases), n=n, cutoff=0.75)]
    return list(dict.fromkeys(same_base + by_path + by_base))[:n]


def line_count(tree: Tree, path: str) -> int:
    with open(tree.repo / path, "rb") as fh:
        return sum(1 for _ in fh)


def entry_range(tree: Tree, path: str, line: int) -> tuple[int, int]:
    """The lines of the entry starting at ``line`` in a registry file (up to the next entry)."""
    start = re.compile(REGISTRIES[path].pattern)
    try:
        lines = (tree.repo / path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return (line, line)
    end = line
    for n in range(line + 1, min(len(lines), line + _ENTRY_MAX_LINES) + 1):
        if start.match(lines[n - 1]):
            break
        end = n
    while end > line and not lines[end - 1].strip():
        end -= 1
    return (line, end)


def op_targets(tree: Tree, op: str, where_result: Any) -> list[Target]:
    """The files `onboard where OP` names: kernels and Python sources whole, the
    registry files (native_functions.yaml, derivatives.yaml, the OpInfo list) as
    the op's own entries."""
    found: dict[str, Target] = {}
    ranged: dict[str, list[tuple[int, int]]] = {}

    def add(loc: Any, why: str) -> None:
        if loc is None or not loc.in_checkout or loc.generated or not loc.path:
            return
        path = loc.path
        if path in REGISTRIES and loc.line:
            ranged.setdefault(path, []).append(entry_range(tree, path, loc.line))
            found.setdefault(path, Target(path, (), why))
        elif path not in found:
            found[path] = Target(path, (), why)

    for e in where_result.entry_points:
        add(e.source, f"Python entry point {e.name}")
    for y in where_result.yaml_entries:
        add(y.location, f"{op} in native_functions.yaml")
    for k in where_result.kernels:
        add(k.location, f"{k.role} {k.name}")
    for d in where_result.derivatives:
        add(d.location, f"derivative of {d.name}")
    for o in where_result.opinfo:
        add(o, "OpInfo (the op's tests)")
    out = []
    for path, target in found.items():
        spans = tuple(sorted(set(ranged.get(path, []))))
        out.append(Target(path, spans, target.why))
    return out


def looks_like_path(name: str) -> bool:
    return "/" in name or bool(re.search(r"\.(?:py|pyi|cpp|cu|cuh|h|hpp|c|yaml|txt|md)$", name))


def resolve_targets(
    tree: Tree, names: list[str], *, op_files: Any = None
) -> tuple[list[Target], list[str]]:
    """Targets for ``names``, and the op names among them (resolved by ``op_files``:
    name -> targets, which runs `onboard where`)."""
    targets: list[Target] = []
    ops: list[str] = []
    tracked: list[str] | None = None
    for name in names:
        exists = (Path(name).expanduser().exists()) or (tree.repo / name).exists()
        if exists or looks_like_path(name):
            if tracked is None and not exists:
                tracked = git.status.tracked_files(tree.repo)
            targets.append(Target(repo_path(tree, name, tracked=tracked), (), "named"))
        else:
            ops.append(name)
            targets += op_files(name) if op_files is not None else []
    seen: dict[str, Target] = {}
    for t in targets:
        if t.path in seen:
            old = seen[t.path]
            # A whole file wins over an entry of it.
            ranges = (
                () if not old.ranges or not t.ranges else tuple(sorted({*old.ranges, *t.ranges}))
            )
            seen[t.path] = Target(t.path, ranges, old.why)
        else:
            seen[t.path] = t
    return list(seen.values()), ops
