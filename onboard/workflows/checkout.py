"""A shallow checkout of exactly one PyTorch commit.

``git init``; ``git remote add origin URL``; ``git fetch --depth 1 origin
<sha>``; ``git checkout --detach`` (docs/pytorch-facts.md: GitHub serves fetch-by-sha,
as ``tools/nightly.py`` relies on). A nightly wheel's ``git_version`` is a
commit on the ``nightly`` branch whose subject names the main commit as
``(<sha>)``: that commit is fetched first and its subject followed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from onboard import git
from onboard.errors import BadInput, OnboardError, ProcTimeout
from onboard.jsonable import spec
from onboard.report import Reporter
from onboard.units import human_bytes

DEFAULT_REMOTE = "https://github.com/pytorch/pytorch.git"
DEFAULT_FETCH_TIMEOUT = 60.0  # seconds without any output from git before giving up

_FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
_HEXISH = re.compile(r"^[0-9a-f]{4,39}$")
# tools/nightly.py: the nightly commit's subject is "YYYY-MM-DD nightly release (<main sha>)".
_NIGHTLY_SUBJECT = re.compile(r"\(([0-9a-f]{40})\)")
# What git says when the server has no such object (GitHub, git daemon, http).
_MISSING_OBJECT = (
    "not our ref",
    "unadvertised object",
    "couldn't find remote ref",
    "no such remote ref",
    "not a valid object",
    "upload-pack: not our",
    "did not send all necessary objects",
)

# Disk the checkout needs, ASSUMED from PyTorch's size (not measured here, where
# GitHub is out of reach): a depth-1 pack of one release commit ~0.3 GiB plus
# the checked-out tree ~0.7 GiB; shallow submodules add ~3 GiB (cutlass,
# fbgemm, onnx, protobuf, XNNPACK, ... at depth 1). --reference borrows the
# objects, so only the tree counts. A 20% margin is added on top.
CLONE_PACK_BYTES = int(0.3 * 1024**3)
CLONE_TREE_BYTES = int(0.7 * 1024**3)
SUBMODULES_BYTES = 3 * 1024**3
MARGIN = 1.2


@dataclass
class FetchStats:
    objects: int = 0
    bytes_received: int | None = None
    # the refs/shas fetched, in order
    fetches: list[str] = field(default_factory=list, metadata=spec(key="fetched"))


def disk_estimate(*, with_submodules: bool, reference: bool) -> int:
    need = CLONE_TREE_BYTES + (0 if reference else CLONE_PACK_BYTES)
    if with_submodules:
        need += SUBMODULES_BYTES
    return int(need * MARGIN)


def check_commit_arg(commit: str) -> str:
    """A full sha, or a ref name the remote serves (``v2.13.0``, ``main``)."""
    value = commit.strip()
    if _HEXISH.match(value):
        raise BadInput(
            f"--commit {value} looks like an abbreviated sha; fetching by sha needs all 40 "
            "hex digits (servers do not expand short ones).",
            next_step="Pass the full sha (`git rev-parse <short>` in any clone, or the "
            "commit's page on GitHub), or a tag such as v2.13.0.",
        )
    if not value or value.startswith("-") or any(c.isspace() for c in value):
        raise BadInput(f"--commit {commit!r} is not a commit sha or ref name.")
    return value.lower() if _FULL_SHA.match(value.lower()) else value


def fetch(
    repo: Path,
    remote: str,
    refspec: str,
    *,
    fetch_timeout: float,
    reporter: Reporter,
    stats: FetchStats,
) -> str:
    """Fetch one commit (depth 1) and return its sha; errors name the commit."""
    label = refspec[:12] if _FULL_SHA.match(refspec) else refspec
    with reporter.task(f"fetching {label} from {remote}") as task:

        def on_progress(p: git.remote.FetchProgress) -> None:
            detail = f"{p.stage}: {p.objects}" + (f"/{p.total_objects}" if p.total_objects else "")
            detail += " objects"
            if p.bytes_received is not None:
                detail += f", {human_bytes(p.bytes_received)}"
            task.update(completed=p.objects, total=p.total_objects, detail=detail)

        try:
            outcome = git.remote.fetch_with_progress(
                repo,
                "origin",
                refspec,
                depth=1,
                on_progress=on_progress,
                idle_timeout=fetch_timeout,
            )
        except ProcTimeout:
            raise OnboardError(
                f"The remote {remote} sent nothing for {fetch_timeout:g} s while onboard was "
                f"fetching {label}, so the fetch was stopped and nothing was kept.",
                next_step="Check the network (or proxy), pass a reachable mirror with "
                "`--remote URL`, allow more time with `--fetch-timeout SECONDS`, or run "
                "`onboard setup DIR --from-wheel` for an offline reference tree.",
            ) from None
        stats.fetches.append(refspec)
        stats.objects += outcome.objects
        if outcome.bytes_received is not None:
            stats.bytes_received = (stats.bytes_received or 0) + outcome.bytes_received
        # Inside the task: a fetch git gave up on ends as failed, not as done.
        if not outcome.ok:
            error = outcome.last_error()
            text = " ".join([*outcome.error_lines, *outcome.other_lines]).lower()
            if any(marker in text for marker in _MISSING_OBJECT):
                raise OnboardError(
                    f"The remote {remote} does not have commit {refspec} ({error}). A local or "
                    "patched build, or a commit only in a private fork, is not on a public "
                    "mirror.",
                    next_step="Pass the remote that has it with `--remote URL`, a commit it "
                    "does have with `--commit SHA`, or run `onboard setup DIR --from-wheel`.",
                )
            raise OnboardError(
                f"Could not fetch {label} from {remote}: {error}",
                next_step="Check the URL and your network, pass a reachable mirror with "
                "`--remote URL`, or run `onboard setup DIR --from-wheel` (offline, seconds).",
            )
    sha = git.refs.rev_parse(repo, refspec if _FULL_SHA.match(refspec) else "FETCH_HEAD")
    if sha is None:
        raise OnboardError(
            f"git fetched from {remote} but {label} is not a commit there.",
            next_step="Pass a commit sha or tag with `--commit`.",
        )
    return sha


def follow_nightly(repo: Path, nightly_sha: str) -> str | None:
    """The main commit a nightly commit's subject names, or None."""
    subject = git.history.commit_message(repo, nightly_sha).splitlines()
    match = _NIGHTLY_SUBJECT.search(subject[0] if subject else "")
    return match.group(1) if match else None


def make_checkout(
    repo: Path,
    *,
    remote: str,
    target: str,
    nightly: bool,
    reference: Path | None,
    with_submodules: bool,
    fetch_timeout: float,
    reporter: Reporter,
    stats: FetchStats,
) -> tuple[str, list[str], list[str]]:
    """Fetch ``target`` into a new repository ``repo`` and check it out detached.

    Returns (the checked-out sha, notes, problems); a submodule that fails is a
    problem, not an error: the main checkout is complete and worth keeping.
    """
    if not (repo / ".git").exists():
        reporter.step(f"creating a repository at {repo}")
        git.repository.init_repo(repo)
    sha, notes = fetch_target(
        repo,
        remote=remote,
        target=target,
        nightly=nightly,
        reference=reference,
        fetch_timeout=fetch_timeout,
        reporter=reporter,
        stats=stats,
    )
    reporter.step(f"checking out {sha[:12]}")
    git.worktree.checkout_detached(repo, sha)
    problems: list[str] = []
    if with_submodules:
        sub_notes, problems = update_submodules(
            repo, fetch_timeout=fetch_timeout, reporter=reporter
        )
        notes += sub_notes
    return sha, notes, problems


def fetch_target(
    repo: Path,
    *,
    remote: str,
    target: str,
    nightly: bool,
    reference: Path | None,
    fetch_timeout: float,
    reporter: Reporter,
    stats: FetchStats,
) -> tuple[str, list[str]]:
    """Fetch ``target`` (a nightly's main commit, for a nightly) into ``repo``
    without moving HEAD or any branch; returns (its sha, notes)."""
    notes: list[str] = []
    if git.remote.remote_url(repo) is None:
        git.remote.add_remote(repo, "origin", remote)
    if reference is not None:
        source = git.repository.add_alternate(repo, reference)
        notes.append(
            f"objects are borrowed from {source} (--reference): keep that clone, or run "
            "`git repack -a -d` in the checkout and delete .git/objects/info/alternates "
            "to stop depending on it"
        )
    sha = fetch(repo, remote, target, fetch_timeout=fetch_timeout, reporter=reporter, stats=stats)
    if nightly:
        main_sha = follow_nightly(repo, sha)
        if main_sha:
            reporter.step(f"nightly {sha[:12]} names main commit {main_sha[:12]}; fetching it")
            sha = fetch(
                repo, remote, main_sha, fetch_timeout=fetch_timeout, reporter=reporter, stats=stats
            )
            notes.append(f"nightly commit {target[:12]} names main commit {main_sha}")
        else:
            notes.append(
                f"the nightly commit {target[:12]} has no '(<main sha>)' in its subject; "
                "checked out the nightly commit itself"
            )
    return sha, notes


def update_submodules(
    repo: Path, *, fetch_timeout: float, reporter: Reporter
) -> tuple[list[str], list[str]]:
    """Shallow, parallel submodules; a pinned sha a shallow fetch cannot reach
    (pytorch#186004) is retried without --depth."""
    jobs = max(2, min(8, os.cpu_count() or 2))
    reporter.step(f"submodules: shallow, {jobs} in parallel")
    rc = git.remote.submodule_update(
        repo, depth=1, jobs=jobs, on_line=reporter.detail, idle_timeout=fetch_timeout * 5
    )
    if rc == 0:
        return ["submodules checked out at depth 1"], []
    pending = [path for state, _sha, path in git.remote.submodule_status(repo) if state in "-+U"]
    notes = []
    for path in pending:
        reporter.step(f"submodule {path}: its pinned commit is not reachable shallowly; full fetch")
        sub = repo / path
        if (sub / ".git").exists() and git.repository.is_shallow(sub):
            # A plain fetch of a shallow clone keeps the shallow boundary, and the
            # pinned commit lies behind it.
            git.remote.unshallow(sub, idle_timeout=fetch_timeout * 5, on_line=reporter.detail)
        rc = git.remote.submodule_update(
            repo,
            depth=None,
            jobs=1,
            paths=[path],
            on_line=reporter.detail,
            idle_timeout=fetch_timeout * 5,
        )
        notes.append(f"submodule {path} fetched without --depth" + ("" if rc == 0 else " FAILED"))
    still = [path for state, _sha, path in git.remote.submodule_status(repo) if state in "-+U"]
    problems = []
    if still or (rc != 0 and not pending):
        problems.append(
            f"some submodules could not be checked out ({', '.join(still) or 'see git output'}); "
            "the main checkout is complete: run `onboard setup DIR --with-submodules` again to "
            "retry, or `git submodule update --init --recursive` in the checkout"
        )
    return notes, problems
