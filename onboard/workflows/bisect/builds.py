"""Rebuild only when the compiled part of the checkout would go stale.

Between the last built commit and the next one, a diff that touches only
Python files (outside the code generators) needs no rebuild: the repro imports
them from the checkout. C++/CUDA/CMake/yaml changes, the code generators
(``torchgen/``, ``tools/``), ``setup.py`` and submodule pins need one, run
through the workspace's ``build`` nox session with submodules synced first
(docs/pytorch-facts.md: Bisect facts; incremental builds do not regenerate
``torch/version.py``).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from onboard import git, proc
from onboard.errors import OnboardError
from onboard.jsonable import spec
from onboard.report import Reporter

NEVER = "never"
AUTO = "auto"
ALWAYS = "always"
MODES = (NEVER, AUTO, ALWAYS)

# Python that runs at build time and shapes the compiled code.
_GENERATOR_DIRS = ("tools/", "torchgen/", "cmake/")
_RUNTIME_SUFFIXES = (".py", ".pyi")
_TEXT_SUFFIXES = (".md", ".rst")
_TEXT_DIRS = ("docs/", ".github/")


def needs_rebuild(path: str) -> bool:
    """Whether a change to ``path`` (repo-relative) makes the compiled build stale."""
    if path.startswith(_TEXT_DIRS) or path.endswith(_TEXT_SUFFIXES):
        return False
    if path.endswith(_RUNTIME_SUFFIXES):
        return path.startswith(_GENERATOR_DIRS) or PurePosixPath(path).name == "setup.py"
    # C/C++/CUDA sources and headers, CMake, yaml (native_functions.yaml,
    # derivatives.yaml feed codegen), submodule pins (no suffix), and anything
    # unknown: rebuilding is the safe answer.
    return True


def has_build_tree(checkout: Path) -> bool:
    """The checkout has been built (a CMake cache, or the compiled ``torch._C``)."""
    if (checkout / "build" / "CMakeCache.txt").is_file():
        return True
    torch_dir = checkout / "torch"
    return torch_dir.is_dir() and (any(torch_dir.glob("_C.*.so")) or any(torch_dir.glob("_C*.pyd")))


@dataclass
class BuildOutcome:
    ok: bool
    seconds: float = field(metadata=spec(digits=3))
    reason: str = ""
    log: str | None = None


@dataclass
class Builder:
    """Decides per commit whether to build, and builds through ``nox -s build``."""

    repo: Path
    mode: str
    noxfile: Path | None  # the workspace's noxfile, when the repo is its checkout
    log_dir: Path
    reporter: Reporter
    last_built: str | None = None  # the commit the build tree matches
    builds: int = 0
    synced_submodules: bool = False
    _has_tree: bool | None = None
    _session_checked: bool = False
    _session_error: str = ""
    _cache: dict[str, bool] = field(default_factory=dict)

    @property
    def has_tree(self) -> bool:
        if self._has_tree is None:
            self._has_tree = has_build_tree(self.repo)
        return self._has_tree

    def plan(self, sha: str) -> tuple[bool, str]:
        """(build before testing ``sha``?, why)."""
        if self.mode == NEVER:
            return False, ""
        if self.mode == ALWAYS:
            return True, "--build always"
        if not self.has_tree:
            # Nothing compiled in the checkout to keep in step: the repro uses
            # its Python sources as they are (and whatever compiled torch the
            # interpreter has).
            return False, ""
        if self.last_built is None:
            return True, "the build tree's commit is unknown (the last build failed)"
        if self.last_built == sha:
            return False, ""
        changed = git.history.changed_files(self.repo, self.last_built, sha)
        compiled = [p for p in changed if needs_rebuild(p)]
        if not compiled:
            return False, ""
        shown = ", ".join(compiled[:3]) + (
            f" and {len(compiled) - 3} more" if len(compiled) > 3 else ""
        )
        return (
            True,
            f"{len(compiled)} compiled file(s) changed since {self.last_built[:10]}: {shown}",
        )

    def session_problem(self) -> str:
        """Why no build can run here ('' when the workspace build session exists)."""
        if self.noxfile is None:
            return (
                "there is no workspace build session for this checkout (run inside an "
                "`onboard setup` workspace, or pass --workspace)"
            )
        if not self._session_checked:
            self._session_checked = True
            listing = proc.run(
                [sys.executable, "-m", "nox", "-f", str(self.noxfile), "--list", "--json"],
                cwd=self.noxfile.parent,
                timeout=120,
                check=False,
            )
            try:
                names = {s.get("session") or s.get("name") for s in json.loads(listing.stdout)}
            except ValueError:
                names = set()
            if "build" not in names:
                self._session_error = f"{self.noxfile} has no `build` session"
        return self._session_error

    def build(self, sha: str) -> BuildOutcome:
        problem = self.session_problem()
        if problem:
            return BuildOutcome(False, 0.0, problem)
        assert self.noxfile is not None
        start = time.monotonic()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"build-{sha[:12]}.log"
        if (self.repo / ".gitmodules").is_file():
            self.synced_submodules = True
            sync = git.remote.submodule_sync(self.repo)
            if not sync.ok:
                self.last_built = None
                return BuildOutcome(
                    False,
                    time.monotonic() - start,
                    f"`git submodule update --init --recursive` failed: "
                    f"{(sync.stderr.strip().splitlines() or ['no output'])[-1]}",
                )
        self.reporter.detail(f"building {sha[:10]} (log: {log})")
        env = proc.environ({"ONBOARD_BISECT_COMMIT": sha})
        last: list[str] = []

        def on_line(line: str) -> None:
            last.append(line)
            del last[:-5]
            self.reporter.detail(line)

        code = proc.stream(
            [sys.executable, "-m", "nox", "-f", str(self.noxfile), "-s", "build", "-r"],
            on_line=on_line,
            cwd=self.noxfile.parent,
            env=env,
            log_path=log,
        )
        seconds = time.monotonic() - start
        self.builds += 1
        if code != 0:
            self.last_built = None  # half-built: the next commit needs a build whatever changed
            tail = next((ln for ln in reversed(last) if ln.strip()), "no output")
            return BuildOutcome(False, seconds, f"the build failed (exit {code}): {tail}", str(log))
        self.last_built = sha
        return BuildOutcome(True, seconds, "", str(log))

    def prepare(self, sha: str) -> tuple[bool, BuildOutcome | None, str]:
        """Build if needed. (ready to test?, the build if one ran, why not ready)."""
        needed, why = self.plan(sha)
        if not needed:
            return True, None, ""
        problem = self.session_problem()
        if problem:
            return False, None, f"needs a rebuild ({why}), but {problem}"
        self.reporter.step(f"building {sha[:10]}: {why}")
        outcome = self.build(sha)
        if not outcome.ok:
            return (
                False,
                outcome,
                outcome.reason + (f" (log: {outcome.log})" if outcome.log else ""),
            )
        return True, outcome, ""


def require_session_for_always(builder: Builder) -> None:
    if builder.mode == ALWAYS:
        problem = builder.session_problem()
        if problem:
            raise OnboardError(
                f"--build always needs a build session, but {problem}.",
                next_step="Run inside your workspace (or pass --workspace DIR), or use "
                "--build auto / --build never.",
            )
