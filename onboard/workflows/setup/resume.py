"""`onboard setup WS` on an existing workspace: check it, refresh onboard's
files, and follow a torch that changed, without ever replacing the repository.

The checkout is where the user's own work lives once they start changing
PyTorch (their branches, commits, stashes, untracked files), so:

- **torch unchanged**: nothing to rebuild, whatever branch is checked out;
  only onboard's files (IDE config, gdb script, noxfile, onboard.json) are
  refreshed.
- **torch changed, reference tree**: a new reference commit, child of the
  old one, goes on onboard's own branch ``reference``; each reference commit
  is kept as a tag ``onboard/reference-VERSION``. HEAD follows only when it is
  on ``reference`` and the fast-forward is clean; any other branch stays
  where it is and the result says how to rebase it.
- **torch changed, clone**: the new commit is fetched and tagged
  ``onboard/torch-VERSION`` (the old one too); HEAD moves to it only when it
  is still detached at the commit onboard checked out and nothing would be
  overwritten, else the result says how to move.
- **checkout gone** (an empty folder or none): made again in a hidden folder
  and renamed into place, as a new workspace's is.

Everything runs in the workspace transaction (``onboard/transaction/``):
one writer at a time, and a failure or signal rolls back exactly what this
run did.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from onboard import git, signals, staging, transaction, workspace
from onboard.errors import BadInput, OnboardError
from onboard.shell import quote
from onboard.workflows import reference_tree
from onboard.workflows.checkout import FetchStats, fetch_target
from onboard.workflows.setup import disk, sources, workspace_files
from onboard.workflows.setup.installed import Installed
from onboard.workflows.setup.layout import CHECKOUT_DIR
from onboard.workflows.setup.request import SetupJob
from onboard.workflows.setup.result import SetupResult, begin


def resume(req: SetupJob, installed: Installed, old: workspace.Workspace) -> SetupResult:
    """Check the workspace ``old`` and bring it to the installed torch (see above)."""
    if old.checkout_kind != req.kind:
        have = "a reference tree (--from-wheel)" if old.is_reference else "a git checkout"
        raise BadInput(
            f"{req.root} already holds {have}; onboard does not switch a workspace "
            "between a checkout and a reference tree.",
            next_step=f"Run `{req.new_dir_command}` for a new workspace, or "
            f"`{old.setup_command}` to refresh this one.",
        )
    if old.checkout != CHECKOUT_DIR:
        raise OnboardError(
            f"{old.config_path} names the checkout {old.checkout!r}; this onboard expects "
            f"{CHECKOUT_DIR!r}.",
            next_step=f"Set up a new workspace with `{req.new_dir_command}`.",
        )
    repo = old.root / old.checkout
    with transaction.in_workspace(
        old.root,
        command=f"setup {old.root}",
        reporter=req.reporter,
        final=req.final,
    ) as tx:
        if not (repo / ".git").exists():
            if repo.exists() and any(repo.iterdir()):
                raise OnboardError(
                    f"{repo} holds files but is not a git repository, so onboard will not "
                    "replace it: whatever is there may be yours.",
                    next_step=f"Move it away (`mv {repo} {repo}.mine`) and run "
                    f"`{old.setup_command}` again to make the checkout anew.",
                )
            req.reporter.step(f"{repo} is missing: making it again")
            return _rebuild_checkout(req, installed, old, tx)
        tx.watch(repo)
        if req.from_wheel:
            return _reference(req, installed, old, repo, tx)
        return _clone(req, installed, old, repo, tx)


# --- a reference tree -------------------------------------------------------


def _reference_commits(repo: Path, old: workspace.Workspace) -> list[tuple[str, dict[str, str]]]:
    """onboard's reference commits, newest claim first, with their trailers: the
    ``reference`` branch, the commit the config recorded (the user may have
    moved, amended or deleted the branch), and the tag of the config's torch."""
    recorded = (old.extra.get("reference") or {}).get("commit") or old.extra.get("head")
    names = [
        reference_tree.BRANCH,
        recorded if isinstance(recorded, str) else None,
        f"refs/tags/{reference_tree.tag_name(old.torch_version)}",
    ]
    found: list[tuple[str, dict[str, str]]] = []
    for name in names:
        sha = git.refs.rev_parse(repo, name) if name else None
        if sha and sha not in [s for s, _ in found]:
            trailers = reference_tree.trailers(git.history.commit_message(repo, sha))
            if trailers.get("Onboard-Torch-Version"):
                found.append((sha, trailers))
    return found


def _where(repo: Path) -> str:
    branch = git.refs.current_branch(repo)
    head = git.refs.head_sha(repo) or ""
    return f"branch `{branch}`" if branch else f"a detached HEAD at {head[:12]}"


def _reference(
    req: SetupJob,
    installed: Installed,
    old: workspace.Workspace,
    repo: Path,
    tx: transaction.Transaction,
) -> SetupResult:
    env = installed.env
    assert env.torch is not None
    version, commit = env.torch.version, env.commit.sha or "unknown"
    candidates = _reference_commits(repo, old)
    branch = git.refs.current_branch(repo)
    match = next(
        (
            sha
            for sha, t in candidates
            if (t.get("Onboard-Torch-Version"), t.get("Onboard-Torch-Commit")) == (version, commit)
        ),
        None,
    )
    if match is not None:
        return _reference_kept(req, installed, old, repo, match, branch)

    ref_sha = git.refs.ref_value(repo, reference_tree.BRANCH)
    found = candidates[0][1] if candidates else {}
    if candidates and ref_sha != candidates[0][0]:
        # `reference` holds the user's commits (or is gone): the new reference
        # commit still descends from onboard's last one.
        ref_sha = None
    parent = candidates[0][0] if candidates else None
    previous = found.get("Onboard-Torch-Version")
    req.reporter.step(
        f"torch changed ({previous or 'unknown'} -> {version}): adding a reference commit; "
        "your branches stay where they are"
    )
    tree = installed.tree_plan()
    needed = disk.check(req, tree)
    tx.own_ref(repo, reference_tree.NEXT_REF)
    if git.refs.ref_value(repo, reference_tree.NEXT_REF):
        git.refs.delete_ref(
            repo, reference_tree.NEXT_REF, git.refs.ref_value(repo, reference_tree.NEXT_REF) or ""
        )
    with req.reporter.task("writing the new reference commit with git fast-import", total=None):
        new = reference_tree.add_commit(
            repo,
            tree,
            torch_version=version,
            commit=env.commit.sha,
            version_txt=version.split("+", 1)[0],
            parent=parent,
        )
    old_tag = _keep_tag(tx, repo, reference_tree.tag_name(previous), parent) if previous else None
    _keep_tag(tx, repo, reference_tree.tag_name(version), new)
    result = begin(req, installed.env, "resumed")
    result.disk = needed
    _follow_reference(tx, repo, result, new, ref_sha, branch, old_tag, previous, version)
    git.refs.delete_ref(repo, reference_tree.NEXT_REF, new)
    result.head = git.refs.head_sha(repo)
    result.reference = sources.reference_record(tree, new)
    result.actions.append(
        f"reference commit {new[:12]} for torch {version} (tag {reference_tree.tag_name(version)})"
    )
    workspace_files.write(req, installed.env, old.root, result)
    return result


def _reference_kept(
    req: SetupJob,
    installed: Installed,
    old: workspace.Workspace,
    repo: Path,
    match: str,
    branch: str | None,
) -> SetupResult:
    """The installed torch's reference commit is there already: only onboard's files change."""
    version = installed.torch.version
    req.reporter.step(f"{repo} already holds the reference tree of torch {version}")
    result = begin(req, installed.env, "unchanged")
    result.head = git.refs.head_sha(repo)
    result.reference = {**(old.extra.get("reference") or {}), "commit": match}
    result.actions.append("reference tree kept as it is")
    if branch != "reference" or git.refs.ref_value(repo, reference_tree.BRANCH) != match:
        result.notes.append(
            f"the checkout is on {_where(repo)} (your work, left as it is); onboard's "
            f"reference commit for torch {version} is {match[:12]}"
        )
    result.notes += [n for n in old.notes if n not in result.notes]
    workspace_files.write(req, installed.env, old.root, result)
    return result


def _follow_reference(
    tx: transaction.Transaction,
    repo: Path,
    result: SetupResult,
    new: str,
    ref_sha: str | None,
    branch: str | None,
    old_tag: str | None,
    previous: str | None,
    version: str,
) -> None:
    """Move ``reference`` to the new commit where nothing of the user's is in the way;
    else say how the user moves it (``ref_sha`` None: the branch is not onboard's)."""
    on_reference = branch == reference_tree.BRANCH.removeprefix("refs/heads/")
    ref = reference_tree.BRANCH
    if git.refs.ref_value(repo, ref) is None:
        tx.create_ref(repo, ref, new)
    elif ref_sha is None:
        result.notes.append(
            f"`reference` holds commits that are not onboard's, so it was left as it is; torch "
            f"{version}'s reference tree is the tag {reference_tree.tag_name(version)}"
        )
    elif on_reference and not git.status.tracked_changes(repo):
        try:
            tx.fast_forward(repo, "reference", new, ref_sha)
            result.actions.append(f"`reference` fast-forwarded to {new[:12]} (checked out)")
        except OnboardError as exc:
            # An untracked file of the user's is in the way: move the branch only.
            result.notes.append(
                f"the work tree could not follow `reference` to torch {version} ({exc.message}); "
                "move or delete the files in the way, then run "
                f"`git -C {quote(repo)} merge --ff-only {reference_tree.tag_name(version)}`"
            )
    elif on_reference:
        result.notes.append(
            f"`reference` is checked out with uncommitted changes, so it stays at torch "
            f"{previous}: commit or stash them, then `git -C {quote(repo)} merge --ff-only "
            f"{reference_tree.tag_name(version)}`"
        )
    else:
        tx.move_ref(repo, ref, new, ref_sha)
        if branch and old_tag:
            result.notes.append(
                f"your branch `{branch}` stays on the reference tree of torch {previous}; to "
                f"move it onto torch {version}: `git -C {quote(repo)} rebase --onto reference "
                f"{old_tag} {branch}`"
            )
        else:
            result.notes.append(
                f"the checkout stays on {_where(repo)}; `git -C {quote(repo)} checkout reference` "
                f"shows torch {version}"
            )


def _keep_tag(tx: transaction.Transaction, repo: Path, name: str, sha: str | None) -> str | None:
    """Tag ``sha`` as ``name`` unless the tag exists (then it is left as it is)."""
    if sha is None:
        return None
    ref = f"refs/tags/{name}"
    current = git.refs.ref_value(repo, ref)
    if current is None:
        tx.create_ref(repo, ref, sha)
        return name
    return name if current == sha else None


# --- a clone ----------------------------------------------------------------


def _commit_tag(kind: str, version: str, sha: str) -> str:
    """The tag that keeps a checked-out commit reachable once HEAD moves on:
    named after the torch it is the source of, or after itself for --commit."""
    return f"onboard/commit-{sha[:12]}" if kind == "override" else f"onboard/torch-{version}"


def _clone(
    req: SetupJob,
    installed: Installed,
    old: workspace.Workspace,
    repo: Path,
    tx: transaction.Transaction,
) -> SetupResult:
    what, kind, tag, nightly = installed.target(req.commit)
    head = git.refs.head_sha(repo)
    branch = git.refs.current_branch(repo)
    recorded = old.commit if old.commit and git.refs.rev_parse(repo, old.commit) else None
    same_target = old.extra.get("target") == (req.commit or what) or what == old.commit
    if same_target and recorded:
        return _clone_kept(req, installed, old, repo, head, recorded, kind, tag)

    if req.remote and git.remote.remote_url(repo) not in (None, req.remote):
        git.core.git(repo, "remote", "set-url", "origin", req.remote)
    result = begin(req, installed.env, "resumed")
    result.disk = disk.check(req, None)
    stats = FetchStats()
    sha, notes = fetch_target(
        repo,
        remote=req.remote or "origin",
        target=what,
        nightly=nightly,
        reference=req.reference,
        fetch_timeout=req.fetch_timeout,
        reporter=req.reporter,
        stats=stats,
    )
    result.commit, result.commit_kind, result.tag, result.fetch = sha, kind, tag, stats
    result.notes += notes
    new_version = installed.env.torch.version if installed.env.torch else "?"
    new_tag = _keep_tag(tx, repo, _commit_tag(kind, new_version, sha), sha) or sha
    old_tag = None
    if recorded:
        name = _commit_tag(old.commit_kind, old.torch_version, recorded)
        old_tag = _keep_tag(tx, repo, name, recorded) or recorded
    _follow_clone(tx, repo, result, sha, head, branch, recorded, new_tag, old_tag, old)
    result.head = git.refs.head_sha(repo)
    result.actions.append(f"fetched {sha[:12]} from {req.remote}")
    if req.with_submodules and result.head == sha:
        sources.update_submodules(req, repo, result)
    workspace_files.write(req, installed.env, old.root, result)
    return result


def _clone_kept(
    req: SetupJob,
    installed: Installed,
    old: workspace.Workspace,
    repo: Path,
    head: str | None,
    recorded: str,
    kind: str,
    tag: str | None,
) -> SetupResult:
    """The commit asked for is the one set up already: only onboard's files change."""
    req.reporter.step(f"{repo} already has {recorded[:12]}: checking the files")
    result = begin(req, installed.env, "unchanged")
    result.commit, result.commit_kind, result.tag, result.head = recorded, kind, tag, head
    result.remote = git.remote.remote_url(repo) or req.remote
    result.notes += [n for n in old.notes if n not in result.notes]
    result.actions.append("checkout kept as it is")
    if head != recorded:
        result.notes.append(
            f"the checkout is on {_where(repo)} (your work, left as it is); the "
            f"installed commit is {recorded[:12]}"
        )
    if req.with_submodules:
        sources.update_submodules(req, repo, result)
    workspace_files.write(req, installed.env, old.root, result)
    return result


def _follow_clone(
    tx: transaction.Transaction,
    repo: Path,
    result: SetupResult,
    sha: str,
    head: str | None,
    branch: str | None,
    recorded: str | None,
    new_tag: str,
    old_tag: str | None,
    old: workspace.Workspace,
) -> None:
    """Move a detached HEAD still at onboard's checkout to ``sha``; else say how to move."""
    if head == sha:
        return
    if branch is None and head is not None and head == recorded:
        try:
            tx.checkout_detached(repo, sha)
            result.actions.append(f"checked out {sha[:12]} (HEAD was onboard's checkout)")
        except OnboardError as exc:
            result.notes.append(
                f"HEAD stays at {head[:12]}: {exc.message}; when ready, "
                f"`git -C {quote(repo)} checkout --detach {new_tag}`"
            )
    elif branch and old_tag:
        result.notes.append(
            f"your branch `{branch}` stays on torch {old.torch_version}'s commit; to move it "
            f"onto {sha[:12]}: `git -C {quote(repo)} rebase --onto {new_tag} {old_tag} {branch}`"
        )
    else:
        result.notes.append(
            f"the checkout stays on {_where(repo)}; the installed commit is {sha[:12]} "
            f"(`git -C {quote(repo)} checkout --detach {new_tag}`)"
        )


# --- a checkout that is gone -------------------------------------------------


def _rebuild_checkout(
    req: SetupJob, installed: Installed, old: workspace.Workspace, tx: transaction.Transaction
) -> SetupResult:
    """Make a missing checkout again (nothing of the user's is there to keep)."""
    target = installed.target(req.commit) if not req.from_wheel else None
    tree = installed.tree_plan() if req.from_wheel else None
    needed = disk.check(req, tree)
    for stale in staging.sweep(old.root, CHECKOUT_DIR):
        req.reporter.step(f"removed {stale.name}, left by an onboard setup that was killed")
    st = staging.make(old.root, CHECKOUT_DIR)
    repo = old.root / CHECKOUT_DIR
    try:
        result = sources.make(req, installed, st.path / CHECKOUT_DIR, target, tree, state="resumed")
        result.disk = needed
        with signals.critical():
            placed = tx.created_tree(repo)
            if repo.exists():
                repo.rmdir()  # an empty folder (resume refuses one with files)
            os.rename(st.path / CHECKOUT_DIR, repo)
            tx.tree_placed(placed)
    finally:
        shutil.rmtree(st.path, ignore_errors=True)
        st.release()
    workspace_files.write(req, installed.env, old.root, result)
    return result
