"""Lint: whether PyTorch's lintrunner is installed and initialised here, which of
its linters miss their tools, and lintrunner on the changed files.

PyTorch's .lintrunner.toml lists each linter (``[[linter]]``, its ``code``) with
an ``init_command`` that pip-installs the tools it needs (``flake8==…``,
``ruff==…``: tools/linter/adapters/pip_init.py); `lintrunner init` runs them. A
linter is ready when those packages are installed in the interpreter that
`lintrunner init` would use (``python3`` on PATH); the lint itself is
``onboard.workflows.pr.lint.run_lintrunner`` (it runs `lintrunner init` when
lintrunner asks for it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from onboard import proc
from onboard.report import Reporter
from onboard.workflows.pr import lint as pr_lint
from onboard.workflows.tests.result import LinterState, LintReport

CONFIG = ".lintrunner.toml"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._\-]*)==[\w.\-+]+$")
_CODE = re.compile(r"^code\s*=\s*['\"]([^'\"]+)['\"]", re.M)
_INIT = re.compile(r"^init_command\s*=\s*\[(.*?)\][ \t]*$", re.M | re.S)
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")
_PROBE = (
    "import json, sys\n"
    "from importlib import metadata\n"
    "found = {}\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        found[name] = metadata.version(name)\n"
    "    except Exception:\n"
    "        found[name] = None\n"
    "print(json.dumps(found))\n"
)


def linters(config: Path) -> list[tuple[str, list[str]]]:
    """(code, the pip packages its init_command pins) per linter of the config.

    Read by pattern, not by a TOML parser (tomllib is Python 3.11+): each
    ``[[linter]]`` table's ``code = '…'`` and the quoted strings of its
    ``init_command = [...]``, as PyTorch writes them."""
    text = config.read_text(encoding="utf-8")
    out = []
    for block in re.split(r"^\[\[linter\]\]\s*$", text, flags=re.M)[1:]:
        code = _CODE.search(block)
        init = _INIT.search(block)
        pins = []
        for single, double in _QUOTED.findall(init.group(1) if init else ""):
            mo = _PIN.match((single or double).strip())
            if mo:
                pins.append(mo.group(1))
        out.append((code.group(1) if code else "?", pins))
    return out


def check(
    repo: Path, paths: Sequence[str], reporter: Reporter, *, lint_files: bool = True
) -> LintReport:
    exe = proc.which("lintrunner")
    config = repo / CONFIG
    not_checked: list[str] = []
    if not config.is_file():
        not_checked.append(
            f"{repo} has no {CONFIG} (a reference tree rebuilt from the wheel has none): "
            "lint runs in a full checkout (`onboard setup DIR`)"
        )
        return LintReport(exe, False, None, (), None, tuple(not_checked))
    try:
        rows = linters(config)
    except (OSError, UnicodeDecodeError) as exc:
        not_checked.append(f"{CONFIG} could not be read ({exc})")
        rows = []
    states = _states(rows)
    if exe is None:
        not_checked.append(
            "the changed files: lintrunner is not installed (`pip install lintrunner`, "
            "then `lintrunner init` in the checkout)"
        )
        return LintReport(None, True, None, tuple(states), None, tuple(not_checked))
    result = None
    if lint_files:
        result = pr_lint.run_lintrunner(repo, list(paths), reporter)
        if not result.ran:
            not_checked.append(f"the changed files: {result.note}")
    else:
        not_checked.append("the changed files (--no-lint)")
    missing = [s for s in states if not s.ready]
    initialised: bool | None = None
    if result is not None and result.ran:
        initialised = True
    elif rows and states:
        initialised = not missing
    if missing and (result is None or not result.ran):
        not_checked.append(
            f"{len(missing)} linter(s) whose tools are not installed: "
            + ", ".join(s.name for s in missing[:8])
            + (" ..." if len(missing) > 8 else "")
            + " (`lintrunner init` installs them)"
        )
    return LintReport(exe, True, initialised, tuple(states), result, tuple(not_checked))


def _states(rows: list[tuple[str, list[str]]]) -> list[LinterState]:
    wanted = sorted({pkg for _code, pins in rows for pkg in pins})
    found: dict[str, str | None] = {}
    python = proc.which("python3")
    if wanted and python:
        ran = proc.run(
            [python, "-c", _PROBE, *wanted], check=False, timeout=60,
            what="checking the linters' tools",
        )  # fmt: skip
        try:
            found = json.loads(ran.stdout.strip().splitlines()[-1]) if ran.stdout.strip() else {}
        except ValueError:
            found = {}
    states = []
    for code, pins in rows:
        absent = [p for p in pins if not found.get(p)]
        states.append(LinterState(code, not absent, ", ".join(absent)))
    return states
