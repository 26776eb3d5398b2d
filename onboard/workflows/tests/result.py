"""What `onboard tests` answers: the tests that cover a change, ranked, each with why
and the exact command; the lint state and lint of the changed files; and, with
``--run``, what ran (``run.RunReport``). Serialised by ``onboard/jsonable.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onboard.jsonable import spec


@dataclass(frozen=True)
class Selected:
    """One test file (or suite folder) the change calls for.

    ``test``: its path in PyTorch's tree ("test/test_ops.py"); ``command``: the exact
    argv to run it from the checkout's root; ``reasons``: why, strongest first;
    ``ops``: the OpInfo names it covers here (the changed ops it has tests for);
    ``rank``: 1 first; ``present``: the file is in this checkout (a reference tree
    rebuilt from the wheel has no test/)."""

    test: str
    command: tuple[str, ...]
    reasons: tuple[str, ...]
    ops: tuple[str, ...] = ()
    rank: int = 0
    present: bool = True
    also: tuple[tuple[str, ...], ...] = field(default=(), metadata=spec(empty=None))

    @property
    def command_line(self) -> str:
        from onboard.shell import quote

        return " ".join(quote(a) for a in self.command)

    def json_extra(self) -> dict[str, object]:
        return {"command_line": self.command_line}


@dataclass(frozen=True)
class ChangedOp:
    """An op the change touches: its native_functions.yaml group (``base``), the
    OpInfo entries that test it (``opinfos``; empty for an op OpInfo does not cover,
    a new one) and how the change reached it (``via``: the kernel, stub and yaml
    entry, in words)."""

    base: str
    opinfos: tuple[str, ...]
    via: tuple[str, ...]


@dataclass(frozen=True)
class Selection:
    """The change (``files``, against ``base``), the OpInfo names of the ops it
    touches (``ops``, what ``--run`` samples; ``changed``: each op with how the change
    reached it), the tests it selects (ranked), and what the selection could not look
    at (``notes``)."""

    checkout: str
    source: str  # "branch" (since ``base``), "paths" or "op"
    base: str | None
    files: tuple[str, ...]
    ops: tuple[str, ...]
    changed: tuple[ChangedOp, ...]
    selected: tuple[Selected, ...]
    notes: tuple[str, ...] = ()
    full_checkout: bool = True  # the checkout has PyTorch's test/ folder
    warm: bool = field(default=False, metadata=spec(omit=True))


@dataclass(frozen=True)
class LinterState:
    name: str  # its `code` in .lintrunner.toml (FLAKE8, CLANGFORMAT, MYPY ...)
    ready: bool  # `lintrunner init` installed what it needs
    missing: str = field(default="", metadata=spec(empty=None))  # what is not there


@dataclass(frozen=True)
class LintReport:
    """lintrunner in this checkout: installed (``executable``), configured
    (``config``), initialised (``initialised``: `lintrunner init` has run for this
    config), the linters and which of them miss their tools, and the lint of the
    changed files (``result``: pr's LintResult), with what was not checked."""

    executable: str | None
    config: bool
    initialised: bool | None  # None: not known (no lintrunner, no config)
    linters: tuple[LinterState, ...]
    result: Any  # onboard.workflows.pr.lint.LintResult, or None when not asked
    not_checked: tuple[str, ...] = ()

    @property
    def errors(self) -> int:
        return len(self.result.errors) if self.result is not None else 0


@dataclass
class TestsResult:
    """`onboard tests`: the selection, the lint (unless --no-lint) and, with
    ``--run``, the run (``run``: B's ``RunReport``)."""

    __test__ = False  # not a pytest class

    selection: Selection
    lint: LintReport | None = None
    run: Any = None

    @property
    def exit_code(self) -> int:
        if self.run is not None:
            code = int(getattr(self.run, "exit_code", 0))
            if code:
                return code
        if self.lint is not None and self.lint.errors:
            return 1
        return 0
