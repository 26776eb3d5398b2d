"""Pre-submit lint: PyTorch's `lintrunner` on the changed files, when installed.

PyTorch CI runs lintrunner over the PR (CONTRIBUTING.md: "run `lintrunner -a`
before sending a PR"); running it here first saves a CI round trip.
lintrunner keeps its init state per checkout under $XDG_DATA_HOME/lintrunner
and says "you should run `lintrunner init`" when that state is missing or the
config changed; onboard runs the init then and lints again.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from onboard import proc
from onboard.report import Reporter

# status values
CLEAN = "clean"
ISSUES = "issues"
NOT_INSTALLED = "not-installed"
NO_CONFIG = "no-config"
NO_FILES = "no-files"
FAILED = "failed"  # lintrunner itself could not run (its init failed, a linter crashed)

_LINT_TIMEOUT_S = 1800  # clang-tidy / mypy over many files take minutes in PyTorch


@dataclass(frozen=True)
class LintMessage:
    path: str
    line: int | None
    code: str
    severity: str  # error / warning / advice / disabled
    name: str
    description: str


@dataclass(frozen=True)
class LintResult:
    status: str
    command: tuple[str, ...] = ()
    initialized: bool = False  # `lintrunner init` was run
    messages: tuple[LintMessage, ...] = field(default=())
    note: str = ""

    @property
    def ran(self) -> bool:
        return self.status in (CLEAN, ISSUES)

    @property
    def errors(self) -> list[LintMessage]:
        return [m for m in self.messages if m.severity == "error"]

    def summary(self) -> str:
        if self.status == CLEAN:
            return "lintrunner: no lint issues in the changed files"
        if self.status == ISSUES:
            n_err = len(self.errors)
            return (
                f"lintrunner: {len(self.messages)} issue(s) in the changed files "
                f"({n_err} error(s)); `lintrunner -a` applies the suggested fixes"
            )
        return f"lintrunner not run: {self.note}"

    def json_extra(self) -> dict[str, object]:
        return {"ran": self.ran}


def run_lintrunner(repo: Path, paths: list[str], reporter: Reporter) -> LintResult:
    exe = proc.which("lintrunner")
    if exe is None:
        return LintResult(
            NOT_INSTALLED,
            note="lintrunner is not installed (`pip install lintrunner && lintrunner init` "
            "in the checkout, then run `onboard pr` again)",
        )
    if not (repo / ".lintrunner.toml").is_file():
        return LintResult(NO_CONFIG, note=f"{repo} has no .lintrunner.toml")
    if not paths:
        return LintResult(NO_FILES, note="the change deletes files only")
    command = ("lintrunner", "--output", "json", *paths)
    reporter.step(f"running lintrunner on {len(paths)} changed file(s)")
    result = proc.run([exe, *command[1:]], cwd=repo, check=False, timeout=_LINT_TIMEOUT_S)
    initialized = False
    if "lintrunner init" in result.stderr:
        reporter.step("running `lintrunner init` (first use, or its config changed)")
        init = proc.run([exe, "init"], cwd=repo, check=False, timeout=_LINT_TIMEOUT_S)
        initialized = True
        if init.returncode != 0:
            return LintResult(
                FAILED,
                command=("lintrunner", "init"),
                initialized=True,
                note=f"`lintrunner init` failed (exit {init.returncode}): "
                f"{_last(init.stderr or init.stdout)}",
            )
        result = proc.run([exe, *command[1:]], cwd=repo, check=False, timeout=_LINT_TIMEOUT_S)
    messages = _parse(result.stdout, repo)
    if result.returncode != 0 and not messages:
        return LintResult(
            FAILED,
            command=command,
            initialized=initialized,
            note=f"lintrunner exited {result.returncode} without lint messages: "
            f"{_last(result.stderr or result.stdout)}",
        )
    return LintResult(
        ISSUES if messages else CLEAN,
        command=command,
        initialized=initialized,
        messages=tuple(messages),
    )


def _parse(stdout: str, repo: Path) -> list[LintMessage]:
    messages = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        path = str(data.get("path") or "")
        with contextlib.suppress(ValueError):  # a path outside the repo stays as given
            path = Path(path).resolve().relative_to(repo.resolve()).as_posix()
        messages.append(
            LintMessage(
                path=path,
                line=data.get("line") if isinstance(data.get("line"), int) else None,
                code=str(data.get("code") or ""),
                severity=str(data.get("severity") or "error"),
                name=str(data.get("name") or ""),
                description=str(data.get("description") or "").strip(),
            )
        )
    return messages


def _last(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"
