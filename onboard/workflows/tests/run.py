"""`onboard tests --run`: run what the selection found, here, and say what ran.

Three ways, by what the workspace has (``run_selection``):

- a full checkout with a build (the ``build`` session's venv, ``WS/.nox/build``,
  workflows/build/plan.py): each selected test file's own command, in that venv,
  from the checkout's root, with a time limit; its output read for the counts of
  passed, failed and skipped tests and the first failure (unittest's summary, as
  PyTorch's ``run_tests()`` prints it, or pytest's);
- a reference tree (no ``test/`` folder: ``onboard setup --from-wheel``): the
  changed ops' OpInfo checks against the torch in front of it (``_opinfo_child.py``:
  op.ref on each reference input, float64 gradcheck, error inputs), each result at
  its sample;
- a practice kernel (``onboard new-op trunc`` on an op PyTorch has): the same OpInfo
  samples on the learner's kernel, built out of tree by the very compile
  `onboard verify`'s judge makes (newop/judge.py, newop/out_of_tree.py).

OpInfo imports numpy and expecttest. When the workspace's interpreter has them they
are used as they are; otherwise the workspace's nox session ``opinfo``
(tasks/opinfo.py) makes ``WS/.nox/opinfo`` with the same torch version and them.
Nothing is installed into the user's environment.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import proc, workspace
from onboard.errors import OnboardError, ProcTimeout
from onboard.jsonable import spec
from onboard.shell import quote

if TYPE_CHECKING:
    from onboard.workflows.tests.result import Selected, Selection

PASSED = "passed"
FAILED = "failed"
SKIPPED = "skipped"
DEFAULT_TIMEOUT = 1800.0  # one selected test file, in a full checkout
OPINFO_TIMEOUT = 900.0  # the OpInfo child (its import alone takes ~8 s)
VENV_TIMEOUT = 1200.0  # nox -s opinfo: pip installs torch's wheel (~2 minutes here)
# What OpInfo's database cannot be imported without (common_methods_invocations
# imports numpy; torch/testing/_internal/common_utils.py imports expecttest).
OPINFO_IMPORTS = ("numpy", "expecttest")


@dataclass(frozen=True)
class Mismatch:
    """The first element (row-major) where the op and what it is compared with differ."""

    index: tuple[int, ...]
    input: Any  # the input's element there, when the output has the input's shape
    expected: Any
    got: Any


@dataclass(frozen=True)
class SampleResult:
    """One OpInfo sample's check: ``check`` is "reference" (the op against op.ref, and
    for a practice kernel against the installed op), "gradcheck" (float64) or "error
    inputs"; ``index``: the sample's place in what the OpInfo generates for that
    dtype; ``shapes``: its tensors' shapes."""

    op: str
    check: str
    dtype: str
    index: int
    shapes: tuple[tuple[int, ...], ...]
    status: str  # passed / failed / skipped
    detail: str = field(default="", metadata=spec(empty=None))
    against: str = field(default="", metadata=spec(empty=None))
    mismatch: Mismatch | None = None
    kernel: str = field(default="", metadata=spec(empty=None))  # a practice kernel's file

    @property
    def label(self) -> str:
        shapes = ", ".join("x".join(map(str, s)) or "scalar" for s in self.shapes)
        dtype = f" {self.dtype}" if self.dtype else ""
        on = f" on {self.kernel}" if self.kernel else ""
        if self.check == "run":  # the child or the compile failed: no sample ran
            return f"{self.op}{on}: could not run"
        return f"{self.op}{on}: {self.check}{dtype} sample {self.index} ({shapes})"


@dataclass(frozen=True)
class NotRun:
    """What was not run (``what``: a check, a dtype, a test file) and why."""

    op: str
    what: str
    why: str


@dataclass(frozen=True)
class TestRun:
    """A selected test file run in the build's venv: its command, exit status, the
    counts its output gave and its first failure."""

    __test__ = False  # not a pytest class

    test: str
    command: tuple[str, ...]
    returncode: int | None  # None: stopped at the time limit
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    first_failure: str = field(default="", metadata=spec(empty=None))
    seconds: float = field(default=0.0, metadata=spec(digits=3))
    tail: str = field(default="", metadata=spec(omit=True))  # the output's end, for -v

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.failed


@dataclass
class RunReport:
    """JSON keys: mode ("tests": a full checkout's build; "opinfo": OpInfo against the
    installed torch; "practice": OpInfo on the practice kernel, with the installed
    torch for the other ops; "none": nothing could run), python (the interpreter it
    ran in), venv (how that interpreter was chosen), torch_version, ops, tests
    [TestRun], samples [SampleResult], not_run [{op, what, why}], seconds, then ok,
    counts {passed, failed, skipped} and first_failure (the first failed sample's or
    test's label)."""

    mode: str
    python: str = ""
    venv: str = field(default="", metadata=spec(empty=None))
    torch_version: str = field(default="", metadata=spec(empty=None))
    ops: tuple[str, ...] = ()
    tests: list[TestRun] = field(default_factory=list)
    samples: list[SampleResult] = field(default_factory=list)
    not_run: list[NotRun] = field(default_factory=list)
    seconds: float = field(default=0.0, metadata=spec(digits=3))

    @property
    def failures(self) -> list[SampleResult]:
        return [s for s in self.samples if s.status == FAILED]

    @property
    def ok(self) -> bool:
        return not self.failures and all(t.ok for t in self.tests)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def counts(self) -> dict[str, int]:
        counts = {
            status: sum(s.status == status for s in self.samples)
            for status in (PASSED, FAILED, SKIPPED)
        }
        for t in self.tests:
            counts[PASSED] += t.passed
            counts[FAILED] += t.failed
            counts[SKIPPED] += t.skipped
        return counts

    @property
    def first_failure(self) -> str | None:
        for t in self.tests:
            if not t.ok:
                return f"{t.test}: {t.first_failure or f'exit {t.returncode}'}"
        failed = self.failures
        if not failed:
            return None
        first = failed[0]
        return f"{first.label}: {first.detail}"

    def json_extra(self) -> dict[str, object]:
        return {"ok": self.ok, "counts": self.counts(), "first_failure": self.first_failure}


def run_selection(request: Any, selection: Selection) -> RunReport:
    """Run ``selection`` in the workspace (``request.workspace``, else the one around
    the checkout): its tests in the build's venv in a full checkout with a build,
    else its ops' OpInfo checks (on a practice kernel where the op is practised)."""
    start = time.monotonic()
    ws = _workspace(request, selection)
    timeout = getattr(request, "timeout", None)
    limit = getattr(request, "max_samples", None)
    # A reference tree's test/ holds at most what onboard wrote (a practice test).
    full = not ws.is_reference and (ws.checkout_path / "test").is_dir()
    build_python = _build_python(ws)
    if full and build_python is not None:
        report = _run_tests(ws, selection, build_python, timeout)
    else:
        python = getattr(request, "python", None) or ws.python  # --python, else the workspace's
        report = _run_opinfo(ws, selection, timeout, limit, python)
        if full:
            report.not_run.insert(
                0,
                NotRun(
                    "*",
                    "the selected test files",
                    f"this full checkout has no build ({ws.root / '.nox' / 'build'} is "
                    "missing): run `onboard build`, then `onboard tests --run` runs them "
                    "there; the OpInfo checks below ran against the installed torch",
                ),
            )
    for changed in selection.changed:
        if not changed.opinfos:
            # A scaffolded op (`onboard new-op NEW`): its OpInfo entry is the checkout's,
            # which the installed torch does not import.
            report.not_run.append(
                NotRun(
                    changed.base,
                    "OpInfo checks",
                    "no entry in the installed torch's op_db (a new op): `onboard verify` "
                    "builds it out of tree and checks it against its test's REFERENCE; "
                    "its OpInfo entry runs once PyTorch is built with it (`onboard build`)",
                )
            )
    report.seconds = time.monotonic() - start
    return report


def _workspace(request: Any, selection: Selection) -> workspace.Workspace:
    given = getattr(request, "ws", None)
    if isinstance(given, workspace.Workspace):
        return given
    explicit = getattr(request, "workspace", None)
    return workspace.require(explicit, start=Path(selection.checkout))


def _build_python(ws: workspace.Workspace) -> Path | None:
    """The build session's venv interpreter (workflows/build/plan.py: ``WS/.nox/build``)."""
    python = ws.root / ".nox" / "build" / "bin" / "python"
    return python if python.exists() else None


# --- a full checkout with a build: the selected test files ---


def _run_tests(
    ws: workspace.Workspace, selection: Selection, python: Path, timeout: float | None
) -> RunReport:
    report = RunReport("tests", python=str(python), venv=f"the build's venv ({python})")
    report.ops = tuple(selection.ops)
    for item in selection.selected:
        if not item.present:
            report.not_run.append(NotRun("*", item.test, "not in this checkout"))
            continue
        report.tests.append(run_test(ws.checkout_path, item, python, timeout))
    return report


def run_test(checkout: Path, item: Selected, python: Path, timeout: float | None) -> TestRun:
    """``item.command`` with its ``python`` the build's, from the checkout's root."""
    argv = [str(python) if a in ("python", "python3") else a for a in item.command]
    limit = timeout or DEFAULT_TIMEOUT
    start = time.monotonic()
    try:
        result = proc.run(argv, cwd=checkout, timeout=limit, check=False, what=item.test)
    except ProcTimeout as exc:
        text = (exc.stdout or "") + "\n" + (exc.stderr or "")
        counts = parse_output(text)
        return TestRun(
            item.test,
            tuple(argv),
            None,
            *counts[:3],
            first_failure=counts[3] or f"stopped after {limit:g} s (--timeout)",
            seconds=time.monotonic() - start,
            tail=text[-4000:],
        )
    text = result.stdout + "\n" + result.stderr
    passed, failed, skipped, first = parse_output(text)
    if result.returncode != 0 and not first:
        first = _last_line(text) or f"exit {result.returncode}"
    return TestRun(
        item.test,
        tuple(argv),
        result.returncode,
        passed,
        failed,
        skipped,
        first_failure=first,
        seconds=result.seconds,
        tail=text[-4000:],
    )


_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in ", re.M)
_UNITTEST_END = re.compile(r"^(OK|FAILED)(?: \(([^)]*)\))?\s*$", re.M)
_PYTEST_END = re.compile(r"^=+ (.*\b(?:passed|failed|skipped|error|errors|deselected)\b.*) in ")
_UNITTEST_FAIL = re.compile(r"^(?:FAIL|ERROR): (\S+) \(([^)]*)\)", re.M)
_PYTEST_FAIL = re.compile(r"^(?:FAILED|ERROR) (\S+)(?: - (.*))?$", re.M)


def parse_output(text: str) -> tuple[int, int, int, str]:
    """(passed, failed, skipped, first failure) from a test run's output: unittest's
    "Ran N tests" and "OK (skipped=K)" / "FAILED (failures=F, errors=E, skipped=K)"
    (PyTorch's run_tests()), or pytest's "== P passed, F failed, K skipped in ==" line;
    the first failure is its test id and the last line of its traceback."""
    passed = failed = skipped = 0
    ran = _UNITTEST_RAN.findall(text)
    ends = _UNITTEST_END.findall(text)
    pytest_lines = [m.group(1) for ln in text.splitlines() if (m := _PYTEST_END.match(ln))]
    if pytest_lines:
        for part in pytest_lines[-1].split(","):
            count, _, word = part.strip().partition(" ")
            if not count.isdigit():
                continue
            if word.startswith("passed"):
                passed += int(count)
            elif word.startswith(("failed", "error")):
                failed += int(count)
            elif word.startswith("skipped"):
                skipped += int(count)
    elif ran and ends:
        total = int(ran[-1])
        details: dict[str, int] = {}
        for part in (ends[-1][1] or "").split(","):
            key, _, value = part.partition("=")
            if value.strip().isdigit():
                details[key.strip()] = int(value)
        failed = details.get("failures", 0) + details.get("errors", 0)
        failed += details.get("unexpected successes", 0)
        skipped = details.get("skipped", 0) + details.get("expected failures", 0)
        passed = max(0, total - failed - skipped)
    return passed, failed, skipped, _first_failure(text)


def _first_failure(text: str) -> str:
    mo = _PYTEST_FAIL.search(text)
    if mo:
        return f"{mo.group(1)}: {mo.group(2)}" if mo.group(2) else mo.group(1)
    mo = _UNITTEST_FAIL.search(text)
    if not mo:
        return ""
    # Its traceback runs to the next ===/--- rule; the last line says what was raised.
    block = re.split(r"^(?:=|-){20,}\s*$", text[mo.end() :], flags=re.M)
    body = [ln for ln in (block[1] if len(block) > 1 else "").splitlines() if ln.strip()]
    said = body[-1].strip() if body else ""
    return f"{mo.group(2)}.{mo.group(1)}".replace(f"{mo.group(1)}.{mo.group(1)}", mo.group(1)) + (
        f": {said}" if said else ""
    )


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


# --- a reference tree (and practice kernels): OpInfo samples ---


@dataclass(frozen=True)
class Interpreter:
    """The interpreter OpInfo runs in, and why that one (or why none)."""

    python: str | None
    why: str
    torch_version: str = ""


def opinfo_interpreter(
    ws: workspace.Workspace, timeout: float | None = None, python: str | None = None
) -> Interpreter:
    """``python`` (default: the workspace's interpreter) when it can import OpInfo's
    database as it is; else ``WS/.nox/opinfo`` (made now by ``nox -s opinfo`` when
    missing), with the workspace's torch version."""
    python = python or ws.python
    version = _importable(ws, python)
    if version is not None:
        return Interpreter(
            python,
            f"the workspace's interpreter {python} (it has numpy and expecttest)",
            version,
        )
    venv = ws.root / ".nox" / "opinfo" / "bin" / "python"
    wanted = f"torch=={ws.torch_version}"
    if venv.exists():
        version = _importable(ws, str(venv))
        if version is not None:
            return Interpreter(str(venv), f"the workspace's nox venv {venv.parent.parent}", version)
    made = make_opinfo_venv(ws, wanted, timeout)
    if made is not None:
        return Interpreter(None, made)
    version = _importable(ws, str(venv))
    if version is None:
        return Interpreter(None, f"{venv} was made but cannot import {', '.join(OPINFO_IMPORTS)}")
    return Interpreter(
        str(venv),
        f"the workspace's nox venv {venv.parent.parent}, made now with {wanted}",
        version,
    )


def _importable(ws: workspace.Workspace, python: str) -> str | None:
    """torch's version in ``python`` when it imports torch and OPINFO_IMPORTS, else None."""
    neutral = ws.root / ".onboard"  # not the checkout, whose torch/ would shadow torch
    neutral.mkdir(parents=True, exist_ok=True)
    code = f"import torch, {', '.join(OPINFO_IMPORTS)}; print(torch.__version__)"
    try:
        result = proc.run([python, "-c", code], cwd=neutral, timeout=120, check=False)
    except OnboardError:
        return None
    lines = result.stdout.split()
    return lines[-1] if result.returncode == 0 and lines else None


def make_opinfo_venv(
    ws: workspace.Workspace, wanted: str, timeout: float | None = None
) -> str | None:
    """Run the workspace's ``nox -s opinfo -- WANTED``; None when it made the venv, else
    why not and what to run."""
    noxfile = ws.root / "noxfile.py"
    command = f"cd {quote(ws.root)} && nox -s opinfo -- {quote(wanted)}"
    if not noxfile.is_file():
        return (
            f"{ws.root} has no noxfile.py, so its opinfo venv cannot be made: run "
            f"`{ws.setup_command}`, then `{command}`"
        )
    try:
        result = proc.run(
            [sys.executable, "-m", "nox", "-f", str(noxfile), "-s", "opinfo", "--", wanted],
            cwd=ws.root,
            timeout=timeout or VENV_TIMEOUT,
            check=False,
            what="nox -s opinfo (the venv OpInfo runs in)",
        )
    except ProcTimeout:
        return f"`nox -s opinfo` did not finish in time: run `{command}` and try again"
    except OnboardError as exc:
        return f"`nox -s opinfo` could not start ({exc}): run `{command}`"
    if result.returncode != 0:
        last = _last_line(result.stderr + "\n" + result.stdout)
        return f"`nox -s opinfo` failed ({last}): run `{command}` to see why"
    return None


def _run_opinfo(
    ws: workspace.Workspace,
    selection: Selection,
    timeout: float | None,
    limit: int | None,
    python: str,
) -> RunReport:
    ops = tuple(selection.ops)
    report = RunReport("opinfo", ops=ops)
    if not ops:
        report.mode = "none"
        report.not_run.append(
            NotRun("*", "OpInfo checks", "the change touches no op that OpInfo covers")
        )
        return report
    found = opinfo_interpreter(ws, timeout, python)
    report.venv = found.why
    if found.python is None:
        # Asked to run and could not: a failure (exit 1), with what to run by hand.
        report.mode = "none"
        _add(report, {"error": found.why, "ops": list(ops)})
        return report
    report.python = found.python
    report.torch_version = found.torch_version
    if found.torch_version and found.torch_version != ws.torch_version:
        report.not_run.append(
            NotRun(
                "*",
                "the workspace's torch",
                f"{found.python} has torch "
                f"{found.torch_version}, the workspace records {ws.torch_version}",
            )
        )
    practised = _practised(ws, ops)
    plain = [op for op in ops if op not in practised]
    if practised:
        report.mode = "practice"
    for name, covered in practised.items():
        _add(report, _practice_payload(ws, name, covered, found.python, timeout, limit))
    if plain:
        _add(report, _torch_payload(ws, plain, found.python, timeout, limit))
    return report


def _practised(ws: workspace.Workspace, ops: tuple[str, ...]) -> dict[str, list[str]]:
    """{practice op: the selection's OpInfo names of it} for the practice kernels this
    checkout has (newop/judge.py: practice_ops)."""
    from onboard.workflows.newop.judge import practice_ops

    present, _ = practice_ops(ws)
    found: dict[str, list[str]] = {}
    for name in present:
        covered = [op for op in ops if op == name or op.startswith(name + ".")]
        if covered:
            found[name] = covered
    return found


def _torch_payload(
    ws: workspace.Workspace,
    ops: list[str],
    python: str,
    timeout: float | None,
    limit: int | None,
) -> dict[str, Any]:
    import json

    request = {"ops": ops, "target": "torch", "max_samples": limit}
    try:
        asked = proc.ask_child(
            python,
            "_opinfo_child.py",
            json.dumps(request),
            by_path=True,
            cwd=ws.root / ".onboard",
            timeout=timeout or OPINFO_TIMEOUT,
            what="the OpInfo checks",
        )
    except proc.NoAnswer as exc:
        return {"error": f"the OpInfo child gave no answer: {exc}", "ops": ops}
    data: dict[str, Any] = asked.data
    return data


def _practice_payload(
    ws: workspace.Workspace,
    name: str,
    ops: list[str],
    python: str,
    timeout: float | None,
    limit: int | None,
) -> dict[str, Any]:
    """The OpInfo samples of ``ops`` on the practice kernel of ``name``, built out of tree
    against ``python``'s torch by verify's compile (newop/out_of_tree.py)."""
    from onboard.workflows.newop.judge import practice_compile_request
    from onboard.workflows.newop.out_of_tree import build_and_load
    from onboard.workflows.newop.toolchain import locate_env

    start = time.monotonic()
    neutral = ws.root / ".onboard"
    env = locate_env(python, neutral)
    # Its own build folder: the interpreter may differ from verify's (a nox venv).
    build = neutral / "cache" / "practice" / name / "opinfo-build"
    request, cpu = practice_compile_request(ws, name, env, build, "opinfo")
    request.update(ops=ops, target="practice", max_samples=limit)
    loaded = build_and_load(env, request, ws.checkout_path, cpu, start)
    if not isinstance(loaded, tuple):
        where = f" at {loaded.location}" if loaded.location else ""
        return {"error": f"{cpu} did not build{where}: {loaded.detail}", "ops": ops}
    payload, _ = loaded
    payload["kernel"] = cpu
    return payload


def _add(report: RunReport, payload: dict[str, Any]) -> None:
    if "error" in payload:
        for op in payload.get("ops", []):
            report.not_run.append(NotRun(op, "OpInfo checks", payload["error"]))
        report.samples.append(
            SampleResult(
                ", ".join(payload.get("ops", [])), "run", "", 0, (), FAILED, payload["error"]
            )
        )
        return
    report.torch_version = report.torch_version or str(payload.get("torch_version", ""))
    kernel = payload.get("kernel")
    for row in payload.get("results", []):
        mismatch = row.get("mismatch")
        report.samples.append(
            SampleResult(
                op=row["op"],
                check=row["check"],
                dtype=row.get("dtype", ""),
                index=int(row.get("index", 0)),
                shapes=tuple(tuple(s) for s in row.get("shapes", [])),
                status=row["status"],
                detail=row.get("detail", ""),
                against=row.get("against", ""),
                mismatch=Mismatch(
                    tuple(mismatch["index"]),
                    mismatch.get("input"),
                    mismatch["expected"],
                    mismatch["got"],
                )
                if mismatch
                else None,
                kernel=str(kernel or ""),
            )
        )
    seen = {(n.op, n.what) for n in report.not_run}
    for item in payload.get("not_run", []):
        if (item["op"], item["what"]) not in seen:
            report.not_run.append(NotRun(item["op"], item["what"], item["why"]))
            seen.add((item["op"], item["what"]))
