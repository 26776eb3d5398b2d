"""Benchmark `onboard stuck PID` on a hung program against the stack tool alone.

Target: the snapshot of a hung 8-thread process with 4 DataLoader workers (5
processes) takes under 3 s, and each process is paused at most as long as
the tool needs to read it (the pause is measured from /proc while the tool
runs, and printed).

The program: a DataLoader with 4 workers each blocked on a lock held when
they forked, in a main process with 8 threads (the main thread, 7 Python
threads waiting on an event; torch's own pools come on top). Measured in
the same run, interleaved, median of N:
- onboard: the `stuck` workflow's snapshot of the program (every process
  read side by side, frames mapped, waits diagnosed), as `onboard stuck PID`
  takes it (without the CLI's start-up);
- the bare tool: `pystack remote PID --native-all` of each of the 5
  processes one after the other, as a person would run it by hand.

Run: python bench/bench_stuck.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

PROGRAM = """\
import threading
import torch
from torch.utils.data import DataLoader, Dataset

lock = threading.Lock()
lock.acquire()
stop = threading.Event()
for _ in range(7):
    threading.Thread(target=stop.wait, daemon=True).start()


class Data(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        with lock:
            return torch.tensor(i)


for batch in DataLoader(Data(), num_workers=4):
    print(batch)
"""


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    from onboard.workflows.stuck import StuckRequest, stuck, tools

    found = tools.find("pystack")
    if found is None:
        print("bench_stuck: pystack is not installed; nothing measured")
        return
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "hung.py"
        script.write_text(textwrap.dedent(PROGRAM))
        program = subprocess.Popen(
            [sys.executable, str(script)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 300
            while len(_workers(program.pid)) < 4:
                if time.monotonic() > deadline or program.poll() is not None:
                    raise SystemExit("bench_stuck: the program never started its 4 workers")
                time.sleep(0.5)
            time.sleep(2)  # the workers reach the lock
            pids = [program.pid, *_workers(program.pid)]
            threads = len(os.listdir(f"/proc/{program.pid}/task"))
            ours, bare, paused = [], [], []
            for _ in range(runs):
                began = time.perf_counter()
                for pid in pids:
                    subprocess.run([found, "remote", str(pid), "--native-all"], capture_output=True)
                bare.append(time.perf_counter() - began)
                result = stuck(StuckRequest(pid=program.pid))
                snap = result.snapshots[0]
                ours.append(snap.seconds)
                paused.append(snap.paused or 0.0)
        finally:
            program.kill()
            program.wait()
    median, reference = statistics.median(ours), statistics.median(bare)
    print(
        f"stuck snapshot of {len(pids)} processes ({threads} threads in the main one): "
        f"{median:.2f} s (median of {runs}); pystack by hand, one process after another: "
        f"{reference:.2f} s; ratio {median / reference:.2f}x; longest pause of one process "
        f"{statistics.median(paused):.2f} s"
    )
    print(f"target: under 3 s -> {'met' if median < 3 else 'NOT met'}")


def _workers(pid: int) -> list[int]:
    """The DataLoader workers: children with torch loaded (not the resource tracker)."""
    out = []
    for child in _children(pid):
        try:
            maps = Path(f"/proc/{child}/maps").read_text()
        except OSError:
            continue
        if "libtorch_cpu" in maps:
            out.append(child)
    return out


if __name__ == "__main__":
    main()
