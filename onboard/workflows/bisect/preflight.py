"""The pre-flight: both bounds are tested before git bisect is told them, and a bound
that gives no clear verdict, or bounds the wrong way round, stop the run with the
next step to take."""

from __future__ import annotations

from dataclasses import dataclass

from onboard.errors import OnboardError
from onboard.workflows.bisect.model import Step
from onboard.workflows.bisect.runner import FAIL, NO_GPU, PASS, SKIP, Verdict
from onboard.workflows.bisect.terms import Terms


@dataclass(frozen=True)
class Bounds:
    """The two ends of the range, as the user named them and as commits."""

    old_ref: str
    new_ref: str
    old: str
    new: str


def no_gpu_error(where: str, verdict: Verdict, why: str) -> OnboardError:
    run = next(r for r in verdict.runs if r.outcome == NO_GPU)
    last = run.tail.splitlines()[-1] if run.tail else "a CUDA error"
    return OnboardError(
        f"The repro stopped at {where} with `{last}`: it needs a CUDA GPU, and this machine has "
        f"none it can use ({why or 'torch reports no usable device'}). A missing GPU says nothing "
        "about the commit, so onboard will not bisect it here.",
        next_step="Run the same `onboard bisect` on a machine with an NVIDIA GPU and a CUDA "
        "build (the workspace's python, or --python).",
    )


def bound_verdict(step: Step, bound: str, gpu_why: str) -> Verdict:
    """The verdict at one bound (``--good REF``), or the error when it gave none."""
    if step.verdict is None:
        raise OnboardError(
            f"Cannot test {bound}: {step.reason}.",
            next_step="Fix the build (see the log), or pass --build never to test the "
            "Python sources against the current build.",
        )
    v = step.verdict
    if any(r.outcome == NO_GPU for r in v.runs):
        raise no_gpu_error(bound, v, gpu_why)
    if v.value == SKIP:
        raise OnboardError(
            f"The repro gave no verdict at {bound}: {v.reason}.",
            next_step="Raise --timeout, or with a crashing repro use --on-crash bad; "
            "a bound must pass or fail clearly.",
        )
    return v


def said(v: Verdict) -> str:
    """What the repro did, as a pre-flight line says it."""
    return {PASS: "passes", FAIL: "fails"}.get(v.value, "gives no verdict") + (
        " (flaky)" if v.flaky else ""
    )


def check_orientation(t: Terms, vo: Verdict, vn: Verdict, b: Bounds, by_hand: str) -> None:
    """Nothing when the repro changes from the old state to the new one between the
    bounds; otherwise the error that says which way it went. ``by_hand``: the command
    that reruns the repro at ``--bad``."""
    at_old, at_new = vo.value, vn.value
    want_old, want_new = (FAIL, PASS) if t.fix else (PASS, FAIL)
    if (at_old, at_new) == (want_old, want_new):
        return
    old_ref, new_ref = b.old_ref, b.new_ref
    last = _last_lines(vo if at_old == FAIL else vn)
    if not t.fix:
        if at_old == PASS and at_new == PASS:
            raise OnboardError(
                f"The repro passes at both --good {old_ref} ({b.old[:10]}) and --bad {new_ref} "
                f"({b.new[:10]}): it does not reproduce the problem at {new_ref}, so there is "
                "nothing to bisect.",
                next_step="Make the repro exit non-zero when the problem shows (an assert or "
                f"sys.exit(1)), or pass a --bad that has the problem. {by_hand}",
            )
        if at_old == FAIL and at_new == FAIL:
            raise OnboardError(
                f"The repro fails at --good {old_ref} ({b.old[:10]}) as well as at --bad "
                f"{new_ref}, so {old_ref} is not a good bound.{last}",
                next_step="Pass an older --good where it passes (e.g. an earlier release tag), "
                "or check that the repro runs at all against this checkout.",
            )
        raise OnboardError(
            f"The repro fails at --good {old_ref} and passes at --bad {new_ref}: between them "
            "the problem was fixed, not introduced.",
            next_step="To find the commit that fixed it, run the same command with "
            "`--term-old broken --term-new fixed`.",
        )
    if at_old == PASS and at_new == FAIL:
        raise OnboardError(
            f"With --term-old {t.old} --term-new {t.new} onboard looks for the commit where "
            f"the repro starts passing, but it passes at --good {old_ref} and fails at --bad "
            f"{new_ref}: that is a regression.",
            next_step="Drop --term-old/--term-new to find the commit that broke it.",
        )
    state = "passes" if at_old == PASS else "fails"
    raise OnboardError(
        f"The repro {state} at both --good {old_ref} and --bad {new_ref}, so there is no "
        f"{t.old} -> {t.new} change between them to find.{last}",
        next_step="With --term-old/--term-new the repro must fail at --good and pass at "
        f"--bad. {by_hand}",
    )


def _last_lines(v: Verdict) -> str:
    tails = [r.tail for r in v.runs if r.tail]
    if not tails:
        return ""
    return " Its last output: " + " | ".join(tails[0].splitlines()[-3:])
