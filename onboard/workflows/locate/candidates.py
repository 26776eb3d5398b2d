"""A message with no line named: the check sites whose literal text matches it, ranked
(by the message, its exception type and the functions of its traceback), and how sure
that ranking is; on a reference tree, where the message's text is in the compiled
libraries."""

from __future__ import annotations

from dataclasses import replace

from onboard.workflows.locate.result import MATCHED, Candidate, LocateResult
from onboard.workflows.locate.script import certain_next_step
from onboard.workflows.opsource import chain, checks, compiled, confidence, cpp_trace
from onboard.workflows.opsource.context import TreeContext

# Candidates shown: at least this many, and every site of a tie up to the cap.
SHOWN = 10
SHOWN_TIES = 30
# Of the ranked sites, those looked up in the traceback's functions.
_IN_FRAMES = 100


def match_message(ctx: TreeContext, trace: cpp_trace.Trace, result: LocateResult) -> None:
    """Rank the check sites by the message, its exception type and traceback; say how sure."""
    assert trace.message is not None
    index = ctx.checks()
    matches = _ranked(
        ctx, trace, checks.search(index, trace.message, exc_type=trace.exc_type, limit=0)
    )
    left_out = 0
    worded = tuple(p for m in matches[:SHOWN] for p in m.pieces)  # literal text it holds
    if trace.python_frames and not any(loc.in_torch for loc in result.python_frames):
        # A `raise` in torch's Python code would be a frame of the traceback: with none,
        # no Python site of torch raised it, whatever its words.
        kept = [m for m in matches if not m.path.endswith(".py")]
        left_out, matches = len(matches) - len(kept), kept
    judged = confidence.judge(
        matches,
        exc_type=trace.exc_type,
        reference=ctx.ws.is_reference,
        notes=index.notes,
    )
    result.confidence = judged.confidence
    result.blind_spots = list(judged.blind_spots)
    if left_out:
        result.notes.append(
            f"{left_out} Python site(s) of torch with this text were left out: the "
            "traceback has no frame in torch, and a `raise` there would be one."
        )
    if ctx.ws.is_reference and (not matches or matches[0].reach != checks.EAGER):
        result.compiled = _in_compiled_libraries(ctx, trace.message, worded)
    if judged.confidence in (confidence.HIGH, confidence.MEDIUM) and matches[0].path.endswith(
        ".py"
    ):
        doubt = _also_compiled(ctx, trace.message, matches[0], result)
        if doubt:
            result.confidence = confidence.LOW
            result.blind_spots.insert(0, doubt)
            judged = confidence.Judgement(confidence.LOW, tuple(result.blind_spots))
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
            result.next_step = certain_next_step(ctx, trace, result)


def _ranked(
    ctx: TreeContext, trace: cpp_trace.Trace, matches: list[checks.Match]
) -> list[checks.Match]:
    """``matches`` with the sites inside a function of the traceback ranked up."""
    functions = {f.func for f in trace.python_frames if f.func}
    functions |= {cpp_trace.classify(f.symbol).name.split("::")[-1] for f in trace.cpp_frames}
    if not (functions and matches):
        return matches
    marked = []
    for m in matches[:_IN_FRAMES]:
        loc = ctx.source_map.loc(m.path, m.line)
        hit = chain.enclosing(ctx, loc) in functions
        marked.append(replace(m, in_frames=True) if hit else m)
    return sorted(
        marked + matches[_IN_FRAMES:],
        key=lambda m: (tuple(-x for x in m.rank_key), m.path, m.line),
    )


def _also_compiled(
    ctx: TreeContext, message: str, best: checks.Match, result: LocateResult
) -> str | None:
    """Why a Python site that alone explains the message may still not be the one that
    raised: the interpreter raises these words itself, or (a reference tree, whose
    .cpp files were not searched) a C++ check compiled into torch has them too."""
    piece = max(best.pieces, key=len)
    interpreter = compiled.interpreter_holding(ctx.python, piece)
    if interpreter is not None:
        return (
            f"the Python interpreter raises these words itself ({piece.strip()!r} is in "
            f"{interpreter}), so the torch site that has them need not be what raised it"
        )
    if not ctx.ws.is_reference:
        return None
    result.compiled = _in_compiled_libraries(ctx, message, best.pieces)
    if not result.compiled:
        return None
    files = sorted({c.file for c in result.compiled if c.file})
    where = f" (probably {', '.join(files)})" if files else ""
    return (
        f"the text is also in the installed torch's compiled libraries{where}: a check in "
        "a .cpp/.cu file, which this tree does not have, has these words too"
    )


def _in_compiled_libraries(
    ctx: TreeContext, message: str, pieces: tuple[str, ...]
) -> list[compiled.CompiledText]:
    """The site is likely in a .cpp/.cu file this tree lacks: ask the binary."""
    prefix = ctx.ws.build_prefix or "/__w/pytorch/pytorch"
    libs = compiled.libraries(ctx.python)
    return [
        replace(c, url=ctx.ws.github_url(c.file, None) if c.file else None)
        for c in compiled.search(libs, message, prefix, pieces)
    ]
