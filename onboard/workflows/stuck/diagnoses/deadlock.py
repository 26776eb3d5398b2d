"""A plain Python deadlock: two threads (of one process), each blocked acquiring
a lock the other holds (``with a: with b:`` against ``with b: with a:``). The
lock a thread waits for is its innermost line's ``with NAME:`` /
``NAME.acquire()``; the ones it holds are the ``with`` blocks its lines sit in."""

from __future__ import annotations

from onboard.workflows.stuck.diagnoses.common import (
    Context,
    at,
    blocked_on_lock,
    held_locks,
    loc,
    started_in_cpp,
    thread_label,
    wanted_lock,
    where_ids,
)
from onboard.workflows.stuck.model import Diagnosis, Picture


def diagnose(pictures: list[Picture], context: Context) -> list[Diagnosis]:
    found = []
    for picture in pictures:
        blocked = [
            (t, lock)
            for t in picture.threads
            if blocked_on_lock(t) and not started_in_cpp(t) and (lock := wanted_lock(t))
        ]
        seen: set[frozenset[int]] = set()
        for a, lock_a in blocked:
            for b, lock_b in blocked:
                pair = frozenset((a.tid, b.tid))
                if a is b or pair in seen:
                    continue
                held_a, held_b = held_locks(a), held_locks(b)
                if lock_a in held_b and lock_b in held_a:
                    seen.add(pair)
                    found.append(
                        Diagnosis(
                            kind="python_deadlock",
                            title=f"Python deadlock: two threads wait for each other's lock "
                            f"(`{lock_a}`, `{lock_b}`)",
                            where=where_ids((picture, a), (picture, b)),
                            evidence=(
                                f"{thread_label(picture, a)} holds `{lock_b}` (taken at "
                                f"{held_a[lock_b].label}) and waits for `{lock_a}` at "
                                f"{at(a.last_python)}",
                                f"{thread_label(picture, b)} holds `{lock_a}` (taken at "
                                f"{held_b[lock_a].label}) and waits for `{lock_b}` at "
                                f"{at(b.last_python)}",
                            ),
                            meaning=(
                                "Each thread holds one lock and waits for the other's: they "
                                "took the two locks in opposite orders."
                            ),
                            try_next=(
                                f"Take `{lock_a}` and `{lock_b}` in one fixed order everywhere, "
                                "or guard both with one lock.",
                                "lock.acquire(timeout=...) makes the wait fail instead of hang "
                                "while you look for the second order.",
                            ),
                            sites=tuple(
                                site
                                for site in (
                                    loc(a.last_python),
                                    held_a[lock_b].site,
                                    loc(b.last_python),
                                    held_b[lock_a].site,
                                )
                                if site is not None
                            ),
                        )
                    )
    return found
