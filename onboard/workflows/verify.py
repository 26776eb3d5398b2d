"""`nox -s verify` / `onboard verify`: the workspace checks itself.

Checks are plain functions in a list, so other commands ADD checks without
touching this file's logic:

    from onboard.workflows.verify import Check, VerifyContext, check

    @check
    def new_op_registered(ctx: VerifyContext) -> Check | list[Check]:
        ...

and name the module in ``CHECK_MODULES`` (imported before a run). A check
returns ``Check(name, PASSED | FAILED | NOT_CHECKED, detail)``; NOT_CHECKED
says what could not be checked here and why, instead of implying success.

The nox session (``onboard.tasks.workspace.verify``) runs ``run_checks`` in
process and writes ``.onboard/verify.json``; ``onboard verify`` runs that
session through nox and reads the file back.

The checks read the checkout while it may change (a branch switched in another
terminal), so ``run_checks`` records its state before and after (``TreeState``:
HEAD and the size and mtime of each changed file, and HEAD's newest reflog entry,
which a switch there and back also moves). When they differ no check passes: the
run fails with "the checkout changed while it was read: run again" and every row
that passed is "not checked", as it may have read either tree.
"""

from __future__ import annotations

import importlib
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import git, workspace
from onboard.errors import OnboardError
from onboard.jsonable import to_json
from onboard.report import CHECK_LINE, Reporter
from onboard.shell import quote

if TYPE_CHECKING:
    from onboard.torchenv import TorchEnv

PASSED = "passed"
FAILED = "failed"
NOT_CHECKED = "not checked"
REPORT_PATH = Path(".onboard") / "verify.json"
TREE_CHANGED = "checkout unchanged while it was read"
# The prefix check passes when this share of the sampled paths exists.
RESOLVE_THRESHOLD = 0.9


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str


class VerifyContext:
    """What checks share: the workspace, the reporter and, probed once on demand, its torch.

    Checks run side by side (threads), so the probe is guarded by a lock.
    """

    def __init__(self, ws: workspace.Workspace, reporter: Reporter | None = None) -> None:
        self.ws = ws
        self.reporter = reporter or Reporter()
        self._lock = threading.Lock()
        self._env: TorchEnv | None = None
        self._probed = False

    @property
    def env(self) -> TorchEnv | None:
        from onboard import torchenv

        with self._lock:
            if not self._probed:
                try:
                    self._env = torchenv.probe(self.ws.python)
                except OnboardError:
                    self._env = None
                self._probed = True
            return self._env


CheckFn = Callable[[VerifyContext], "Check | list[Check]"]
CHECKS: list[CheckFn] = []
# Modules whose import registers more checks (with @check); other commands
# add their module name here.
CHECK_MODULES: list[str] = [
    "onboard.tasks.newop_checks",  # onboard new-op: scaffolded ops
]


def check(fn: CheckFn) -> CheckFn:
    """Register a check (runs in registration order)."""
    if fn not in CHECKS:
        CHECKS.append(fn)
    return fn


@dataclass
class VerifyResult:
    """JSON keys: workspace, checks [{name, status (passed / failed / not checked),
    detail}], tree_changed (how the checkout changed while it was read, or null), ok,
    counts {passed, failed, not_checked}."""

    workspace: Path
    checks: list[Check] = field(default_factory=list)
    # How the checkout changed while the checks read it (None: it did not, or no git).
    tree_changed: str | None = None

    @property
    def ok(self) -> bool:
        return not any(c.status == FAILED for c in self.checks)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def counts(self) -> dict[str, int]:
        return {
            s.replace(" ", "_"): sum(c.status == s for c in self.checks)
            for s in (PASSED, FAILED, NOT_CHECKED)
        }

    def json_extra(self) -> dict[str, object]:
        return {"ok": self.ok, "counts": self.counts()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VerifyResult:
        return cls(
            Path(data["workspace"]),
            [Check(c["name"], c["status"], c["detail"]) for c in data.get("checks", [])],
            data.get("tree_changed"),
        )


def summary_status(checks: list[Check]) -> str:
    """One word for a check's rows: failed if any failed, else passed if any passed (rows
    that cannot be checked on this machine say so in the table, not here), else not
    checked."""
    statuses = {c.status for c in checks}
    return next((s for s in (FAILED, PASSED, NOT_CHECKED) if s in statuses), "done")


def run_checks(ws: workspace.Workspace, reporter: Reporter | None = None) -> VerifyResult:
    """Every registered check, side by side (they are independent; the heavy ones
    share the machine's cores through onboard.workflows.newop.jobs), reported in
    registration order."""
    from concurrent.futures import ThreadPoolExecutor

    for module in CHECK_MODULES:
        importlib.import_module(module)
    ctx = VerifyContext(ws, reporter)

    def one(fn: CheckFn) -> list[Check]:
        name = getattr(fn, "__name__", "check").replace("_", " ")
        start = time.monotonic()
        ctx.reporter.check_started(name)
        try:
            got = fn(ctx)
        except Exception as exc:  # noqa: BLE001 - one broken check must not hide the others
            got = Check(name, FAILED, f"the check itself crashed: {type(exc).__name__}: {exc}")
        checks = got if isinstance(got, list) else [got]
        ctx.reporter.check_finished(name, summary_status(checks), time.monotonic() - start)
        return checks

    result = VerifyResult(ws.root)
    before = tree_state(ws.checkout_path)
    pool = ThreadPoolExecutor(max_workers=max(1, len(CHECKS)))
    try:
        for checks in pool.map(one, CHECKS):
            result.checks += checks
    except BaseException:
        # An interrupt does not wait for the checks: their children are stopped by the
        # run's reaping (``proc``), and the threads end with them.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    changed = tree_changed(before, tree_state(ws.checkout_path))
    if changed:
        untrusted = "; not trusted: the checkout changed while this was read"
        result.tree_changed = changed
        result.checks = [
            Check(
                TREE_CHANGED,
                FAILED,
                f"the checkout changed while it was read ({changed}): run again once it "
                "stays put",
            ),
            *(Check(c.name, NOT_CHECKED, c.detail + untrusted) if c.status == PASSED else c
              for c in result.checks),
        ]  # fmt: skip
    return result


@dataclass(frozen=True)
class TreeSnapshot:
    state: git.status.TreeState | None
    moved: tuple[str, str] | None  # HEAD's newest reflog entry (sha, message)


def tree_state(checkout: Path) -> TreeSnapshot | None:
    """What the checks are about to read, or have read (None: not a git work tree)."""
    if not (checkout / ".git").exists():
        return None
    return TreeSnapshot(
        git.status.start_tree_state(checkout).result(),
        git.state.reflog_newest(checkout, "HEAD"),
    )


def tree_changed(before: TreeSnapshot | None, after: TreeSnapshot | None) -> str | None:
    """How the checkout changed between two snapshots, in words; None when it did not."""
    if before is None and after is None:
        return None
    if before is None or after is None or before.state is None or after.state is None:
        return "it became or stopped being a git work tree" if before != after else None
    old, new = before.state, after.state
    if old.head != new.head:
        return f"HEAD moved from {old.head[:12]} to {new.head[:12]}"
    if before.moved != after.moved:
        how = after.moved[1] if after.moved else "its reflog changed"
        return f"HEAD moved and came back ({how})"
    paths = sorted(p for p in old.changed.keys() | new.changed.keys()
                   if old.changed.get(p) != new.changed.get(p))  # fmt: skip
    if paths:
        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
        return f"files changed: {', '.join(paths[:3])}{more}"
    return None


def write_report(result: VerifyResult) -> Path:
    from onboard import files

    path = result.workspace / REPORT_PATH
    files.make_dirs(path.parent)
    files.write_text(path, json.dumps(to_json(result), indent=2) + "\n")
    return path


@dataclass(frozen=True, kw_only=True)
class VerifyRequest:
    """``workspace``: the workspace to check (None: found from the current folder)."""

    workspace: str | None = None


def verify(request: VerifyRequest, reporter: Reporter) -> VerifyResult:
    """`onboard verify`: the workspace's ``nox -s verify``, as the workspace's one writer."""
    from onboard import transaction

    ws = workspace.require(request.workspace, writing=True)
    # One writer at a time: verify compiles into the workspace's cache and
    # writes its report there; the nox session it starts shares this lock.
    with transaction.in_workspace(ws.root, command="verify", reporter=reporter) as tx:
        tx.watch(ws.checkout_path)
        return verify_via_nox(ws, reporter=reporter)


def verify_via_nox(ws: workspace.Workspace, *, reporter: Reporter) -> VerifyResult:
    """Run the workspace's ``nox -s verify`` (the very same session a user runs)."""
    from onboard import proc

    noxfile = ws.root / "noxfile.py"
    if not noxfile.is_file():
        raise OnboardError(
            f"{ws.root} has no noxfile.py.",
            next_step=f"Run `{ws.setup_command}` again to regenerate it.",
        )
    report = ws.root / REPORT_PATH
    report.unlink(missing_ok=True)
    reporter.step(f"nox -f {quote(noxfile)} -s verify")
    lines: list[str] = []

    def on_line(line: str) -> None:
        lines.append(line)
        mo = CHECK_LINE.match(line)
        if mo is None:
            reporter.detail(line)
        elif mo.group("status") == "started":
            reporter.check_started(mo.group("name"))
        elif mo.group("seconds") is not None:
            reporter.check_finished(
                mo.group("name"), mo.group("status"), float(mo.group("seconds"))
            )
        else:
            reporter.step(mo.group("name"))

    rc = proc.stream(
        [sys.executable, "-m", "nox", "-f", str(noxfile), "-s", "verify"],
        on_line=on_line,
        cwd=ws.root,
        timeout=900,
    )
    if not report.is_file():
        tail = "\n".join(lines[-15:])
        raise OnboardError(
            f"`nox -s verify` in {ws.root} exited {rc} without writing its report:\n{tail}",
            next_step=f"Run `cd {quote(ws.root)} && nox -s verify` to see the whole output.",
        )
    return VerifyResult.from_json(json.loads(report.read_text(encoding="utf-8")))


# ---------------------------------------------------------------------------
# The checks `onboard setup` guarantees.


@check
def installed_commit(ctx: VerifyContext) -> Check:
    """The checkout's HEAD is the installed torch's commit (or says why not)."""
    ws = ctx.ws
    name = "checkout is the installed commit"
    repo = ws.checkout_path
    if not (repo / ".git").exists():
        return Check(name, FAILED, f"{repo} is missing; run `{ws.setup_command}` again")
    head = git.refs.head_sha(repo)
    env = ctx.env
    if env is None or env.torch is None:
        return Check(name, NOT_CHECKED, f"could not probe the torch of {ws.python}")
    installed = env.torch.git_version
    if ws.torch_version != env.torch.version:
        return Check(
            name,
            FAILED,
            f"the workspace was made for torch {ws.torch_version}, {ws.python} now has "
            f"{env.torch.version}: run `{ws.setup_command}` again",
        )
    if ws.is_reference:
        from onboard.workflows import reference_tree

        message = git.history.commit_message(repo) if head else ""
        if head and "Onboard-Torch-Commit:" not in message:
            # onboard new-op: HEAD may be a scaffold commit on top of the
            # reference commit; the trailers are on the nearest commit that has them.
            message = git.core.out(
                repo, "log", "-1", "--format=%B", "--grep=^Onboard-Torch-Commit:"
            )
        found = reference_tree.trailers(message) if head else {}
        recorded = found.get("Onboard-Torch-Commit")
        if (
            recorded == (env.commit.sha or "unknown")
            and found.get("Onboard-Torch-Version") == env.torch.version
        ):
            return Check(
                name,
                PASSED,
                f"reference tree {head[:12] if head else ''} was built from torch "
                f"{env.torch.version} (commit {recorded}); its HEAD is onboard's own commit",
            )
        return Check(name, FAILED, _reference_drift(repo, found, env.torch.version, installed))
    if head is None:
        return Check(name, FAILED, f"{repo} has no commit checked out")
    if head != ws.commit and ws.commit and git.refs.is_ancestor(repo, ws.commit, head):
        # Your own commits on top (a new-op or practice branch): still the installed sources.
        ahead = git.history.count_range(repo, ws.commit, head, first_parent=False)
        return Check(
            name,
            PASSED,
            f"HEAD {head[:12]} is {ahead} commit(s) of yours on top of the installed commit "
            f"{ws.commit[:12]}",
        )
    if head != ws.commit:
        return Check(
            name, FAILED, f"HEAD is {head[:12]}, the workspace expects {(ws.commit or '?')[:12]}"
        )
    if ws.commit_kind == "override":
        why = f"checked out {head[:12]} by --commit; the installed torch is {installed}"
        return Check(name, PASSED, why)
    if env.commit.kind == "nightly":
        return Check(
            name,
            PASSED,
            f"HEAD {head[:12]} is the main commit named by the nightly commit {installed}",
        )
    if head == installed:
        return Check(name, PASSED, f"HEAD {head[:12]} == torch.version.git_version")
    return Check(name, FAILED, f"HEAD {head[:12]} != torch.version.git_version {installed}")


def _reference_drift(repo: Path, found: dict[str, str], version: str, installed: str | None) -> str:
    """Why HEAD is not on the installed torch's reference tree, and the command
    that moves the user's work there (setup keeps each tree as a tag)."""
    from onboard.workflows import reference_tree

    old = found.get("Onboard-Torch-Version")
    text = (
        f"HEAD is on the reference tree of torch {old or 'unknown'} "
        f"(commit {found.get('Onboard-Torch-Commit')}); the installed torch is {version} "
        f"({installed})"
    )
    new_tag = reference_tree.tag_name(version)
    if git.refs.ref_value(repo, f"refs/tags/{new_tag}") is None:
        return text + f": run `onboard setup {quote(repo.parent)} --from-wheel` to add its tree"
    branch = git.refs.current_branch(repo)
    old_tag = reference_tree.tag_name(old) if old else None
    if (
        branch
        and branch != "reference"
        and old_tag
        and git.refs.ref_value(repo, f"refs/tags/{old_tag}")
    ):
        return text + (
            f": move your work with `git -C {quote(repo)} rebase --onto {new_tag} {old_tag} "
            f"{branch}`"
        )
    return text + f": `git -C {quote(repo)} checkout reference` holds torch {version}'s tree"


def _ide_paths(ws: workspace.Workspace) -> dict[str, Path]:
    recorded = ws.extra.get("ide") or {}
    vscode = ws.checkout_path / ".vscode"
    return {
        "settings": Path(recorded.get("settings") or vscode / "settings.json"),
        "launch": Path(recorded.get("launch") or vscode / "launch.json"),
        "gdb": Path(recorded.get("gdb") or ws.root / "onboard.gdb"),
    }


@check
def ide_files(ctx: VerifyContext) -> list[Check]:
    """The IDE/debugger files parse and map the build prefix to the checkout."""
    from onboard import ide

    ws = ctx.ws
    paths = _ide_paths(ws)
    checkout = str(ws.checkout_path)
    prefix = ws.build_prefix
    out: list[Check] = []

    def load(path: Path) -> Any:
        try:
            return ide.read_jsonc(path)
        except FileNotFoundError:
            out.append(Check(f"{path.name} parses", FAILED, f"{path} is missing"))
        except Exception as exc:  # noqa: BLE001 - json5's parse errors vary
            out.append(Check(f"{path.name} parses", FAILED, f"{path}: {exc}"))
        return None

    settings = load(paths["settings"])
    if isinstance(settings, dict):
        problems = []
        if settings.get("python.defaultInterpreterPath") != ws.python:
            problems.append(f"python.defaultInterpreterPath is not {ws.python}")
        if checkout not in (settings.get("python.analysis.extraPaths") or []):
            problems.append("python.analysis.extraPaths lacks the checkout")
        out.append(
            Check(
                "settings.json",
                FAILED if problems else PASSED,
                "; ".join(problems) or f"interpreter {ws.python}, extraPaths has the checkout",
            )
        )
    launch = load(paths["launch"])
    if isinstance(launch, dict):
        configs = {
            c.get("name"): c for c in launch.get("configurations") or [] if isinstance(c, dict)
        }
        problems = []
        debugpy = configs.get(ide.DEBUGPY_NAME)
        if not debugpy or debugpy.get("justMyCode") is not False:
            problems.append(f"no {ide.DEBUGPY_NAME!r} with justMyCode false")
        cpp = configs.get(ide.CPPDBG_NAME)
        if not cpp:
            problems.append(f"no {ide.CPPDBG_NAME!r}")
        elif prefix:
            mapping = (cpp.get("sourceFileMap") or {}).get(prefix) or {}
            if (
                mapping.get("editorPath") != checkout
                or mapping.get("useForBreakpoints") is not True
            ):
                problems.append(f"sourceFileMap does not map {prefix} to {checkout}")
        out.append(
            Check(
                "launch.json",
                FAILED if problems else PASSED,
                "; ".join(problems)
                or f"debugpy (justMyCode off) and cppdbg attach mapping {prefix} -> checkout",
            )
        )
    gdb = paths["gdb"]
    if not gdb.is_file():
        out.append(Check("gdb substitute-path", FAILED, f"{gdb} is missing"))
    elif prefix:
        line = f"set substitute-path {prefix} {checkout}"
        has = line in gdb.read_text(encoding="utf-8").splitlines()
        out.append(
            Check("gdb substitute-path", PASSED if has else FAILED, line if has else f"no `{line}`")
        )
    else:
        out.append(Check("gdb substitute-path", NOT_CHECKED, "no build prefix to map"))
    # setup merges these files (the user's keys stay), so it is the fix for all of them.
    fix = f"; `{ws.setup_command}` rewrites onboard's part (yours is kept)"
    return [Check(c.name, c.status, c.detail + fix) if c.status == FAILED else c for c in out]


# Where a reference tree has files: headers only (no .cpp/.cu in a wheel);
# vendored third_party sources are not shipped at their repo paths.
_REFERENCE_ROOTS = ("aten/src/", "c10/", "torch/csrc/", "caffe2/", "build/aten/src/")
_HEADER_SUFFIXES = (".h", ".hpp", ".cuh")


@check
def prefix_mapping(ctx: VerifyContext) -> Check:
    """Paths the binary names (``__FILE__`` under the build prefix) exist in the checkout."""
    ws = ctx.ws
    name = "build prefix maps to real files"
    env = ctx.env
    if not ws.build_prefix:
        return Check(name, NOT_CHECKED, "no build prefix was found in the torch libraries")
    if env is None:
        return Check(name, NOT_CHECKED, f"could not probe the torch of {ws.python}")
    named = list(env.build_prefix.source_paths)
    if not named:
        return Check(name, NOT_CHECKED, "the libraries name no source paths")
    if ws.is_reference:
        sample = [
            p for p in named if p.endswith(_HEADER_SUFFIXES) and p.startswith(_REFERENCE_ROOTS)
        ]
        scope = (
            f"{len(sample)} headers of the {len(named)} paths the binary names (a reference "
            "tree has no .cpp/.cu; vendored third_party internals are not shipped)"
        )
    else:
        submodules = any((ws.checkout_path / "third_party").glob("*/.git"))
        sample = [
            p
            for p in named
            if not p.startswith("build/") and (submodules or not p.startswith("third_party/"))
        ]
        scope = f"{len(sample)} of the {len(named)} paths the binary names (not build/ outputs"
        scope += ")" if submodules else ", not third_party/: no submodules checked out)"
    if not sample:
        return Check(name, NOT_CHECKED, f"none of the paths the binary names apply: {scope}")
    missing = [p for p in sample if not (ws.checkout_path / p).is_file()]
    found = len(sample) - len(missing)
    detail = f"{found}/{len(sample)} exist under {ws.checkout_path}: {scope}"
    if missing:
        detail += f"; missing e.g. {', '.join(missing[:3])}"
    status = PASSED if found >= RESOLVE_THRESHOLD * len(sample) else FAILED
    return Check(name, status, detail)
