"""`onboard setup`: a workspace with PyTorch's source at exactly the installed commit.

Two kinds of checkout (``workspace.CLONE`` / ``workspace.REFERENCE``):

- a depth-1 git checkout of the installed torch's commit (``checkout.py``);
- with ``from_wheel``, a git-tracked reference tree rebuilt offline from the
  installed wheel (``reference_tree.py``).

Then the IDE/debugger files (``onboard/ide.py``), the workspace config
(``onboard.json``) and a generated ``noxfile.py`` whose sessions live in
``onboard.tasks.workspace``.

A new workspace is built in a hidden sibling folder and renamed into place at
the end, so a failure (an unreachable remote, a missing commit, Ctrl-C)
leaves nothing behind. Running setup again on a workspace checks it and
resumes; a checkout with local changes is never touched.
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import shutil
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import (
    files,
    git,
    ide,
    lock,
    pathnames,
    signals,
    staging,
    torchenv,
    transaction,
    workspace,
)
from onboard.errors import BadInput, OnboardError
from onboard.report import Reporter
from onboard.shell import quote
from onboard.workflows import checkout as checkout_mod
from onboard.workflows import reference_tree
from onboard.workflows.checkout import DEFAULT_FETCH_TIMEOUT, DEFAULT_REMOTE, FetchStats

if TYPE_CHECKING:
    from rich.console import Console

CHECKOUT_DIR = "pytorch"
GDB_FILE = "onboard.gdb"
NOXFILE = "noxfile.py"
# A reference tree's pack is ~25% of the sources at zlib level 1 (23 MiB for
# the 92 MB of the 2.13.0 wheel); the checked-out files are the sources.
REFERENCE_PACK_RATIO = 0.3


@dataclass
class SetupResult:
    """What `onboard setup` made. JSON keys are documented in ``to_json``."""

    workspace: Path
    checkout: Path
    checkout_kind: str
    commit: str | None
    commit_kind: str
    head: str | None
    tag: str | None
    remote: str | None
    torch_version: str
    python: str
    build_prefix: str | None
    has_debug_info: bool | None
    state: str  # created / resumed / unchanged
    actions: list[str] = field(default_factory=list)
    ide_files: list[ide.FileAction] = field(default_factory=list)
    gdb_file: Path | None = None
    noxfile: Path | None = None
    fetch: FetchStats | None = None
    reference: dict[str, Any] | None = None
    disk: dict[str, Any] = field(default_factory=dict)
    debugging: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """Keys: ok, state (created/resumed/unchanged), workspace, checkout,
        checkout_kind (clone/reference), commit (the torch source commit), commit_kind,
        head (the checkout's git HEAD), tag, remote, torch_version, python,
        build_prefix, has_debug_info, actions, ide_files [{path, action, backup,
        message}], gdb_file, noxfile, fetch {objects, bytes_received, fetched} or
        null, reference {files, bytes, generated_headers, vendored_includes} or
        null, disk {needed_bytes, free_bytes}, debugging {python, cpp}, notes,
        problems, seconds."""
        return {
            "ok": self.ok,
            "state": self.state,
            "workspace": str(self.workspace),
            "checkout": str(self.checkout),
            "checkout_kind": self.checkout_kind,
            "commit": self.commit,
            "commit_kind": self.commit_kind,
            "head": self.head,
            "tag": self.tag,
            "remote": self.remote,
            "torch_version": self.torch_version,
            "python": self.python,
            "build_prefix": self.build_prefix,
            "has_debug_info": self.has_debug_info,
            "actions": list(self.actions),
            "ide_files": [f.to_json() for f in self.ide_files],
            "gdb_file": str(self.gdb_file) if self.gdb_file else None,
            "noxfile": str(self.noxfile) if self.noxfile else None,
            "fetch": self.fetch.to_json() if self.fetch else None,
            "reference": self.reference,
            "disk": self.disk,
            "debugging": self.debugging,
            "notes": list(self.notes),
            "problems": list(self.problems),
            "seconds": round(self.seconds, 2),
        }

    def render(self, console: Console, verbose: bool) -> None:
        from rich.table import Table

        title = {
            "created": "Workspace created",
            "resumed": "Workspace updated",
            "unchanged": "Workspace checked: already up to date",
        }[self.state]
        table = Table(title=title, show_header=False, title_justify="left")
        table.add_column(style="bold")
        table.add_column()
        table.add_row("workspace", str(self.workspace))
        kind = (
            "reference tree from the installed wheel (no .cpp/.cu)"
            if self.checkout_kind == workspace.REFERENCE
            else "git checkout (depth 1)"
        )
        table.add_row("checkout", f"{self.checkout}  [dim]{kind}[/]")
        table.add_row("torch", f"{self.torch_version}  ({self.python})")
        commit = self.commit or "unknown"
        table.add_row(
            "commit", f"{commit}  [dim]{self.commit_kind}{' ' + self.tag if self.tag else ''}[/]"
        )
        if self.remote:
            table.add_row("remote", self.remote)
        table.add_row("build prefix", self.build_prefix or "not found in the libraries")
        if self.fetch and (verbose or self.fetch.bytes_received):
            table.add_row(
                "fetched",
                f"{self.fetch.objects} objects, "
                f"{checkout_mod.human_bytes(self.fetch.bytes_received)}",
            )
        if self.reference:
            table.add_row(
                "reference tree",
                f"{self.reference['files']} files; vendored headers under third_party/include: "
                f"{len(self.reference['vendored_includes'])} entries",
            )
        for f in self.ide_files:
            table.add_row("ide", f"{f.path}  [dim]{f.action}[/]")
        if self.gdb_file:
            table.add_row("gdb", f"{self.gdb_file}  [dim]gdb -x {self.gdb_file} -p <pid>[/]")
        table.add_row("python debugging", self.debugging.get("python", ""))
        table.add_row("C++ debugging", self.debugging.get("cpp", ""))
        table.add_row("time", f"{self.seconds:.1f} s")
        console.print(table)
        for f in self.ide_files:
            if f.message and (verbose or f.action == "side-file"):
                console.print(f"[yellow]note:[/] {f.message}")
        if verbose:
            for action in self.actions:
                console.print(f"[dim]- {action}[/]")
        for note in self.notes:
            console.print(f"[dim]note:[/] {note}")
        for problem in self.problems:
            console.print(f"[red]problem:[/] {problem}")
        console.print(f"Next: `cd {quote(self.workspace)} && nox -s verify` (or `onboard verify`).")


# ---------------------------------------------------------------------------
# entry point


def setup(
    dest: str | os.PathLike[str],
    *,
    python: str | None = None,
    remote: str | None = None,
    commit: str | None = None,
    from_wheel: bool = False,
    reference: str | os.PathLike[str] | None = None,
    with_submodules: bool = False,
    fetch_timeout: float = DEFAULT_FETCH_TIMEOUT,
    reporter: Reporter | None = None,
    final: bool = True,
) -> SetupResult:
    """``final``: setup is the whole command (not followed by a build), so a
    signal after the workspace is complete no longer undoes it."""
    started = time.monotonic()
    reporter = reporter or Reporter()
    root = Path(dest).expanduser().absolute()
    if root.is_symlink() and root.is_dir():
        # The workspace goes where the link points: the link itself cannot be
        # emptied (rmdir) and renamed over like a folder.
        root = root.resolve()
    if from_wheel and (remote or commit or reference or with_submodules):
        raise BadInput(
            "--from-wheel rebuilds the tree from the installed wheel; --remote, --commit, "
            "--reference and --with-submodules only apply to a git checkout.",
            next_step="Drop those options, or drop --from-wheel to fetch a checkout.",
        )
    if fetch_timeout <= 0:
        raise BadInput("--fetch-timeout must be a positive number of seconds.")
    if not str(dest).strip():
        raise BadInput(
            "The workspace folder is an empty name (an unset variable such as `$WS`?); onboard "
            "will not turn the current folder into a workspace by accident.",
            next_step="Name the folder: `onboard setup ~/pt-ws --from-wheel`.",
        )
    _check_name_room(root)
    existing = _existing_workspace(root)
    ref_path = _reference_clone(reference) if reference else None
    remote_url = _normalize_remote(remote) if not from_wheel else None

    reporter.step(f"probing the torch of {python or 'this interpreter'}")
    # The probe imports torch in a child (seconds); a reference tree only needs
    # the wheel's files, so it is built while the probe runs.
    with ThreadPoolExecutor(max_workers=1) as pool:
        plan = _Plan(
            root=root,
            env_future=pool.submit(torchenv.probe, python),
            wheel=_wheel_facts(python) if from_wheel else None,
            from_wheel=from_wheel,
            remote=remote_url,
            commit_arg=commit,
            reference=ref_path,
            with_submodules=with_submodules,
            fetch_timeout=fetch_timeout,
            reporter=reporter,
            final=final,
        )
        if plan.wheel is None:
            plan.env  # noqa: B018 - no torch found: the probe says why, before any work
        result = plan.create() if existing is None else plan.resume(existing)
    result.seconds = time.monotonic() - started
    return result


# The hidden staging folder beside DIR: ".{DIR}.onboard-partial-" + 8 hex digits.
_STAGING_EXTRA = len("..onboard-partial-") + 8


def _check_name_room(root: Path) -> None:
    """DIR's name must leave room for the staging folder's (exit 2, not ENAMETOOLONG later)."""
    problem = pathnames.long_name(str(root), extra=_STAGING_EXTRA)
    if problem:
        raise BadInput(
            f"onboard cannot make {root}: {problem} (the workspace is built in a hidden "
            f"folder `.{root.name[:12]}....onboard-partial-XXXXXXXX` beside it).",
            next_step="Pick a shorter folder name and run `onboard setup DIR` again.",
        )


def _existing_workspace(root: Path) -> workspace.Workspace | None:
    if root.exists() and not root.is_dir():
        raise BadInput(
            f"{root} exists and is not a folder.",
            next_step="Pick a new folder: `onboard setup DIR`.",
        )
    if (root / workspace.CONFIG_NAME).is_file():
        return workspace.load(root)
    if root.is_dir() and any(root.iterdir()):
        raise BadInput(
            f"{root} is not empty and is not an onboard workspace (no {workspace.CONFIG_NAME}); "
            "onboard will not write into it.",
            next_step="Pick a new or empty folder: `onboard setup NEW_DIR` (or "
            "`onboard setup NEW_DIR --from-wheel`).",
        )
    return None


def _reference_clone(reference: str | os.PathLike[str]) -> Path:
    path = Path(reference).expanduser().absolute()
    if not path.is_dir() or not git.is_repo(path):
        raise BadInput(
            f"--reference {path} is not a git clone.",
            next_step="Pass the folder of an existing PyTorch clone, or drop --reference.",
        )
    return path


def _normalize_remote(remote: str | None) -> str:
    if not remote:
        return DEFAULT_REMOTE
    # git runs inside the new repository: a relative path must become absolute.
    local = Path(remote).expanduser()
    if "://" not in remote and local.exists():
        return str(local.absolute())
    return remote


def _no_torch(env: torchenv.TorchEnv) -> OnboardError:
    exe = env.python.executable
    if env.import_error:
        error = env.import_error
        why = f"importing it fails ({error.get('type')}: {error.get('message')})"
    else:
        why = "no torch package is installed there"
    return OnboardError(
        f"The interpreter {exe} has no usable torch: {why}. onboard sets up the source of the "
        "torch a Python environment actually imports.",
        next_step=f"Pass the interpreter of the environment that has torch with `--python "
        f"/path/to/python`, or install torch there (`{quote(exe)} -m pip install torch`); "
        f"`onboard doctor --python {quote(exe)}` shows what it sees.",
    )


@dataclass(frozen=True)
class _WheelFacts:
    """What a reference tree needs, read from the wheel's files without importing torch."""

    torch_dir: Path
    version: str
    git_version: str | None


_VERSION_PY = re.compile(
    r"^(__version__|git_version)\s*(?::\s*\w+\s*)?=\s*['\"]([^'\"]*)['\"]", re.M
)


def _wheel_facts(python: str | None) -> _WheelFacts | None:
    """The torch package ``python`` would import and its ``torch/version.py``
    (written by tools/generate_torch_version.py; what torch.version reads)."""
    from onboard import proc

    code = (
        "import importlib.util as u\n"
        "s = u.find_spec('torch')\n"
        "print(s.origin if s and s.origin else '')\n"
    )
    try:
        found = proc.run([python or sys.executable, "-c", code], check=False, timeout=60)
    except OnboardError:
        return None  # the probe says what is wrong with this interpreter
    origin = found.stdout.strip().splitlines()[-1:] if found.ok else []
    if not origin or not origin[0]:
        return None
    torch_dir = Path(origin[0]).parent
    try:
        text = (torch_dir / "version.py").read_text(encoding="utf-8")
    except OSError:
        return None
    values = dict(_VERSION_PY.findall(text))
    if "__version__" not in values:
        return None
    return _WheelFacts(torch_dir, values["__version__"], values.get("git_version"))


def _check_disk(path: Path, need: int, what: str) -> dict[str, Any]:
    probe_at = path
    while not probe_at.exists():
        probe_at = probe_at.parent
    free = shutil.disk_usage(probe_at).free
    if free < need:
        raise OnboardError(
            f"{what} needs about {checkout_mod.human_bytes(need)} of disk, and only "
            f"{checkout_mod.human_bytes(free)} is free at {probe_at}.",
            next_step="Free some space or pick a folder on another disk; "
            "`onboard setup DIR --from-wheel` needs far less (about 150 MB).",
        )
    return {"needed_bytes": need, "free_bytes": free, "checked_at": str(probe_at)}


# ---------------------------------------------------------------------------


@dataclass
class _Plan:
    root: Path
    env_future: Future[torchenv.TorchEnv]
    wheel: _WheelFacts | None
    from_wheel: bool
    remote: str | None
    commit_arg: str | None
    reference: Path | None
    with_submodules: bool
    fetch_timeout: float
    reporter: Reporter
    final: bool = True

    @cached_property
    def env(self) -> torchenv.TorchEnv:
        """The probe's answer (waits for it); no torch is an error here."""
        env = self.env_future.result()
        if env.torch is None:
            raise _no_torch(env)
        return env

    # -- what to check out ---------------------------------------------------

    @property
    def kind(self) -> str:
        return workspace.REFERENCE if self.from_wheel else workspace.CLONE

    def target(self) -> tuple[str, str, str | None, bool]:
        """(what to fetch, commit kind, tag, is nightly)."""
        if self.commit_arg:
            return checkout_mod.check_commit_arg(self.commit_arg), "override", None, False
        c = self.env.commit
        version = self.env.torch.version if self.env.torch else "?"
        if c.kind == "unknown" or not c.sha:
            raise OnboardError(
                f"torch {version} does not say which commit it was built from "
                f"({c.note or 'no git_version'}).",
                next_step="Pass the commit with `onboard setup DIR --commit SHA` (the full sha), "
                "or run `onboard setup DIR --from-wheel` for a reference tree from the wheel.",
            )
        if len(c.sha) != 40:
            raise OnboardError(
                f"torch {version} is a local build that names only an abbreviated commit "
                f"({c.sha}); servers fetch by full sha.",
                next_step="Pass the full sha with `--commit` (`git rev-parse "
                f"{c.sha}` in the clone it was built from).",
            )
        return c.sha, c.kind, c.tag, c.kind == "nightly"

    # -- new workspace -------------------------------------------------------

    def create(self) -> SetupResult:
        target = self.target() if not self.from_wheel else None
        tree = self._tree_plan() if self.from_wheel else None
        disk = self._disk(tree)
        parent = self.root.parent
        made: list[Path] = []
        try:
            made = _make_parents(parent)
        except OSError as exc:
            raise self._unwritable(exc) from exc
        try:
            # Two `onboard setup` runs making the same folder: one waits for the other.
            with lock.acquire(
                parent / f".{self.root.name}.onboard-lock",
                command=f"setup {self.root}",
                what=str(self.root),
                remove_on_release=True,
            ):
                existing = _existing_workspace(self.root)
                if existing is not None:  # the other run made it meanwhile
                    return self.resume(existing)
                result = self._create_in_staging(parent, target, tree)
        except BaseException:
            _remove_empty(made)
            raise
        result.disk = disk
        result.actions.append(f"workspace moved into place at {self.root}")
        # git's stat cache, written with the checkout, marks the files written in the same
        # second as unsure; refreshed once now, a read-only `git status` (which writes no
        # cache back: gitlock.read_only_env) need not re-read them on every call.
        git.refresh_index(self.root / CHECKOUT_DIR)
        return result

    def _create_in_staging(
        self,
        parent: Path,
        target: tuple[str, str, str | None, bool] | None,
        tree: reference_tree.TreePlan | None,
    ) -> SetupResult:
        """Build the workspace in a hidden sibling folder, then rename it into place."""
        for stale in staging.sweep(parent, self.root.name):
            self.reporter.step(f"removed {stale.name}, left by an onboard setup that was killed")
        try:
            st = _new_staging(parent, self.root.name)
        except OSError as exc:
            raise self._unwritable(exc) from exc
        placed = False
        try:
            result = self._build(st.path, target, tree, state="created")
            with signals.critical():  # the rename is the commit point: whole or not at all
                try:
                    if self.root.exists():
                        self.root.rmdir()  # empty (checked above); rename needs the name free
                    os.rename(st.path, self.root)
                except OSError as exc:
                    raise self._unwritable(exc) from exc
                placed = True
                st.placed(self.root)
                if self.final:
                    signals.work_complete()
        except BaseException:
            if not placed:
                shutil.rmtree(st.path, ignore_errors=True)
            st.release()
            raise
        return result

    def _unwritable(self, exc: OSError) -> OnboardError:
        """A folder onboard cannot create or rename (read-only, not yours, a mount point)."""
        where = exc.filename or self.root.parent
        again = "onboard setup NEW_DIR" + (" --from-wheel" if self.from_wheel else "")
        how = (
            f"onboard builds the workspace in a hidden folder beside {self.root.name} and "
            "renames it into place, so it must be able to write in "
            f"{self.root.parent}"
        )
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.EBUSY):
            return BadInput(
                f"onboard cannot write {where} ({exc.strerror}); {how}.",
                next_step=f"Pick a folder you can write to (e.g. under your home): `{again}`.",
            )
        flag = " --from-wheel" if self.from_wheel else ""
        if self.root.is_symlink():
            # rmdir and rename act on the link, not the folder it points to.
            target = self.root.resolve()
            return BadInput(
                f"{self.root} is a symbolic link to {target}; {how}, which a link does not allow.",
                next_step="Pass the folder it points to: "
                f"`onboard setup {shlex.quote(str(target))}{flag}`.",
            )
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        return OnboardError(
            f"onboard could not create {where} ({exc.strerror}); {how}.",
            next_step=("Free some space or pick another folder" if full else "Pick another folder")
            + f": `{again}`.",
        )

    def _disk(self, tree: reference_tree.TreePlan | None) -> dict[str, Any]:
        if tree is not None:
            need = int(tree.total_bytes * (1 + REFERENCE_PACK_RATIO) * checkout_mod.MARGIN)
            return _check_disk(self.root, need, "The reference tree")
        need = checkout_mod.disk_estimate(
            with_submodules=self.with_submodules, reference=self.reference is not None
        )
        return _check_disk(self.root, need, "A depth-1 PyTorch checkout")

    def _tree_plan(self) -> reference_tree.TreePlan:
        torch_dir = self.wheel.torch_dir if self.wheel else self.env.torch.package_dir  # type: ignore[union-attr]
        torchgen_dir = torch_dir.parent / "torchgen"
        return reference_tree.plan(torch_dir, torchgen_dir if torchgen_dir.is_dir() else None)

    def _build(
        self,
        at: Path,
        target: tuple[str, str, str | None, bool] | None,
        tree: reference_tree.TreePlan | None,
        *,
        state: str,
    ) -> SetupResult:
        """Make the checkout under ``at`` (a staging folder) and the workspace files."""
        repo = at / CHECKOUT_DIR
        if tree is not None:
            result = self._make_reference(repo, tree, state)
        else:
            assert target is not None
            result = self._result(state)
            self._make_clone(repo, target, result)
        self._finish(at, result)
        return result

    def _result(self, state: str) -> SetupResult:
        env = self.env
        assert env.torch is not None
        return SetupResult(
            workspace=self.root,
            checkout=self.root / CHECKOUT_DIR,
            checkout_kind=self.kind,
            commit=env.commit.sha,
            commit_kind=env.commit.kind,
            head=None,
            tag=env.commit.tag,
            remote=self.remote,
            torch_version=env.torch.version,
            python=env.python.executable,
            build_prefix=env.build_prefix.prefix,
            has_debug_info=env.has_debug_info,
            state=state,
        )

    def _make_reference(self, repo: Path, tree: reference_tree.TreePlan, state: str) -> SetupResult:
        """Build the tree from the wheel's files, then check the probe agrees."""
        wheel = self.wheel
        if wheel is None:
            torch = self.env.torch
            assert torch is not None
            wheel = _WheelFacts(torch.package_dir, torch.version, torch.git_version)
        # One count everywhere: the wheel's files plus the version.txt the tree gets.
        files = len(tree.files) + 1
        self.reporter.step(f"building the reference tree from the wheel ({files} files)")
        installed = torchenv.classify(wheel.version, wheel.git_version)
        with self.reporter.task(
            "copying the wheel's files into git", total=len(tree.files)
        ) as task:
            head = reference_tree.build(
                repo,
                tree,
                torch_version=wheel.version,
                commit=installed.sha,
                version_txt=wheel.version.split("+", 1)[0],
                progress=lambda n, total: task.update(completed=n, total=total),
            )
        torch = self.env.torch
        assert torch is not None
        if (torch.package_dir, torch.version, self.env.commit.sha) != (
            wheel.torch_dir,
            wheel.version,
            installed.sha,
        ):
            # torch/version.py disagrees with the imported torch (an overlay, a
            # source tree on sys.path): trust the probe and build again.
            shutil.rmtree(repo)
            self.wheel = None
            return self._make_reference(repo, self._tree_plan(), state)
        result = self._result(state)
        result.head = head
        result.reference = {
            "files": files,
            "bytes": tree.total_bytes,
            "generated_headers": tree.generated,
            "vendored_includes": list(tree.vendored),
            "commit": head,
        }
        result.actions.append(f"reference tree committed as {head[:12]} ({files} files)")
        result.notes.append(
            "a reference tree holds the wheel's Python sources, headers and yaml at PyTorch's "
            "paths, but no .cpp/.cu files: commands that need them say so; "
            "`onboard setup NEW_DIR` gets a full checkout"
        )
        return result

    def _make_clone(
        self, repo: Path, target: tuple[str, str, str | None, bool], result: SetupResult
    ) -> None:
        assert self.remote is not None
        what, kind, tag, nightly = target
        stats = FetchStats()
        sha, notes, problems = checkout_mod.make_checkout(
            repo,
            remote=self.remote,
            target=what,
            nightly=nightly,
            reference=self.reference,
            with_submodules=self.with_submodules,
            fetch_timeout=self.fetch_timeout,
            reporter=self.reporter,
            stats=stats,
        )
        result.commit, result.commit_kind, result.tag = sha, kind, tag
        result.head = sha
        result.fetch = stats
        result.notes += notes
        result.problems += problems
        result.actions.append(f"checked out {sha[:12]} from {self.remote} (depth 1)")
        installed = self.env.torch.git_version if self.env.torch else None
        if kind == "override" and installed and installed != sha:
            result.notes.append(
                f"--commit {what} is not the installed torch's commit ({installed}): "
                "breakpoints and line numbers may not match the binary"
            )

    # -- the files around the checkout ----------------------------------------

    def _finish(self, at: Path, result: SetupResult) -> None:
        """IDE files, gdb file, noxfile and onboard.json, written under ``at`` with
        paths that name the final location ``self.root``."""
        env = self.env
        assert env.torch is not None
        final_checkout = self.root / CHECKOUT_DIR
        repo = at / CHECKOUT_DIR
        prefix = env.build_prefix.prefix
        actions = ide.write_vscode(
            repo / ".vscode",
            checkout=final_checkout,
            python=env.python.executable,
            prefix=prefix,
            torch_dir=env.torch.package_dir,
            again=f"onboard setup {quote(self.root)}"
            + (" --from-wheel" if self.from_wheel else ""),
            python_version=env.python.version,
        )
        # The files name the final paths, not the staging folder they were written in.
        result.ide_files = [
            ide.FileAction(
                _relocate(a.path, at, self.root),
                a.action,
                _relocate(a.backup, at, self.root) if a.backup else None,
                a.message.replace(str(at), str(self.root)),
            )
            for a in actions
        ]
        if git.add_exclude(repo, "/.vscode/"):
            result.actions.append("added /.vscode/ to .git/info/exclude (kept out of git status)")
        gdb_path = at / GDB_FILE
        files.write_text(gdb_path, ide.gdb_script(prefix, final_checkout, self.root / GDB_FILE))
        result.gdb_file = self.root / GDB_FILE
        result.noxfile = self.root / NOXFILE
        result.actions += _write_noxfile(at / NOXFILE, self.root, result)
        result.debugging = _debugging(result, env)
        ws = workspace.Workspace(
            root=at,
            torch_version=result.torch_version,
            commit=result.commit,
            commit_kind=result.commit_kind,
            build_prefix=prefix,
            python=env.python.executable,
            checkout=CHECKOUT_DIR,
            checkout_kind=self.kind,
            remote=self.remote,
            tag=result.tag,
            notes=tuple(result.notes),
            extra={
                "head": result.head,
                "target": self.commit_arg or env.commit.sha,
                "installed_git_version": env.torch.git_version,
                "installed_commit_kind": env.commit.kind,
                "has_debug_info": env.has_debug_info,
                "torch_dir": str(env.torch.package_dir),
                "ide": {
                    "settings": str(result.ide_files[0].path),
                    "launch": str(result.ide_files[1].path),
                    "gdb": str(result.gdb_file),
                },
                "reference": result.reference,
                "fetch": result.fetch.to_json() if result.fetch else None,
            },
        )
        workspace.save(ws)

    # -- an existing workspace -------------------------------------------------

    def resume(self, old: workspace.Workspace) -> SetupResult:
        from onboard.workflows import resume

        return resume.resume(self, old, CHECKOUT_DIR)

    def rebuild_checkout(
        self, old: workspace.Workspace, tx: transaction.Transaction
    ) -> SetupResult:
        """Make a missing checkout again (nothing of the user's is there to keep)."""
        target = self.target() if not self.from_wheel else None
        tree = self._tree_plan() if self.from_wheel else None
        disk = self._disk(tree)
        for stale in staging.sweep(old.root, CHECKOUT_DIR):
            self.reporter.step(f"removed {stale.name}, left by an onboard setup that was killed")
        st = _new_staging(old.root, CHECKOUT_DIR)
        repo = old.root / CHECKOUT_DIR
        try:
            if tree is not None:
                result = self._make_reference(st.path / CHECKOUT_DIR, tree, "resumed")
            else:
                assert target is not None
                result = self._result("resumed")
                self._make_clone(st.path / CHECKOUT_DIR, target, result)
            result.disk = disk
            with signals.critical():
                tx.created_tree(repo)
                if repo.exists():
                    repo.rmdir()  # an empty folder (resume refuses one with files)
                os.rename(st.path / CHECKOUT_DIR, repo)
        finally:
            shutil.rmtree(st.path, ignore_errors=True)
            st.release()
        self._finish(old.root, result)
        return result

    def update_submodules(self, repo: Path, result: SetupResult) -> None:
        notes, problems = checkout_mod.update_submodules(
            repo, fetch_timeout=self.fetch_timeout, reporter=self.reporter
        )
        result.notes += notes
        result.problems += problems


def _make_parents(folder: Path) -> list[Path]:
    """mkdir -p, returning the folders it created (to remove them on failure)."""
    missing = []
    probe = folder
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    made: list[Path] = []
    try:
        for path in reversed(missing):
            path.mkdir()
            made.append(path)
    except OSError:
        _remove_empty(made)
        raise
    return made


def _remove_empty(made: list[Path]) -> None:
    for folder in reversed(made):
        try:
            folder.rmdir()
        except OSError:
            break


def _new_staging(parent: Path, name: str) -> staging.Staging:
    return staging.make(parent, name)


def _relocate(path: Path, at: Path, root: Path) -> Path:
    try:
        return root / path.relative_to(at)
    except ValueError:
        return path


def _write_noxfile(path: Path, root: Path, result: SetupResult) -> list[str]:
    from onboard.render import render

    text = render(
        "setup/noxfile.py.j2",
        torch_version=result.torch_version,
        commit=result.commit or "unknown",
        root=str(root),
    )
    if path.exists():
        old = path.read_text(encoding="utf-8", errors="replace")
        if old == text:
            return []
        code = [ln for ln in old.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        ours = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        if code != ours:
            backup = ide._free_backup(path)
            files.write_text(backup, old)
            files.write_text(path, text)
            return [f"noxfile.py had your changes: backed up to {backup.name}, then regenerated"]
    files.write_text(path, text)
    return ["wrote noxfile.py (sessions from onboard.tasks.workspace)"]


def _debugging(result: SetupResult, env: torchenv.TorchEnv) -> dict[str, str]:
    python = (
        "works now: the debugpy launch config (justMyCode off) stops at breakpoints in the "
        "checkout's torch/*.py, mapped to the installed torch"
    )
    if result.commit_kind == "override":
        python += " (the checkout is not the installed commit: lines may differ)"
    # A script saved in the checkout's root imports the checkout's torch/, which
    # has no compiled libraries (PYTORCH_FACTS "Debugger and ABI facts").
    checkout = result.workspace / CHECKOUT_DIR
    python += (
        f"; keep the scripts you run out of {checkout}'s root folder (e.g. in "
        f"{result.workspace}): a script saved there imports the checkout's torch/, which has "
        "no compiled libraries, instead of the installed torch"
    )
    if ide.safe_path_supported(env.python.version):
        python += (
            " (the debugpy config sets PYTHONSAFEPATH=1, so debugging one from there still "
            "uses the installed torch; debugpy 1.8.22 honours it, older releases may not)"
        )
    else:
        python += f" (Python {env.python.version} has no PYTHONSAFEPATH to prevent it)"
    prefix = env.build_prefix.prefix
    if result.checkout_kind == workspace.REFERENCE:
        cpp = (
            "needs a full checkout and a debug build: a reference tree has headers but no "
            ".cpp/.cu sources (`onboard setup NEW_DIR`, then `onboard build`)"
        )
    elif env.has_debug_info:
        cpp = (
            f"the libraries carry debug info: attach with the cppdbg config or "
            f"`gdb -x {quote(result.workspace / GDB_FILE)}`; {prefix} maps to the checkout"
        )
    elif env.has_debug_info is False:
        cpp = (
            "the installed libraries have no DWARF debug info (a release wheel): gdb shows C++ "
            "function names but cannot step into C++ source lines; `onboard build` makes a "
            "debug build of this checkout that can"
        )
    else:
        cpp = (
            "unknown: onboard could not read the torch libraries to tell whether they have "
            "debug info"
        )
    if not prefix:
        cpp += "; no build prefix was found, so no source mapping was written"
    return {"python": python, "cpp": cpp}
