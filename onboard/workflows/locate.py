"""`onboard locate`: from an error to the line of PyTorch that raised it.

Three inputs: a command (run with ``TORCH_SHOW_CPP_STACKTRACES=1``, so the
binary says ``Exception raised from meta at .../LinearAlgebra.cpp:204`` and
prints the C++ frames), a message, or a pasted traceback/log. With frames the
answer is the chain layer by layer (Python -> binding -> autograd ->
dispatcher -> backend wrapper -> kernel/meta -> the check); with a message
only, the check sites whose literal pieces match it, ranked.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from onboard import proc, torchenv
from onboard.errors import BadInput
from onboard.report import Reporter
from onboard.workflows.opsource import chain, checks, codegen, compiled, confidence, cpp_trace
from onboard.workflows.opsource.chain import Layer
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.paths import SourceLoc

RUN_TIMEOUT = 600.0
FOUND = "found"  # the binary named the site, or a torch frame raised it
MATCHED = "matched"  # message-only: ranked candidate sites
NO_MATCH = "no_match"
NOT_TORCH = "not_torch"
NO_ERROR = "no_error"
COMMAND_FAILED = "command_failed"  # the command failed before any exception reached Python
IMPORT_FAILED = "import_failed"  # an extension would not load: the doctor's analysis
# Candidates shown: at least this many, and every site of a tie up to the cap.
SHOWN = 10
SHOWN_TIES = 30


@dataclass(frozen=True)
class Candidate:
    location: SourceLoc
    macro: str
    function: str | None
    pieces: tuple[str, ...]
    coverage: float
    raises: str = "RuntimeError"  # the Python exception (or warning) the site arrives as
    score: float = 0.0
    tied: bool = False  # ranks exactly as the best one
    reasons: tuple[str, ...] = ()  # why it ranks lower than its text alone would say

    def to_json(self) -> dict[str, Any]:
        return {
            "location": self.location.to_json(),
            "macro": self.macro,
            "function": self.function,
            "pieces": list(self.pieces),
            "coverage": round(self.coverage, 3),
            "raises": self.raises,
            "score": self.score,
            "tied_with_best": self.tied,
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True)
class Warned:
    """A warning torch raised, where (Triggered internally at) and what it said."""

    location: SourceLoc
    category: str | None
    message: str | None

    def to_json(self) -> dict[str, Any]:
        return {**self.location.to_json(), "category": self.category, "message": self.message}


@dataclass
class LocateResult:
    mode: str  # command / message / stdin
    verdict: str
    exc_type: str | None = None
    message: str | None = None
    command: list[str] | None = None
    command_exit: int | None = None
    check: SourceLoc | None = None  # the line that raised, when known exactly
    check_function: str | None = None
    chain: list[Layer] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    candidates_total: int = 0  # every site that matched, shown or not
    warnings: list[Warned] = field(default_factory=list)
    python_frames: list[SourceLoc] = field(default_factory=list)
    next_step: str | None = None
    explanation: str | None = None
    limitations: list[str] = field(default_factory=list)
    commit: str | None = None
    warm: dict[str, bool] = field(default_factory=dict)
    confidence: str = confidence.NONE
    blind_spots: list[str] = field(default_factory=list)
    diagnosis: list[Any] = field(default_factory=list)  # doctor findings for a failed import
    # A reference tree without the site: the message's text in the compiled libraries.
    compiled: list[compiled.CompiledText] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 only for a sure answer: the line the binary or traceback named, or one
        message match of high confidence. Everything else (nothing found, an
        uncertain match, a command that did not fail in torch) is 1."""
        return 0 if self.verdict in (FOUND, MATCHED) and self.confidence in _SURE else 1

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.exit_code == 0,
            "mode": self.mode,
            "verdict": self.verdict,
            "exc_type": self.exc_type,
            "message": self.message,
            "command": self.command,
            "command_exit": self.command_exit,
            "check": self.check.to_json() if self.check else None,
            "check_function": self.check_function,
            "chain": [layer.to_json() for layer in self.chain],
            "candidates": [c.to_json() for c in self.candidates],
            "candidates_total": self.candidates_total,
            "confidence": self.confidence,
            "blind_spots": self.blind_spots,
            "diagnosis": [d.to_json() for d in self.diagnosis],
            "compiled": [c.to_json() for c in self.compiled],
            "warnings": [w.to_json() for w in self.warnings],
            "python_frames": [f.to_json() for f in self.python_frames],
            "explanation": self.explanation,
            "next_step": self.next_step,
            "limitations": self.limitations,
            "commit": self.commit,
            "cache_warm": self.warm,
        }


_SURE = (confidence.CERTAIN, confidence.HIGH)


def locate(
    *,
    command: Sequence[str] | None = None,
    message: str | None = None,
    text: str | None = None,
    workspace: str | None = None,
    python: str | None = None,
    refresh: bool = False,
    timeout: float = RUN_TIMEOUT,
    reporter: Reporter | None = None,
) -> LocateResult:
    """Exactly one of ``command`` (argv), ``message`` or ``text`` (a pasted log)."""
    reporter = reporter or Reporter()
    given = [x for x in (command, message, text) if x is not None]
    if len(given) != 1:
        raise BadInput(
            "Give exactly one of: a command after `--`, a message, or `-` to read a traceback "
            "from stdin.",
            next_step='Run `onboard locate -- python repro.py`, `onboard locate "MESSAGE"` or '
            "`some_command 2>&1 | onboard locate -`.",
        )
    ctx = TreeContext.open(workspace, python, reporter, refresh=refresh)
    result: LocateResult
    if command is not None:
        argv = list(command)
        if not argv:
            raise BadInput(
                "No command was given after `--`.",
                next_step="Run `onboard locate -- python repro.py`.",
            )
        if python and argv[0] in ("python", "python3"):
            argv[0] = python
        reporter.step(f"Running {' '.join(argv)} with TORCH_SHOW_CPP_STACKTRACES=1")
        run = proc.run(
            argv,
            extra_env={"TORCH_SHOW_CPP_STACKTRACES": "1", "PYTHONUNBUFFERED": "1"},
            timeout=timeout,
            check=False,
            what=f"`{' '.join(argv)}`",
        )
        output = run.stdout + "\n" + run.stderr
        trace = cpp_trace.parse(output)
        result = LocateResult(
            mode="command", verdict=NO_ERROR, command=argv, command_exit=run.returncode
        )
        here = torchenv.shadowing_tree(Path.cwd())
        if here is not None:
            # The command runs where the user stands, as it would without onboard.
            result.limitations.append(
                f"The command ran in {here.parent}, whose torch/ is a source tree without "
                "compiled libraries: Python started there imports it instead of the installed "
                "torch. Run the command from another folder."
            )
        if run.returncode < 0 and trace.message is None:
            from onboard.workflows.stuck import native_crash

            if native_crash.fatal(run.returncode):  # its C++ frames, mapped like a trace
                native_crash.answer(ctx, argv, run.returncode, output, timeout, result)
                result.commit = ctx.ws.commit
                return result
        if trace.message is None and not trace.sites:
            _no_exception(result, argv, run.returncode, run.stderr)
            result.commit = ctx.ws.commit
            return result
    else:
        raw = message if message is not None else text
        assert raw is not None
        if not raw.strip():
            raise BadInput(
                "The message is empty." if message is not None else "Nothing was read from stdin.",
                next_step='Pass the error text (`onboard locate "mat1 and mat2 shapes cannot be '
                'multiplied (2x3 and 4x5)"`) or pipe a traceback into `onboard locate -`.',
            )
        trace = cpp_trace.parse(raw)
        if trace.message is None and not trace.sites and not trace.python_frames:
            # A bare message: the whole text is what the check printed.
            trace.message = raw.strip()
        result = LocateResult(mode="message" if message is not None else "stdin", verdict=NO_MATCH)
    result.commit = ctx.ws.commit
    _resolve(ctx, trace, result)
    result.warm = dict(ctx.warm)
    return result


def _resolve(ctx: TreeContext, trace: cpp_trace.Trace, result: LocateResult) -> None:
    smap = ctx.source_map
    ctx.generated_dir = codegen.existing(ctx.checkout, ctx.tree_id)
    smap.generated_dir = ctx.generated_dir
    result.exc_type = trace.exc_type
    result.message = trace.message
    result.python_frames = [smap.map(f.path, f.line) for f in trace.python_frames]
    result.warnings = [
        Warned(smap.map(s.path, s.line), s.category, s.message)
        for s in trace.sites
        if s.kind == "triggered"
    ]

    raised = trace.raised
    # A warning's "Triggered internally at" is the answer only when nothing was raised.
    exception = bool(trace.exc_type) and not (trace.exc_type or "").endswith("Warning")
    if raised is not None and (raised.kind != "triggered" or not exception):
        result.verdict = FOUND
        result.check = smap.map(raised.path, raised.line)
        result.check_function = raised.func or chain.enclosing(ctx, result.check)
    torch_frames = [loc for loc in result.python_frames if loc.in_torch]
    if result.check is None and torch_frames and trace.exc_type:
        # Raised in torch's Python code: the last torch frame is the raise.
        result.verdict = FOUND
        result.check = torch_frames[-1]
        result.check_function = trace.python_frames[
            result.python_frames.index(torch_frames[-1])
        ].func

    result.chain = chain.build(
        ctx, trace, result.python_frames, result.check, result.check_function
    )

    if trace.message and _loader_failure(trace):
        # Even when a torch frame made the call (torch/__init__.py loading its libraries),
        # the loader refused a file: what matters is why, which the doctor reads.
        _import_failure(ctx, trace, result)
        return
    if result.check is None and trace.message:
        _match_message(ctx, trace, result)
    elif result.check is not None:
        result.confidence = confidence.CERTAIN
    if result.check is None and not result.candidates and trace.sites:
        # Only warnings were located.
        result.verdict = FOUND if result.warnings else result.verdict

    if result.verdict in (NO_MATCH, NO_ERROR):
        user_frames = [loc for loc in result.python_frames if not loc.in_torch]
        if trace.python_frames and not torch_frames and not trace.cpp_frames:
            result.verdict = NOT_TORCH
            last = user_frames[-1] if user_frames else None
            where = f" at {last.label}" if last else ""
            result.explanation = (
                f"This traceback never enters torch: {trace.exc_type or 'the error'} is raised"
                f"{where}, in your code or a library's, and no TORCH_CHECK or torch `raise` "
                "site has its message."
            )
            result.next_step = (
                "Read the last frame of the traceback; if torch is involved further down, run "
                "the failing code with `onboard locate -- python repro.py`."
            )
        elif trace.message:
            families = len(ctx.checks().families)
            result.explanation = (
                f"No check, error or warning macro site ({families} macro families read from "
                "the tree's headers: TORCH_CHECK and kin, internal asserts, TORCH_WARN*, "
                "C10_THROW_ERROR) and no Python `raise` / `warnings.warn` / `torch._check` site "
                f"in {ctx.checkout} has literal text matching this message (it may be built at "
                "runtime, come from a third-party library, or be from another torch version)."
            )
            if result.compiled:
                result.explanation += (
                    " Its text is in the installed torch's compiled libraries (below): the "
                    "check is in a .cpp/.cu file this tree does not have."
                )
            result.next_step = _certain_next_step(ctx, trace, result)
        else:
            result.explanation = (
                "No exception, torch warning or check message was found in the input."
            )
            result.next_step = (
                "Pass the full error output (`... 2>&1 | onboard locate -`) or run the code with "
                "`onboard locate -- python repro.py`."
            )

    if ctx.ws.is_reference:
        missing = [
            loc
            for loc in [result.check, *[c.location for c in result.candidates]]
            if loc is not None and loc.in_torch and not loc.in_checkout and not loc.generated
        ]
        if missing:
            limit = ctx.ws.limitation(
                f"The source line at {missing[0].label} (a .cpp/.cu file; its GitHub link is shown)"
            )
            if limit:
                result.limitations.append(limit)
        if result.verdict == NO_MATCH:
            limit = ctx.ws.limitation(
                "Matching messages against checks in .cpp/.cu files (only headers and Python "
                "files were searched)"
            )
            if limit:
                result.limitations.append(limit)


def _no_exception(result: LocateResult, argv: list[str], code: int, stderr: str) -> None:
    """The command printed no exception or torch warning: it passed, or failed outside torch."""
    shown = shlex.join(argv)
    if code == 0:
        result.explanation = (
            f"`{shown}` exited 0 and printed no exception or torch warning, so there is "
            "nothing to locate."
        )
        result.next_step = (
            "Run it with the input that fails, or paste the error: "
            '`onboard locate "MESSAGE"` or `... 2>&1 | onboard locate -`.'
        )
        return
    result.verdict = COMMAND_FAILED
    said = next((ln.strip() for ln in reversed(stderr.splitlines()) if ln.strip()), "")
    if code < 0:
        name = _signal_name(-code)
        result.explanation = (
            f"`{shown}` was killed by {name}: it crashed in native code, which prints no "
            "Python exception to walk down."
        )
        if argv and os.path.basename(argv[0]).startswith("python"):
            again = shlex.join([argv[0], "-X", "faulthandler", *argv[1:]])
            result.next_step = f"See the Python frame it died in: `{again}`."
        return
    result.explanation = (
        f"The command itself failed (exit {code}) before any Python exception or torch "
        "warning was printed" + (f": {said}" if said else ".")
    )
    result.next_step = (
        "Fix the command so it runs (a missing file, a typo, another interpreter), then run "
        f"`onboard locate -- {shown}` again."
    )


def _signal_name(number: int) -> str:
    import signal

    try:
        return f"{signal.Signals(number).name} (signal {number})"
    except ValueError:
        return f"signal {number}"


# What the dynamic loader says when an extension cannot be loaded.
_LOADER = re.compile(
    r"undefined symbol:|cannot open shared object file|version `[^']+' not found"
    r"|wrong ELF class|invalid ELF header"
)


def _loader_failure(trace: cpp_trace.Trace) -> bool:
    kind = checks.short_type(trace.exc_type)
    return kind in ("ImportError", "ModuleNotFoundError", "OSError") and bool(
        _LOADER.search(trace.message or "")
    )


def _import_failure(ctx: TreeContext, trace: cpp_trace.Trace, result: LocateResult) -> None:
    """An extension would not load: no check raised this, the loader did. Ask the doctor."""
    from onboard.workflows.doctor import extension, loader_error

    result.verdict = IMPORT_FAILED
    result.confidence = confidence.NONE
    script = _script_of(trace)
    result.diagnosis = loader_error.explain_message(
        ctx.python,
        trace.exc_type,
        trace.message or "",
        module=extension.module_of(trace),
        folders=[os.path.dirname(os.path.abspath(script))] if script else [],
        reporter=ctx.reporter,
    )
    result.explanation = (
        "This is the dynamic loader refusing a compiled extension, not a check in torch's "
        "source: no line of PyTorch raised it. What its files say:"
    )
    result.next_step = (
        f"Check it again after the fix: `onboard doctor -- {shlex.join([ctx.python, script])}`."
        if script
        else "After the fix, check the import with `onboard doctor --import MODULE`."
    )


def _match_message(ctx: TreeContext, trace: cpp_trace.Trace, result: LocateResult) -> None:
    """Rank the check sites by the message, its exception type and traceback; say how sure."""
    assert trace.message is not None
    index = ctx.checks()
    matches = checks.search(index, trace.message, exc_type=trace.exc_type, limit=0)
    functions = {f.func for f in trace.python_frames if f.func}
    functions |= {cpp_trace.classify(f.symbol).name.split("::")[-1] for f in trace.cpp_frames}
    if functions and matches:
        marked = []
        for m in matches[:100]:
            loc = ctx.source_map.loc(m.path, m.line)
            hit = chain.enclosing(ctx, loc) in functions
            marked.append(replace(m, in_frames=True) if hit else m)
        matches = sorted(
            marked + matches[100:],
            key=lambda m: (tuple(-x for x in m.rank_key), m.path, m.line),
        )
    judged = confidence.judge(
        matches,
        exc_type=trace.exc_type,
        reference=ctx.ws.is_reference,
        notes=index.notes,
    )
    result.confidence = judged.confidence
    result.blind_spots = list(judged.blind_spots)
    if ctx.ws.is_reference and (not matches or matches[0].reach != checks.EAGER):
        # The site is likely in a .cpp/.cu file this tree lacks: ask the binary.
        prefix = ctx.ws.build_prefix or "/__w/pytorch/pytorch"
        libs = compiled.libraries(ctx.python)
        result.compiled = [
            replace(c, url=ctx.ws.github_url(c.file, None) if c.file else None)
            for c in compiled.search(libs, trace.message, prefix)
        ]
    best = checks.tied(matches)
    result.candidates_total = len(matches)
    for m in matches[: max(SHOWN, min(len(best), SHOWN_TIES))]:
        loc = ctx.source_map.loc(m.path, m.line)
        result.candidates.append(
            Candidate(
                loc,
                m.macro,
                chain.enclosing(ctx, loc),
                m.pieces,
                m.coverage,
                m.raises,
                m.score,
                m in best,
                m.reasons,
            )
        )
    if result.candidates:
        result.verdict = MATCHED
        if not judged.sure:
            result.next_step = _certain_next_step(ctx, trace, result)


def _script_of(trace: cpp_trace.Trace) -> str | None:
    """The script a pasted traceback came from, when it is a file on this machine."""
    first = trace.python_frames[0] if trace.python_frames else None
    if first is None or first.func not in ("<module>", None) or not first.path.endswith(".py"):
        return None
    return first.path if os.path.isfile(first.path) else None


def _certain_next_step(ctx: TreeContext, trace: cpp_trace.Trace, result: LocateResult) -> str:
    """How to get a certain answer: run the code so the binary names the line."""
    if result.mode == "command" and result.command:
        return (
            "The command's output names no line; run the code that raises it directly "
            "(`onboard locate -- python repro.py`)."
        )
    script = _script_of(trace)
    if script is not None:
        again = shlex.join(["onboard", "locate", "--", ctx.python, script])
        return f"For a certain answer, run the script this traceback came from: `{again}`."
    return (
        "For a certain answer, run the code that raises it through onboard, so the binary "
        "names the line itself: `onboard locate -- python repro.py`."
    )
