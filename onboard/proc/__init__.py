"""The only place onboard starts subprocesses, behind one door: callers import this
package (``from onboard import proc``) and call ``proc.run``, ``proc.stream``,
``proc.reaping``...

Every child is created by ``spawn.spawn`` (marked with the run's token and one of
its own, in a session of its own), whatever shape it has:

- ``running``: a command run to its end (``run``), or started now and read later
  (``start``);
- ``streaming``: a long command whose output comes line by line (``stream``);
- ``child``: a child that answers and works on after it (``Child``);
- ``passthrough``: a user's program talking to the terminal (``Passthrough``);
- ``reaper``: the end of a run, which stops what is left (``reaping``) and starts
  the work left for after the answer (``detach_after_run``);
- ``detached``: what outlives the run on purpose;
- ``tree``: who runs below a process, and what a program left running;
- ``ask``: a child in a target interpreter (``onboard/children``) asked for its
  answer (``ask_child``);
- ``outputs``: work that stops when nobody reads its output any more;
- ``contain``: a user's program in a group onboard finds by what the kernel knows
  (its cgroup, else its session and the orphans that come back to onboard), and
  ``records``: what a run started, on disk, swept after onboard's own death
  (``sweep_dead_runs``).
"""

from onboard.proc.ask import (
    CHILDREN,
    Answer,
    ChildTimeout,
    NoAnswer,
    Unreadable,
    ask_child,
    child_command,
    without_answers,
)
from onboard.proc.child import Child
from onboard.proc.contain import described as containment
from onboard.proc.contain import sweep_dead as sweep_dead_runs
from onboard.proc.passthrough import Passthrough
from onboard.proc.reaper import detach_after_run, reaping
from onboard.proc.records import Swept
from onboard.proc.running import Result, Running, run, start
from onboard.proc.spawn import (
    BACKGROUND_NICE,
    GRACE_SECONDS,
    RUN_ENV,
    environ,
    marked,
    which,
)
from onboard.proc.streaming import stream
from onboard.proc.tree import TAIL_BYTES, Leftover, left_note

__all__ = [
    "CHILDREN",
    "Answer",
    "ChildTimeout",
    "NoAnswer",
    "Unreadable",
    "ask_child",
    "child_command",
    "without_answers",
    "BACKGROUND_NICE",
    "GRACE_SECONDS",
    "RUN_ENV",
    "Child",
    "Leftover",
    "Passthrough",
    "Result",
    "Running",
    "Swept",
    "TAIL_BYTES",
    "containment",
    "sweep_dead_runs",
    "detach_after_run",
    "environ",
    "left_note",
    "marked",
    "reaping",
    "run",
    "start",
    "stream",
    "which",
]
