"""`onboard memory` on a corpus of programs: each planted growth is found at its line
(the line marked `# LEAK` in the program's own source) with its holder and the
pattern the program declares; the per-step count and bytes are what the program
itself measured (it writes them to MEMORY_TRUTH); no growth on the clean loops."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

HEADER = """\
import json, os, sys
import torch
torch.manual_seed(0)
STEPS = 12


def truth(**kw):
    with open(os.environ["MEMORY_TRUTH"], "w") as fh:
        json.dump(kw, fh)


model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def batch():
    return torch.randn(8, 16), torch.randn(8, 1)


def train_step(x, y):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss
"""

LEAKS: dict[str, tuple[str, list[str]]] = {
    "stored_outputs": (
        """
        losses = []
        for step in range(STEPS):
            x, y = batch()
            loss = torch.nn.functional.mse_loss(model(x), y)  # LEAK
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss)
        truth(holder="losses", pattern="stored_outputs", per_step=1,
              bytes=losses[-1].untyped_storage().nbytes())
        """,
        [],
    ),
    "history_rebound": (
        """
        total = 0
        for step in range(STEPS):
            x, y = batch()
            loss = train_step(x, y)
            total = total + loss  # LEAK
        truth(holder="total", pattern="history")
        """,
        [],
    ),
    "history_in_place": (
        """
        acc = torch.zeros(())  # LEAK
        for step in range(STEPS):
            x, y = batch()
            loss = train_step(x, y)
            acc += loss
        truth(holder="acc", pattern="history")
        """,
        [],
    ),
    "eval_with_grad": (
        """
        model.eval()
        preds = []


        def eval_step(x):
            preds.append(model(x))  # LEAK


        for step in range(STEPS):
            eval_step(batch()[0])
        truth(holder="preds", pattern="eval_with_grad", per_step=1,
              bytes=preds[-1].untyped_storage().nbytes())
        """,
        ["--step", "eval_step"],
    ),
    "hooks_every_step": (
        """
        for step in range(STEPS):
            x, y = batch()
            model.register_forward_hook(lambda m, i, o: None)  # LEAK
            train_step(x, y)
        truth(pattern="hooks")
        """,
        [],
    ),
    "cache_grows": (
        """
        cache = {}
        for step in range(STEPS):
            x, y = batch()
            train_step(x, y)
            cache[step] = model(x).detach()  # LEAK
        truth(holder="cache", pattern="cache", per_step=1,
              bytes=cache[0].untyped_storage().nbytes())
        """,
        [],
    ),
    "view_keeps_base": (
        """
        kept = []
        for step in range(STEPS):
            x, y = batch()
            train_step(x, y)
            big = torch.randn(1000, 16)
            kept.append(big[:1])  # LEAK
        # a view of one row keeps its base's whole storage
        truth(holder="kept", pattern="kept", per_step=1,
              bytes=kept[-1].untyped_storage().nbytes())
        """,
        [],
    ),
    "module_attribute": (
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(16, 1)
                self.seen = []

            def forward(self, x):
                out = self.lin(x)
                self.seen.append(out.detach())  # LEAK
                return out


        net = Net()
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        for step in range(STEPS):
            x, y = batch()
            loss = torch.nn.functional.mse_loss(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        truth(holder="net", expression=".seen", pattern="kept", per_step=1,
              bytes=net.seen[0].untyped_storage().nbytes())
        """,
        [],
    ),
    "closure": (
        """
        def make_logger():
            store = []

            def log(t):
                store.append(t.detach() * 1)  # LEAK

            return log


        log = make_logger()
        for step in range(STEPS):
            x, y = batch()
            log(train_step(x, y))
        truth(holder="log", expression="store", pattern="kept", per_step=1)
        """,
        [],
    ),
    "local_in_function": (
        """
        def train():
            history = []
            for step in range(STEPS):
                x, y = batch()
                out = model(x)  # LEAK
                loss = torch.nn.functional.mse_loss(out, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                history.append(out)
            return history


        truth(holder="history", pattern="stored_outputs", per_step=1)
        train()
        """,
        [],
    ),
    "weight_snapshots": (
        """
        snapshots = []
        for step in range(STEPS):
            x, y = batch()
            train_step(x, y)
            snapshots.append(model[0].weight.detach().clone())  # LEAK
        w = model[0].weight
        truth(holder="snapshots", pattern="kept", per_step=1, bytes=w.numel() * w.element_size())
        """,
        [],
    ),
    "step_at_line": (
        """
        outputs = []
        for step in range(STEPS):
            x, y = batch()
            loss = train_step(x, y)
            outputs.append(loss * 2)  # LEAK
            done = step  # STEP
        truth(holder="outputs", pattern="stored_outputs", per_step=1)
        """,
        ["--step", "{path}:{step_line}"],
    ),
}

SLOW_LEAKS: dict[str, tuple[str, list[str]]] = {
    "dataloader_worker": (
        """
        _kept = []


        class Data(torch.utils.data.Dataset):
            def __len__(self):
                return 4 * STEPS * 3

            def __getitem__(self, i):
                _kept.append(bytearray(b"x" * (1 << 19)))  # LEAK
                return torch.randn(16), torch.randn(1)


        if __name__ == "__main__":
            loader = torch.utils.data.DataLoader(Data(), batch_size=4, num_workers=1)
            for step, (x, y) in enumerate(loader):
                train_step(x, y)
            truth(pattern="worker_rss", bytes_per_item=1 << 19)
        """,
        [],
    ),
    "every_seconds": (
        """
        import time
        frames = []
        began = time.monotonic()
        while time.monotonic() - began < 5:  # 25 ticks of --every at least
            frames.append(torch.randn(64, 64))  # LEAK
            time.sleep(0.05)
        # a step is a tick here: the bytes are per tensor the loop keeps
        truth(holder="frames", pattern="kept", bytes_each=frames[0].untyped_storage().nbytes())
        """,
        ["--every", "0.2"],
    ),
}

CLEAN: dict[str, tuple[str, list[str]]] = {
    "sgd": (
        """
        for step in range(STEPS):
            x, y = batch()
            train_step(x, y)
        """,
        [],
    ),
    "adam_item": (
        """
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        total = 0.0
        for step in range(STEPS):
            x, y = batch()
            total += train_step(x, y).item()
        """,
        [],
    ),
    "eval_no_grad": (
        """
        model.eval()
        correct = 0


        def eval_step(x, y):
            global correct
            with torch.inference_mode():
                correct += int((model(x) > y).sum())


        for step in range(STEPS):
            eval_step(*batch())
        """,
        ["--step", "eval_step"],
    ),
    "batchnorm_dropout": (
        """
        model = torch.nn.Sequential(
            torch.nn.Linear(16, 32), torch.nn.BatchNorm1d(32), torch.nn.Dropout(0.1),
            torch.nn.Linear(32, 1),
        )
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        for step in range(STEPS):
            x, y = batch()
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad(set_to_none=False)
            loss.backward()
            opt.step()
        """,
        [],
    ),
    "bounded_deque": (
        """
        import collections
        recent = collections.deque(maxlen=2)
        for step in range(STEPS):
            x, y = batch()
            recent.append(train_step(x, y).detach())
        """,
        [],
    ),
    "accumulation_scheduler": (
        """
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3)
        for step in range(STEPS):
            opt.zero_grad()
            for micro in range(2):
                x, y = batch()
                (torch.nn.functional.mse_loss(model(x), y) / 2).backward()
            opt.step()
            sched.step()
        """,
        [],
    ),
    "hook_once": (
        """
        seen = [0]
        handle = model.register_forward_hook(lambda m, i, o: seen.__setitem__(0, seen[0] + 1))
        for step in range(STEPS):
            x, y = batch()
            train_step(x, y)
        handle.remove()
        """,
        [],
    ),
    "bounded_cache": (
        """
        cache = {}
        last = None
        for step in range(STEPS):
            x, y = batch()
            last = train_step(x, y)
            cache[step % 2] = model(x).detach()
        """,
        [],
    ),
}

SLOW_CLEAN: dict[str, tuple[str, list[str]]] = {
    "dataloader_clean": (
        """
        class Data(torch.utils.data.Dataset):
            def __len__(self):
                return 4 * STEPS * 3

            def __getitem__(self, i):
                return torch.randn(16), torch.randn(1)


        if __name__ == "__main__":
            loader = torch.utils.data.DataLoader(Data(), batch_size=4, num_workers=1)
            for step, (x, y) in enumerate(loader):
                train_step(x, y)
        """,
        [],
    ),
}


def _program(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "train.py"
    path.write_text(HEADER + textwrap.dedent(body), encoding="utf-8")
    return path


def _marked(path: Path, mark: str) -> int:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.rstrip().endswith(f"# {mark}"):
            return number
    raise AssertionError(f"no # {mark} in {path}")


def run_memory(
    tmp_path: Path, body: str, options: list[str]
) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    path = _program(tmp_path, body)
    truth = tmp_path / "truth.json"
    words = [
        w.format(path=path, step_line=_marked(path, "STEP") if "{step_line}" in w else 0)
        for w in options
    ]
    before = set(os.listdir(tmp_path))
    done = subprocess.run(
        [sys.executable, "-m", "onboard", "memory", "--json", *words, "--", sys.executable,
         str(path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "MEMORY_TRUTH": str(truth)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    # nothing left behind but what the program itself wrote
    assert set(os.listdir(tmp_path)) - before <= {"truth.json"}
    told = json.loads(truth.read_text()) if truth.exists() else {}
    return path, result, told


def _check_leak(tmp_path: Path, body: str, options: list[str]) -> None:
    path, result, truth = run_memory(tmp_path, body, options)
    line = _marked(path, "LEAK")
    assert result["grows"], result["censuses"]
    patterns = {(p["id"], p.get("line")) for p in result["patterns"]}
    want = truth["pattern"]
    if want == "worker_rss":
        assert any(p["id"] == "worker_rss" for p in result["patterns"]), result["patterns"]
        worker = next(p for p in result["patterns"] if p["id"] == "worker_rss")
        assert "resident memory" in worker["evidence"]
        return
    assert (want, line) in patterns, (want, line, result["patterns"])
    if want in ("hooks", "history"):
        if "holder" in truth:
            pattern = next(p for p in result["patterns"] if p["id"] == want)
            assert f"`{truth['holder']}" in pattern["evidence"], pattern
        return
    group = next(g for g in result["growth"] if g["line"] == line and g["path"] == str(path))
    assert group["pattern"] == want
    holder = group["holder"]
    assert holder is not None, group
    assert holder["name"] == truth["holder"], holder
    if "expression" in truth:
        assert truth["expression"] in holder["expression"], holder
    if "per_step" in truth:
        assert group["count_per_step"] == truth["per_step"], group
    if "bytes" in truth:
        assert group["bytes_per_step"] == truth["bytes"], group
    if "bytes_each" in truth:
        each = truth["bytes_each"]
        assert abs(group["bytes_per_step"] - group["count_per_step"] * each) < each, group


def _cases(fast: dict[str, Any], slow: dict[str, Any]) -> list[Any]:
    """Each program by name; those of ``slow`` (a DataLoader worker, a timer) marked slow."""
    marked = [pytest.param(name, marks=pytest.mark.slow) for name in sorted(slow)]
    return [*sorted(fast), *marked]


@pytest.mark.parametrize("name", _cases(LEAKS, SLOW_LEAKS))
def test_planted_growth_is_found_at_its_line_with_its_holder(tmp_path: Path, name: str) -> None:
    body, options = {**LEAKS, **SLOW_LEAKS}[name]
    _check_leak(tmp_path, body, options)


def _check_clean(tmp_path: Path, body: str, options: list[str]) -> None:
    _, result, _ = run_memory(tmp_path, body, options)
    assert not result["grows"], (result["growth"], result["patterns"])
    assert result["growth"] == [] and result["patterns"] == []
    assert len(result["censuses"]) >= 4, result


@pytest.mark.parametrize("name", _cases(CLEAN, SLOW_CLEAN))
def test_clean_loop_reports_no_growth(tmp_path: Path, name: str) -> None:
    body, options = {**CLEAN, **SLOW_CLEAN}[name]
    _check_clean(tmp_path, body, options)
