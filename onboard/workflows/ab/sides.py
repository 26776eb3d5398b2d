"""What A and B are: an interpreter, and the Python sources it imports torch from.

- ``installed``: the interpreter's own torch.
- ``workspace``: the workspace build when `onboard build` made one; else the
  checkout's Python files over the installed compiled torch (the overlay:
  only the modules whose source differs from the installed file, so an
  unchanged checkout runs exactly the installed code).
- ``commit:REV``: that commit of the checkout in a temporary ``git worktree``,
  with the same overlay. Only Python changes can be measured this way; changes
  to compiled sources are listed as not measured.
- a path: another interpreter, with its own torch.

Every side runs in the same environment and the overlay costs no more to import
than the installed files it replaces: where the installed torch reads cached
bytecode, the overlaid modules are compiled beforehand into the run's folder
(``startup`` checks what still differs).

``prepared`` makes the sides and removes, in a ``finally``, exactly the
worktrees and the folder it made (Ctrl-C and SIGTERM included).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from onboard import git, jsonable, proc, torchenv
from onboard.errors import BadInput, NoWorkspace, OnboardError
from onboard.workflows.ab import startup, worktrees
from onboard.workspace import Workspace

INSTALLED = "installed"
WORKSPACE = "workspace"
COMMIT = "commit:"
_SKIP_DIRS = {"__pycache__", "csrc", ".git"}


@dataclass
class Side:
    label: str  # "A" or "B"
    spec: str  # as given
    python: str
    what: str  # one line for the report
    # module -> [checkout file, installed file, search path, precompiled bytecode or None]
    overlay: Path | None = field(default=None, metadata=jsonable.spec(omit=True))
    # the overlaid modules (`spec` is a field here: the metadata's is jsonable's)
    modules: list[str] = field(default_factory=list, metadata=jsonable.spec(key="overlaid_modules"))
    notes: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # set for this side's runs only
    interpreter: dict[str, object] = field(default_factory=dict)  # startup.interpreter()


def check_spec(text: str) -> str:
    """Refuse a spec that cannot name a side (BadInput, exit 2)."""
    if text in (INSTALLED, WORKSPACE) or (text.startswith(COMMIT) and len(text) > len(COMMIT)):
        return text
    if os.sep in text or text.startswith("."):
        return text
    raise BadInput(
        f"`{text}` is not a side onboard ab can run: use `installed`, `workspace`, "
        "`commit:REV` (e.g. commit:HEAD~1) or the path of another Python interpreter.",
        next_step="Run `onboard ab --help` for the options.",
    )


def torch_dir(python: str, cwd: Path) -> Path:
    """The folder of the interpreter's torch package (found, not imported)."""
    try:
        found = torchenv.find_packages(python, "torch", cwd=cwd, isolate=False).folders["torch"]
        why = "it has no torch"
    except OnboardError as exc:
        found, why = None, f"it failed: {exc.message}"
    if found is None:
        raise BadInput(
            f"{python} cannot be an A/B side: {why}.",
            next_step=f"Check it with `onboard doctor --python {python}`, or pass an "
            "interpreter that has torch.",
        )
    return found


def _interpreter(path: str) -> str:
    exe = Path(path).expanduser()
    if not exe.is_file() or not os.access(exe, os.X_OK):
        state = "does not exist" if not exe.exists() else "is not an executable file"
        raise BadInput(
            f"The interpreter {exe} {state}.",
            next_step="Pass the path of a Python executable, e.g. /path/to/venv/bin/python.",
        )
    return str(exe.absolute())


def module_map(source: Path, installed: Path) -> dict[str, list[object]]:
    """module -> [source file, installed file or None, package search path or None] for
    every ``torch`` module whose file under ``source/torch`` differs from the installed one."""
    found: dict[str, list[object]] = {}
    root = source / "torch"
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        rel = Path(folder).relative_to(root)
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            mine = Path(folder) / name
            theirs = installed / rel / name
            if theirs.is_file() and _same(mine, theirs):
                continue
            parts = ["torch", *rel.parts]
            package = name == "__init__.py"
            if not package:
                parts.append(name[:-3])
            search = None
            if package:
                home = installed / rel
                search = [str(home if home.is_dir() else Path(folder))]
            found[".".join(parts)] = [
                str(mine),
                str(theirs) if theirs.is_file() else None,
                search,
            ]
    return found


def _same(a: Path, b: Path) -> bool:
    try:
        if a.stat().st_size != b.stat().st_size:
            return False
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def installed_base(ws: Workspace) -> str | None:
    """The checkout commit whose files the installed torch was built from."""
    checkout = ws.checkout_path
    if ws.commit and git.refs.rev_parse(checkout, ws.commit):
        return ws.commit
    if ws.is_reference:  # the reference tree's own commit carries the trailers
        sha = git.core.out(
            checkout, "log", "-1", "--format=%H", "--grep=^Onboard-Torch-Commit:", check=False
        )
        return sha or None
    return None


def _not_measured(ws: Workspace, base: str | None, rev: str | None) -> list[str]:
    """Changed files since the installed commit that a rebuild would need."""
    from onboard.workflows.bisect.builds import needs_rebuild

    if base is None:
        return []
    args = ["diff", "--name-only", base] + ([rev] if rev else [])
    changed = git.core.out(ws.checkout_path, *args, check=False).split()
    return [p for p in changed if needs_rebuild(p)]


def _precompile(
    python: str, modules: dict[str, list[object]], installed: Path, out: Path
) -> dict[str, str]:
    """module -> its bytecode file, for the overlaid modules that should read bytecode."""
    if not modules:
        return {}
    out.mkdir(parents=True, exist_ok=True)
    listed = out / "modules.json"  # a file: a far commit can change thousands
    listed.write_text(json.dumps(modules), "utf-8")
    try:
        done: dict[str, str] = proc.ask_child(
            python, "_precompile_child.py", str(listed), str(out), str(installed / "__init__.py"),
            cwd=out, timeout=600, what="Compiling the overlay's modules",
        ).data  # fmt: skip
    except proc.NoAnswer:  # left to fail in the run itself, with its traceback
        return {}
    return done


def _overlay_side(
    label: str,
    spec: str,
    python: str,
    source: Path,
    installed: Path,
    work: Path,
    what: str,
    compiled: list[str],
) -> Side:
    modules = module_map(source, installed)
    bytecode = _precompile(python, modules, installed, work / f"bytecode-{label}")
    for name, entry in modules.items():
        entry.append(bytecode.get(name))
    path = work / f"overlay-{label}.json"
    path.write_text(json.dumps(modules), "utf-8")
    names = sorted(modules)
    shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
    side = Side(
        label,
        spec,
        python,
        f"{what}: {len(names)} module(s) from the checkout over the installed torch"
        + (f" ({shown})" if names else " (none differ: the installed code)"),
        overlay=path,
        modules=names,
    )
    if compiled:
        listed = ", ".join(compiled[:5]) + (" ..." if len(compiled) > 5 else "")
        side.notes.append(
            f"{len(compiled)} changed file(s) need a rebuild and are NOT in this measurement "
            f"(only Python is): {listed}"
        )
    return side


def _workspace_build(ws: Workspace) -> str | None:
    from onboard.workflows.bisect.builds import has_build_tree

    venv_python = ws.root / ".nox" / "build" / "bin" / "python"
    if venv_python.is_file() and has_build_tree(ws.checkout_path):
        return str(venv_python)
    return None


def _need_workspace(ws: Workspace | None, spec: str) -> Workspace:
    if ws is None:
        raise NoWorkspace(
            f"`{spec}` runs the script on a workspace checkout, and no onboard workspace was "
            "found here.",
            next_step="Run `onboard setup DIR --from-wheel` (offline) or `onboard setup DIR`, "
            "then run `onboard ab` inside DIR or pass --workspace DIR.",
        )
    return ws


@contextmanager
def prepared(
    specs: dict[str, str], ws: Workspace | None, python: str
) -> Iterator[tuple[list[Side], Path]]:
    """The sides, and a folder for the run's files; both removed afterwards."""
    parent = ws.root / worktrees.RUNS if ws is not None else None
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    run = worktrees.make_run_folder(parent)  # owned while this run lives (a kill: swept later)
    work = run.path
    added: list[tuple[Path, Path]] = []  # (repo, worktree) this run made
    try:
        sides = [_make(label, spec, ws, python, work, added) for label, spec in specs.items()]
        for side in sides:
            side.interpreter = startup.interpreter(side.python, work, proc.environ(side.env))
        yield sides, work
    finally:
        for repo, tree in added:
            git.worktree.remove(repo, tree)
        shutil.rmtree(work, ignore_errors=True)
        run.release()


def _make(
    label: str,
    spec: str,
    ws: Workspace | None,
    python: str,
    work: Path,
    added: list[tuple[Path, Path]],
) -> Side:
    if spec == INSTALLED:
        found = torch_dir(python, work)
        return Side(label, spec, python, f"the installed torch ({found}) of {python}")
    if spec == WORKSPACE:
        ws = _need_workspace(ws, spec)
        built = _workspace_build(ws)
        if built is not None:
            torch_dir(built, work)
            return Side(label, spec, built, f"the workspace build ({built}, `onboard build`)")
        installed = torch_dir(python, work)
        base = installed_base(ws)
        return _overlay_side(
            label,
            spec,
            python,
            ws.checkout_path,
            installed,
            work,
            f"the workspace checkout {ws.checkout_path}",
            _not_measured(ws, base, None),
        )
    if spec.startswith(COMMIT):
        ws = _need_workspace(ws, spec)
        rev = spec[len(COMMIT) :]
        checkout = ws.checkout_path
        sha = git.refs.rev_parse(checkout, rev) if git.repository.is_repo(checkout) else None
        if sha is None:
            raise BadInput(
                f"`{spec}`: {rev} is not a commit of the workspace checkout {checkout}.",
                next_step=f"Pick one from `git -C {checkout} log --oneline`.",
            )
        installed = torch_dir(python, work)
        tree = work / f"{worktrees.TREE_PREFIX}{label}"
        git.worktree.add(checkout, tree, sha)
        added.append((checkout, tree))
        return _overlay_side(
            label,
            spec,
            python,
            tree,
            installed,
            work,
            f"commit {sha[:12]} ({rev})",
            _not_measured(ws, installed_base(ws), sha),
        )
    exe = _interpreter(spec)
    found = torch_dir(exe, work)
    return Side(label, spec, exe, f"the torch ({found}) of {exe}")


def check_script(script: Path) -> Path:
    if not script.is_file():
        raise BadInput(
            f"The script {script} does not exist.",
            next_step="Pass the path of a Python file: `onboard ab bench.py`.",
        )
    if (script.parent / "torch" / "__init__.py").is_file():
        raise OnboardError(
            f"{script} sits next to a torch/ folder, so `import torch` in it imports that "
            "folder instead of the side's torch.",
            next_step="Move the script out of the checkout (e.g. into the workspace folder) "
            "and run `onboard ab` again.",
        )
    return script.resolve()
