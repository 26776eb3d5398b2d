"""`onboard bisect repro.py`: the commit (or release) that changed what the repro does.

``run_bisect`` resolves the repository and interpreter, refuses what cannot
work before anything moves (a dirty tree, a bisect in progress, a GPU repro on
a machine without a GPU), optionally bisects released wheels first, then
steps ``git bisect`` over the commits, and always puts the repository back.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from onboard import git, transaction, workspace
from onboard.cache import writable_cache_dir
from onboard.errors import BadInput, OnboardError
from onboard.report import Reporter
from onboard.shell import quote
from onboard.workflows.bisect.builds import MODES, Builder, require_session_for_always
from onboard.workflows.bisect.commits import CommitBisector
from onboard.workflows.bisect.guard import Original, RepoGuard, check_startable, stamp
from onboard.workflows.bisect.model import BisectResult, CommitBisect, CommitInfo, Step, WheelBisect
from onboard.workflows.bisect.request import BisectRequest
from onboard.workflows.bisect.runner import ReproRunner, gpu_available, uses_cuda
from onboard.workflows.bisect.terms import Terms
from onboard.workflows.bisect.wheels import (
    VenvCache,
    WheelBisector,
    list_versions,
    pick_range,
    python_version,
)

__all__ = [
    "BisectRequest",
    "BisectResult",
    "CommitBisect",
    "CommitInfo",
    "Step",
    "Terms",
    "WheelBisect",
    "run_bisect",
]

ON_CRASH = ("bad", "skip")
# git refuses these as terms (builtin/bisect.c: check_term_format).
_RESERVED_TERMS = {
    "help",
    "start",
    "skip",
    "next",
    "reset",
    "visualize",
    "view",
    "replay",
    "log",
    "run",
    "terms",
}
_TERM = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def terms_from(term_old: str | None, term_new: str | None) -> Terms:
    if (term_old is None) != (term_new is None):
        raise BadInput(
            "--term-old and --term-new go together.",
            next_step="To find a fix: --term-old broken --term-new fixed.",
        )
    if term_old is None or term_new is None:
        return Terms()
    for flag, term in (("--term-old", term_old), ("--term-new", term_new)):
        if not _TERM.match(term) or term in _RESERVED_TERMS:
            raise BadInput(
                f"{flag} {term!r} cannot be a git bisect term (one word, not a bisect subcommand).",
                next_step="For example: --term-old broken --term-new fixed.",
            )
    if term_old == term_new:
        raise BadInput("--term-old and --term-new must differ.", next_step="E.g. broken / fixed.")
    if term_old in ("bad", "new") or term_new in ("good", "old"):
        raise BadInput(
            f"git only accepts 'good'/'old' as the old term and 'bad'/'new' as the new one "
            f"(got {term_old}/{term_new}).",
            next_step="To find a fix: --term-old broken --term-new fixed.",
        )
    return Terms(term_old, term_new)


_NO_REPO_NEXT = (
    "Pass --repo with the path of your PyTorch checkout (a git clone with the history to "
    "bisect), run inside your workspace (or pass --workspace), or run `onboard setup DIR` "
    "to make one."
)


def _no_repository(path: Path, named: str) -> OnboardError:
    """One paragraph (exit 2) for a folder outside any git repository, however it was
    given: --repo, or the current folder."""
    refused = git.repository.refusal(path, usage=True)  # a repository git refuses: why
    if refused is not None:
        return refused
    return BadInput(
        f"No repository to bisect: {named} {path} is not inside a git repository.",
        next_step=_NO_REPO_NEXT,
    )


def _resolve_repo(repo: str | None, ws: workspace.Workspace | None, wheels: bool) -> Path | None:
    if repo:
        path = Path(repo).expanduser()
        if path.is_dir() and not git.repository.is_repo(path):
            raise _no_repository(path, "--repo")
        return git.repository.named_root(repo, next_step=_NO_REPO_NEXT)
    if ws is not None:
        if ws.is_reference and wheels:
            return None  # a release bisect needs no checkout; run_bisect says why it stops there
        if ws.is_reference:
            raise OnboardError(
                ws.limitation("Bisecting commits") or "This workspace cannot be bisected.",
                next_step="Or pass --repo with a git checkout that has the history.",
            )
        return git.repository.get_root(ws.checkout_path)
    if git.repository.is_repo(Path.cwd()):
        return git.repository.get_root(Path.cwd())
    if wheels:
        return None
    # No onboard workspace was found either (workspace.find looked from here).
    raise _no_repository(Path.cwd(), "the current folder")


def _resolve_rev(repo: Path, ref: str, flag: str) -> str:
    sha = git.refs.rev_parse(repo, ref)
    if sha:
        return sha
    shallow = git.core.out(repo, "rev-parse", "--is-shallow-repository") == "true"
    raise BadInput(
        f"{flag} {ref} is not a commit in {repo}"
        + (" (the checkout is shallow, so older commits are not there)." if shallow else "."),
        next_step=(
            f"Fetch the history: `git -C {quote(repo)} fetch --unshallow --tags origin`."
            if shallow
            else f"Fetch tags with `git -C {quote(repo)} fetch --tags origin`, or pick a commit "
            f"from `git -C {quote(repo)} log --oneline --first-parent`."
        ),
    )


def _log_path(repo: Path, ws: workspace.Workspace | None, run_stamp: str) -> Path:
    if ws is not None:
        return ws.root / "bisect" / f"onboard-bisect-{run_stamp}.log"
    return git.repository.git_dir(repo) / f"onboard-bisect-{run_stamp}.log"


def _check(request: BisectRequest) -> Terms:
    """Refuse what cannot work before anything is looked at; the terms to bisect with."""
    if request.repeat < 1:
        raise BadInput("--repeat must be at least 1.", next_step="E.g. --repeat 3.")
    if request.timeout is not None and request.timeout <= 0:
        raise BadInput("--timeout must be a positive number of seconds.", next_step="E.g. 300.")
    if request.on_crash not in ON_CRASH:
        raise BadInput(f"--on-crash is bad or skip, not {request.on_crash!r}.", next_step="")
    if request.build not in MODES:
        raise BadInput(f"--build is never, auto or always, not {request.build!r}.", next_step="")
    terms = terms_from(request.term_old, request.term_new)
    if request.wheels and (request.good is None or request.bad in (None, "HEAD")):
        raise BadInput(
            "--wheels needs release versions for both --good and --bad.",
            next_step="For example: `onboard bisect repro.py --wheels --good 2.11.0 --bad 2.13.0`.",
        )
    return terms


def run_bisect(
    request: BisectRequest, reporter: Reporter | None = None, *, venv_root: Path | None = None
) -> BisectResult:
    """``venv_root``: where the release venvs of ``wheels`` are kept (default: the cache)."""
    reporter = reporter or Reporter()
    repro_path = Path(request.repro).expanduser().resolve()
    if not repro_path.is_file():
        raise BadInput(
            f"The repro {request.repro} does not exist.",
            next_step="Pass the path of a Python file that exits 0 when all is well and non-zero "
            "when the problem shows.",
        )
    terms = _check(request)

    ws = workspace.find(request.workspace, writing=True)
    repo_root = _resolve_repo(request.repo, ws, request.wheels)
    interpreter = request.python or (ws.python if ws else None) or sys.executable
    if shutil.which(interpreter) is None and not Path(interpreter).is_file():
        raise BadInput(
            f"The interpreter {interpreter} was not found.",
            next_step="Pass --python with the path of the interpreter your repro runs with.",
        )

    # A GPU repro on a machine without a usable GPU: refused before anything moves.
    source = repro_path.read_text(encoding="utf-8", errors="replace")
    gpu_why = ""
    if uses_cuda(source):
        has_gpu, gpu_why = gpu_available(interpreter)
        if not has_gpu:
            raise OnboardError(
                f"The repro {repro_path.name} uses CUDA, and this machine has no GPU it can use "
                f'({gpu_why}). Bisecting it here would read "no GPU" as the bug, so onboard will '
                "not start.",
                next_step="Run the same `onboard bisect` on a machine with an NVIDIA GPU and a "
                "CUDA build of torch (or make the repro reproduce on CPU).",
            )

    # With --wheels, a repository found only from the current folder may be the
    # user's own project: it is checked once its release tags are known to be there.
    from_cwd = request.wheels and not request.repo and ws is None
    original: Original | None = check_startable(repo_root) if repo_root and not from_cwd else None
    candidates: int | None = None
    if repo_root is not None and not request.wheels:
        old_sha = _resolve_rev(repo_root, request.good, "--good")
        new_sha = _resolve_rev(repo_root, request.bad, "--bad")
        candidates = _check_bounds(
            repo_root, request.good, request.bad, old_sha, new_sha, request.first_parent
        )

    result = BisectResult(
        repro=str(repro_path),
        python=interpreter,
        repeat=request.repeat,
        timeout=request.timeout,
        on_crash=request.on_crash,
        build=request.build,
    )
    runner = ReproRunner(repro_path, interpreter, request.timeout, request.on_crash)
    try:
        if repo_root is not None and repro_path.is_relative_to(repo_root.resolve()):
            # The repro lives in the tree bisect rewrites: run a copy, the same at every step.
            copy = runner.workdir / "repro" / repro_path.name
            copy.parent.mkdir(parents=True)
            shutil.copy2(repro_path, copy)
            runner.repro = copy
        old_ref, new_ref = request.good, request.bad
        if request.wheels:
            result.wheels = _wheel_level(
                request, interpreter, ws, venv_root, runner, reporter, terms, gpu_why
            )
            w = result.wheels
            if repo_root is None:
                tags = f"v{_public(w.last_old)} and v{_public(w.first_new)}"
                if ws is not None and ws.is_reference:
                    result.notes.append(
                        f"The commit level between {tags} was not run: this workspace's checkout "
                        "is the reference tree rebuilt from the wheel, which has no history. "
                        "Make a full checkout (`onboard setup NEW_DIR`) and pass it as --repo, "
                        "or run this again inside that workspace."
                    )
                    return result
                result.notes.append(
                    "No repository to continue at the commit level: pass --repo with a checkout "
                    f"that has the {tags} tags."
                )
                return result
            old_ref, new_ref = f"v{_public(w.last_old)}", f"v{_public(w.first_new)}"
            missing = [r for r in (old_ref, new_ref) if git.refs.rev_parse(repo_root, r) is None]
            if missing:
                result.notes.append(
                    f"The repository {repo_root} has no tag {' or '.join(missing)}, so the commit "
                    f"level was not run (fetch tags: `git -C {quote(repo_root)} fetch --tags "
                    "origin`)."
                )
                return result
            if original is None:
                original = check_startable(repo_root)
            old_sha = _resolve_rev(repo_root, old_ref, "--good")
            new_sha = _resolve_rev(repo_root, new_ref, "--bad")
            candidates = _check_bounds(
                repo_root, old_ref, new_ref, old_sha, new_sha, request.first_parent
            )
        assert repo_root is not None and original is not None
        result.commits = _commit_level(
            request,
            repo_root,
            ws,
            original,
            runner,
            reporter,
            terms,
            old_ref,
            new_ref,
            old_sha,
            new_sha,
            gpu_why,
            candidates,
        )
        return result
    finally:
        runner.close()


def _public(version: str | None) -> str:
    from packaging.version import Version

    return Version(version).public if version else ""


def _check_bounds(
    repo: Path, old_ref: str, new_ref: str, old: str, new: str, first_parent: bool
) -> int:
    """The number of commits to bisect between the bounds (refused when there are none)."""
    if old == new:
        raise BadInput(
            f"--good {old_ref} and --bad {new_ref} are the same commit ({old[:10]}).",
            next_step="Pass an older --good (a release tag or a commit where the repro passes).",
        )
    count = git.history.count_range(repo, old, new, first_parent=first_parent)
    if count == 0:
        raise BadInput(
            f"--bad {new_ref} has no commit that --good {old_ref} lacks: --good must be older.",
            next_step="Swap them; to find the commit that fixed something, keep --good as the "
            "older commit and add --term-old broken --term-new fixed.",
        )
    return count


def _wheel_level(
    request: BisectRequest,
    python: str,
    ws: workspace.Workspace | None,
    venv_root: Path | None,
    runner: ReproRunner,
    reporter: Reporter,
    terms: Terms,
    gpu_why: str,
) -> WheelBisect:
    package, index_url, find_links = request.package, request.index_url, request.find_links
    py_version = python_version(python)
    versions = list_versions(package, index_url, find_links, py_version)
    chosen = pick_range(versions, request.good, request.bad)
    root = venv_root or _default_venv_root(ws)
    venvs = VenvCache(root, package, python, py_version, index_url, find_links, reporter)
    bisector = WheelBisector(
        package, chosen, venvs, runner, reporter, request.repeat, terms.fix, gpu_why
    )
    return bisector.run()


def _default_venv_root(ws: workspace.Workspace | None) -> Path:
    if ws is not None:
        return ws.root / ".nox"
    return writable_cache_dir("bisect-venvs")


def _commit_level(
    request: BisectRequest,
    repo: Path,
    ws: workspace.Workspace | None,
    original: Original,
    runner: ReproRunner,
    reporter: Reporter,
    terms: Terms,
    old_ref: str,
    new_ref: str,
    old: str,
    new: str,
    gpu_why: str,
    candidates: int | None,
) -> CommitBisect:
    run_stamp = stamp()
    log_path = _log_path(repo, ws, run_stamp)
    noxfile = None
    if ws is not None and ws.checkout_path.resolve() == repo.resolve():
        candidate = ws.root / "noxfile.py"
        noxfile = candidate if candidate.is_file() else None
    builder = Builder(
        repo=repo,
        mode=request.build,
        noxfile=noxfile,
        log_dir=log_path.with_suffix(""),
        reporter=reporter,
        last_built=original.head,
    )
    require_session_for_always(builder)
    guard = RepoGuard(
        repo, original, reporter, log_path, resync_submodules=lambda: builder.synced_submodules
    )
    # One writer at a time in the repository; the transaction's audit also
    # proves that every ref and stash entry of the user's is where it was.
    with (
        transaction.begin(
            transaction.scope_for_repo(repo),
            command="bisect",
            what=f"the repository {repo}",
            reporter=reporter,
        ) as tx,
        guard,
    ):
        tx.watch(repo)
        guard.journal = tx
        bisector = CommitBisector(
            repo,
            runner,
            builder,
            reporter,
            guard,
            request.repeat,
            request.first_parent,
            terms,
            gpu_why,
        )
        result = bisector.run(old_ref, new_ref, old, new, original, candidates)
    result.log = guard.saved_log
    result.restored_to = original.describe()
    result.notes = guard.notes()
    return result
