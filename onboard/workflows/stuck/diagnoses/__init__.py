"""The waits onboard recognises, each read from the stacks by its own function.

Each ``diagnose(pictures, ctx)`` returns the ``Diagnosis`` it finds (or none);
none of them guesses from a stall alone: each names the frames that show it.
"""

from __future__ import annotations

from onboard.workflows.stuck.diagnoses import (
    busy,
    callback,
    child,
    collective,
    cuda,
    dataloader,
    deadlock,
    gil,
)
from onboard.workflows.stuck.diagnoses.common import Context
from onboard.workflows.stuck.model import Diagnosis, Picture

ALL = (
    dataloader.diagnose,
    collective.diagnose,
    gil.diagnose,
    busy.diagnose,
    callback.diagnose,
    deadlock.diagnose,
    child.diagnose,
    cuda.diagnose,
)


def diagnose(pictures: list[Picture], context: Context) -> list[Diagnosis]:
    found: list[Diagnosis] = []
    for rule in ALL:
        found.extend(rule(pictures, context))
    return found
