"""Whether a program still makes progress: "no progress" means that for the
whole window no Python line changed in any of its processes and together they
used (almost) no CPU. CPU is read from /proc every interval; the Python lines
are sampled with ``py-spy dump --nonblocking`` (it reads the interpreter's
memory without stopping it) only while the CPU is idle, so a busy program
costs nothing beyond the /proc reads."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from onboard import proc
from onboard.errors import OnboardError
from onboard.workflows.stuck import processes

# Below this share of one core, a process tree counts as using no CPU (a
# DataLoader polls its queue every 5 s, gloo's loop wakes now and then).
IDLE_SHARE = 0.02


@dataclass
class Progress:
    root: int
    window: float  # --after
    sampler: str | None  # py-spy's path; None: CPU only
    _last_ticks: int | None = None
    _last_lines: frozenset[tuple[int, int, str, int]] | None = None
    _last_change: float = field(default_factory=time.monotonic)
    _cpu_in_window: list[tuple[float, int]] = field(default_factory=list)

    def sample(self) -> None:
        now = time.monotonic()
        pids = [self.root, *processes.descendants(self.root)]
        ticks = processes.cpu_ticks(pids)
        hz = processes.ticks_per_second()
        busy = False
        if self._last_ticks is not None:
            elapsed = now - (self._cpu_in_window[-1][0] if self._cpu_in_window else now)
            used = (ticks - self._last_ticks) / hz
            busy = elapsed > 0 and used > IDLE_SHARE * max(elapsed, 1.0)
        self._last_ticks = ticks
        self._cpu_in_window.append((now, ticks))
        self._cpu_in_window = [(t, k) for t, k in self._cpu_in_window if now - t <= self.window]
        if busy:
            self._last_change = now
            self._last_lines = None
            return
        lines = self._lines(pids)
        if lines is not None and lines != self._last_lines:
            if self._last_lines is not None:
                self._last_change = now
            self._last_lines = lines

    def stalled(self) -> str | None:
        """The reason to take a snapshot, once nothing moved for the whole window."""
        now = time.monotonic()
        if now - self._last_change < self.window:
            return None
        first = self._cpu_in_window[0][1] if self._cpu_in_window else 0
        used = ((self._last_ticks or 0) - first) / processes.ticks_per_second()
        lines = "no Python line changed and " if self.sampler else ""
        return (
            f"no progress for {self.window:g} s: {lines}the program used {used:.2f} s of CPU "
            f"(under {IDLE_SHARE:.0%} of a core)"
            + ("" if self.sampler else " (py-spy is missing: CPU only was watched)")
        )

    def moved(self) -> None:
        """Start a new window (after a snapshot: the next one needs a new stall)."""
        self._last_change = time.monotonic()

    def _lines(self, pids: list[int]) -> frozenset[tuple[int, int, str, int]] | None:
        if self.sampler is None:
            return None
        seen: set[tuple[int, int, str, int]] = set()
        for pid in pids:
            try:
                ran = proc.run(
                    [self.sampler, "dump", "--pid", str(pid), "--json", "--nonblocking"],
                    timeout=10,
                    check=False,
                )
            except OnboardError:
                continue
            if ran.returncode != 0:
                continue
            try:
                threads = json.loads(ran.stdout or "[]")
            except ValueError:
                continue
            for thread in threads:
                for frame in thread.get("frames") or []:
                    seen.add(
                        (
                            pid,
                            int(thread.get("thread_id") or 0),
                            str(frame.get("filename")),
                            int(frame.get("line") or 0),
                        )
                    )
        return frozenset(seen)
