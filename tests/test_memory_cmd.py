"""`onboard memory` as a command: the program's output and exit status pass through,
a program that dies by SIGKILL still gets its last census, nothing is left in the
temporary folder, bad usage is exit 2, and the terminal view names the line and the
holder. The sparkline and the growth rule are checked against their inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from onboard.views.memory import BLOCKS, sparkline
from onboard.workflows.memory.analyse import rate

LEAK = """\
import os, signal, sys
import torch
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
losses = []
for step in range(int(sys.argv[1])):
    loss = model(torch.randn(4, 8)).pow(2).mean()  # LEAK
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss)
    if step == int(sys.argv[2]):
        print("dying", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
print("said by the program")
sys.exit(int(sys.argv[3]))
"""


def _write(tmp_path: Path, text: str = LEAK) -> Path:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _memory(
    tmp_path: Path, *args: str, program: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "onboard", "memory", *args, "--", *(program or [])],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "TMPDIR": str(temp)},
    )  # fmt: skip


def _onboards(tmp_path: Path) -> list[str]:
    """What onboard left in the temporary folder (its folders are named onboard-*;
    torch's own inductor cache folder is torch's)."""
    return [p.name for p in (tmp_path / "tmp").iterdir() if p.name.startswith("onboard")]


def test_output_and_exit_status_pass_through_and_nothing_is_left(tmp_path: Path) -> None:
    path = _write(tmp_path)
    done = _memory(tmp_path, program=[sys.executable, str(path), "8", "-1", "3"])
    assert done.returncode == 3, done.stderr
    assert "said by the program" in done.stdout
    line = next(n for n, s in enumerate(path.read_text().splitlines(), 1) if "# LEAK" in s)
    assert f"train.py:{line}" in done.stdout
    assert "held by list `losses` at" in done.stdout
    assert _onboards(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir() if p.name[0] != "_") == ["tmp", "train.py"]


def test_json_alone_on_stdout_program_output_on_stderr(tmp_path: Path) -> None:
    path = _write(tmp_path)
    done = _memory(tmp_path, "--json", program=[sys.executable, str(path), "8", "-1", "0"])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert "said by the program" in done.stderr
    assert result["steps"] == 8 and result["finished"] is True
    import torch

    cuda_said = any("CUDA" in line for line in result["not_checked"])
    assert cuda_said == (not torch.cuda.is_available())


def test_a_program_killed_mid_run_still_gets_its_last_census(tmp_path: Path) -> None:
    path = _write(tmp_path)
    done = _memory(tmp_path, "--json", program=[sys.executable, str(path), "50", "9", "0"])
    assert done.returncode == 128 + 9, done.stderr
    result = json.loads(done.stdout)
    assert result["finished"] is False
    # killed after the 10th optimizer step (step index 9): the census of step 10 is there
    assert result["censuses"][-1]["step"] <= 10
    assert any(c["step"] >= 5 for c in result["censuses"])
    assert any("last census" in note for note in result["notes"])
    assert any(g["holder"] and g["holder"]["name"] == "losses" for g in result["growth"])
    assert _onboards(tmp_path) == []


@pytest.mark.parametrize(
    "args",
    [
        ["--step", "f", "--every", "1"],
        ["--step", "missing.py:3"],
        ["--step", "not a name!"],
        ["--every", "0"],
    ],
)
def test_bad_usage_is_exit_2(tmp_path: Path, args: list[str]) -> None:
    path = _write(tmp_path)
    done = _memory(tmp_path, *args, program=[sys.executable, str(path), "3", "-1", "0"])
    assert done.returncode == 2, (done.stdout, done.stderr)


def test_no_program_is_exit_2(tmp_path: Path) -> None:
    assert _memory(tmp_path).returncode == 2


def test_a_loop_without_an_optimizer_is_told_how_to_mark_steps(tmp_path: Path) -> None:
    path = _write(tmp_path, "import torch\nx = [torch.ones(3) for _ in range(5)]\n")
    done = _memory(tmp_path, "--json", program=[sys.executable, str(path)])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["steps"] == 0 and result["grows"] is False
    assert any("--every SECONDS" in note for note in result["notes"])


def test_sparkline_heights_follow_the_values() -> None:
    values = [0, 10, 20, 30, 40, 50, 60, 70]
    assert sparkline(values) == BLOCKS
    assert sparkline([5, 5, 5]) == BLOCKS[0] * 3
    assert sparkline([]) == ""
    long = list(range(200))
    line = sparkline(long, width=20)
    assert len(line) == 20 and line[0] == BLOCKS[0] and line[-1] == BLOCKS[-1]


def test_growth_rule() -> None:
    assert rate([(2, 10), (3, 12), (4, 14), (5, 16)]) == 2.0
    assert rate([(2, 10), (3, 10), (4, 10)]) == 0.0
    assert rate([(2, 10), (3, 11), (4, 11), (5, 11), (6, 11)]) == 0.0  # one step up: warm-up
    assert rate([(2, 10), (3, 9), (4, 14)]) == 0.0  # fell below where it started
    assert rate([(2, 10), (3, 12)]) == 0.0  # too few censuses to tell


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<svg")])
def test_plot_draws_the_censuses(tmp_path: Path, suffix: str, magic: bytes) -> None:
    pytest.importorskip("matplotlib")
    path = _write(tmp_path)
    picture = tmp_path / f"memory{suffix}"
    done = _memory(
        tmp_path, "--json", "--plot", str(picture),
        program=[sys.executable, str(path), "8", "-1", "0"],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["plot"] == str(picture)
    assert magic in picture.read_bytes()[:400]


def test_plot_without_matplotlib_is_refused_before_the_program_runs(tmp_path: Path) -> None:
    hidden = tmp_path / "hide"
    hidden.mkdir()
    (hidden / "matplotlib.py").write_text("raise ImportError('not installed here')\n")
    path = _write(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "onboard", "memory", "--plot", "m.svg", "--", sys.executable,
         str(path), "3", "-1", "0"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "PYTHONPATH": str(hidden)},
    )  # fmt: skip
    assert done.returncode == 2
    assert "pip install 'onboard[plot]'" in done.stderr + done.stdout
    assert "said by the program" not in done.stdout
    assert not (tmp_path / "m.svg").exists()


def test_cuda_summary_from_the_allocator_figures() -> None:
    from onboard.workflows.memory import MemoryResult, _cuda

    raw = {"allocated": 300, "reserved": 1000, "peak": 800, "inactive_split": 250,
           "empty_cache_gain": 400, "driver_used": 5000, "ooms": 1, "snapshot": None}  # fmt: skip
    result = MemoryResult(command="x", step_kind="optimizer")
    summary = _cuda({"cuda": raw}, result)
    assert summary is not None
    assert summary.fragmentation == raw["inactive_split"] / raw["reserved"]
    assert (summary.allocated, summary.reserved, summary.empty_cache_gain) == (300, 1000, 400)
    assert result.not_checked == []
    assert _cuda({}, result) is None
    assert "not checked" in result.not_checked[0] or "CUDA" in result.not_checked[0]


PEAK = """\
import json, os, sys
import torch
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256))
opt = torch.optim.Adam(model.parameters())


INPUT = []


def train_step():
    x = torch.randn(512, 256)
    INPUT[:] = [x.numel() * x.element_size()]
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


for step in range(5):
    train_step()
truth = {"params": sum(p.numel() * p.element_size() for p in model.parameters()),
         "input": INPUT[0]}
print(json.dumps(truth), file=sys.stderr)
"""


def test_peak_by_torch_categories(tmp_path: Path) -> None:
    path = _write(tmp_path, PEAK)
    done = _memory(tmp_path, "--json", "--peak", program=[sys.executable, str(path)])
    assert done.returncode == 0, done.stderr
    truth = json.loads(done.stderr.strip().splitlines()[-1])
    peak = json.loads(done.stdout)["peak"]
    by_category: dict[str, int] = {}
    for group in peak["groups"]:
        by_category[group["category"]] = by_category.get(group["category"], 0) + group["bytes"]
    assert by_category["parameter"] == truth["params"]
    assert by_category["input"] == truth["input"]
    # Adam keeps two moments per parameter (exp_avg, exp_avg_sq) plus its step counters
    assert by_category["optimizer_state"] >= 2 * truth["params"]
    activations = [g for g in peak["groups"] if g["category"] == "activation"]
    assert any(g.get("function") == "train_step" and g["path"] == str(path) for g in activations)
    assert peak["bytes"] >= sum(by_category.values())


OUT_OF_MEMORY = """\
import os, resource
import torch
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
with open("/proc/self/statm") as fh:
    size = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
# 256 MiB of address space more than it has now: the loop below runs out of it
resource.setrlimit(resource.RLIMIT_AS, (size + (256 << 20), resource.RLIM_INFINITY))
kept = []
for step in range(1000):
    loss = model(torch.randn(4, 8)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    kept.append(torch.ones(4 << 20, dtype=torch.uint8))  # LEAK
"""


def test_a_program_that_runs_out_of_memory_gets_its_answer(tmp_path: Path) -> None:
    path = _write(tmp_path, OUT_OF_MEMORY)
    done = _memory(tmp_path, "--json", program=[sys.executable, str(path)])
    assert done.returncode == 1, done.stderr[-2000:]
    assert "can't allocate memory" in done.stderr or "MemoryError" in done.stderr
    result = json.loads(done.stdout)
    line = next(n for n, s in enumerate(path.read_text().splitlines(), 1) if "# LEAK" in s)
    group = next(g for g in result["growth"] if g["line"] == line)
    assert group["holder"]["name"] == "kept"
    assert group["bytes_per_step"] == 4 << 20


def test_lines_everywhere_finds_the_same_growth(tmp_path: Path) -> None:
    path = _write(tmp_path)
    done = _memory(
        tmp_path, "--json", "--lines-everywhere",
        program=[sys.executable, str(path), "10", "-1", "0"],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    line = next(n for n, s in enumerate(path.read_text().splitlines(), 1) if "# LEAK" in s)
    group = next(g for g in result["growth"] if g["line"] == line)
    assert group["holder"]["name"] == "losses" and group["count_per_step"] == 1
