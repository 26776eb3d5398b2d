"""One run of the script on one side: a fresh process, its wall time, peak RSS,
the ``name=value`` numbers it printed, and the rest of its output."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard import proc
from onboard.errors import OnboardError, ProcTimeout
from onboard.proc import Leftover
from onboard.redact import redact
from onboard.workflows.ab.sides import Side

WALL = "wall_s"
PEAK_RSS = "peak_rss_mb"
CUDA_MEMORY = "cuda_max_memory_allocated_mb"
# `forward_ms=12.3` or `loss = 0.25` alone on a line.
_METRIC = re.compile(
    r"^\s*(?P<name>[A-Za-z_][\w.\-/]*)\s*=\s*(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$"
)
_TAIL = 12


@dataclass
class Run:
    side: str
    seconds: float
    metrics: dict[str, float] = field(default_factory=dict)
    output: tuple[str, ...] = ()  # stdout lines that are not metrics
    compiled: int | None = None  # .py files compiled from source in the run (not from bytecode)
    left_running: tuple[Leftover, ...] = ()  # what the script left when it exited (stopped)


class RunFailed(OnboardError):
    """The script failed on one side: no verdict."""


def parse_output(stdout: str) -> tuple[dict[str, float], tuple[str, ...]]:
    metrics: dict[str, float] = {}
    rest: list[str] = []
    for line in stdout.splitlines():
        mo = _METRIC.match(line)
        if mo:
            metrics[mo.group("name")] = float(mo.group("value"))
        else:
            rest.append(line.rstrip())
    return metrics, tuple(rest)


def _report(found: dict[str, Any]) -> tuple[dict[str, float], int | None]:
    """(the measures of the child's exit report, the .py files it compiled)."""
    metrics = {}
    if "maxrss_kb" in found:
        metrics[PEAK_RSS] = found["maxrss_kb"] / 1024
    if "cuda_max_memory_allocated" in found:
        metrics[CUDA_MEMORY] = found["cuda_max_memory_allocated"] / 2**20
    compiled = found.get("compiled")
    return metrics, int(compiled) if compiled is not None else None


def run_once(side: Side, script: Path, args: list[str], *, cwd: Path, timeout: float) -> Run:
    config = {
        "script": str(script),
        "args": args,
        "overlay": str(side.overlay) if side.overlay else None,
    }
    command = f"{side.python} {script} {' '.join(args)}".strip()
    try:
        asked = proc.ask_child(
            side.python,
            "_ab_child.py",
            json.dumps(config),
            cwd=cwd,
            env=proc.environ(side.env),
            timeout=timeout,
            what=f"The script on {side.label} ({side.spec})",
            via_file=True,  # stdout and stderr are the script's
            until_main_exits=True,
        )
        result, found = asked.result, asked.data
    except proc.NoAnswer as exc:  # it left with os._exit: no report, and no verdict lost
        result, found = exc.result, {}
    except ProcTimeout:
        raise RunFailed(
            f"The script did not finish within {timeout:g} s on {side.label} ({side.what}); "
            "no verdict.",
            next_step="Make the script shorter, or raise --timeout.",
        ) from None
    own, compiled = _report(found)
    stderr = redact(result.stderr).rstrip()  # shown on a failure: never a token in it
    if result.returncode != 0:
        lines = stderr.splitlines()[-_TAIL:] or ["(no output on stderr)"]
        tail = "\n".join("    " + line for line in lines)
        raise RunFailed(
            f"The script failed on {side.label} ({side.what}) with exit {result.returncode}, "
            f"so there is no verdict. The end of its stderr:\n{tail}",
            next_step=f"Fix the script (it runs as `{command}` on {side.label}) and run "
            "`onboard ab` again.",
        )
    metrics, rest = parse_output(redact(result.stdout))  # (its lines are shown in a diff)
    measured = {WALL: result.seconds, **own}
    clash = set(metrics) & set(measured)
    for name in clash:  # the script's own number of that name wins; ours is renamed
        measured[f"onboard_{name}"] = measured.pop(name)
    return Run(
        side.label,
        result.seconds,
        {**measured, **metrics},
        rest,
        compiled=compiled,
        left_running=result.left_running,
    )


def cwd_for(script: Path) -> Path:
    """Where the script runs: the current folder, as `python script.py` would."""
    here = Path(os.getcwd())
    return here if here.is_dir() else script.parent
