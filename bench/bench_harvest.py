"""Benchmark `onboard harvest --json` against ripgrep (and leasot) on the wheel's reference tree.

Builds the `--from-wheel` reference tree of the installed torch (~11.9k files,
~2.2M lines: Python sources, headers, yaml) in a temporary folder, then times
whole commands, each run as a fresh process, median of RUNS, alternating:

- ripgrep: `rg -n` for the same tags over the same files (the reference);
- `onboard harvest --json --no-cache`, cold: every file with a hit is lexed
  and every comment ranked (target: <= 10x ripgrep);
- `onboard harvest --json`, warm: same commit and same changed files as the
  run before, so the whole result comes from the cache (target: <= 3x);
- `onboard harvest --json` right after editing one tracked file: the file is
  grepped and lexed again, the rest comes from the cache (target: <= 2x).
  The command writes the new result from a detached copy of itself after it
  has answered; the next timed command starts once that copy is done.
- leasot (npm, comment-aware) over the same .py/.h files, when it is
  installed (`leasot` on PATH, `$LEASOT`, or `npx --no-install leasot`):
  the peer a developer would otherwise reach for.

Run: python bench/bench_harvest.py [--tree DIR] [--runs N]   (DIR: reuse a built tree)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.pytorch_repo import find_package_dir, find_torch_dir  # noqa: E402

from onboard import git  # noqa: E402
from onboard import workspace as ws_mod  # noqa: E402
from onboard.workflows.harvest import scan  # noqa: E402
from onboard.workflows.reference_tree import build, plan  # noqa: E402

RUNS = 7
COMMIT = "cf30153c4c131c8164ee7798e5022d810682e2cb"


def _wall(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return took, proc.stdout


def _tree(dest: Path) -> Path:
    tree = plan(find_torch_dir(), find_package_dir("torchgen"))
    build(dest, tree, torch_version="bench", commit=COMMIT, version_txt="2.13.0")
    # As `onboard setup` leaves it (setup/create.py): git's stat cache refreshed
    # once. A tree written in the same second as its index is otherwise re-read
    # by every read-only `git status` (0.13 s here), which cannot write it back.
    git.status.refresh_index(dest)
    return dest


def _leasot() -> list[str] | None:
    """leasot's command, when it is installed (never downloaded here)."""
    found = os.environ.get("LEASOT") or shutil.which("leasot")
    if found:
        return [found]
    npx = shutil.which("npx")
    if npx is None:
        return None
    probe = subprocess.run(
        [npx, "--no-install", "leasot", "--version"], capture_output=True, text=True, timeout=120
    )
    return [npx, "--no-install", "leasot"] if probe.returncode == 0 else None


def _verdict(ratio: float, target: float) -> str:
    return f"target <= {target:g}: {'met' if ratio <= target else 'MISSED'}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", type=Path, help="an already built reference tree to reuse")
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args()
    rg = scan.ripgrep_path()
    with tempfile.TemporaryDirectory(prefix="bench-harvest-") as tmp:
        base = Path(tmp)
        tree = args.tree.resolve() if args.tree else _tree(base / "reference")
        ws = base / "ws"
        ws.mkdir()
        ws_mod.save(
            ws_mod.Workspace(
                root=ws, torch_version="bench", commit=COMMIT, commit_kind="release",
                build_prefix=None, python=sys.executable, checkout=os.path.relpath(tree, ws),
                checkout_kind=ws_mod.REFERENCE,
            )
        )  # fmt: skip
        # Bytecode cached as an installed package has it (this dev setup sets
        # PYTHONDONTWRITEBYTECODE=1, which recompiles onboard on every start),
        # kept in the temporary folder, not next to the sources.
        env = dict(
            os.environ, XDG_CACHE_HOME=str(base / "cache"), PYTHONPYCACHEPREFIX=str(base / "pyc")
        )
        for name in ("GITHUB_TOKEN", "GH_TOKEN", "ONBOARD_WORKSPACE", "PYTHONDONTWRITEBYTECODE"):
            env.pop(name, None)
        files = subprocess.run(["git", "-C", str(tree), "ls-files"], capture_output=True, text=True)
        n_files = len(files.stdout.splitlines())
        harvest = [sys.executable, "-m", "onboard", "harvest", "--json"]
        rg_cmd = [rg or "rg", "-n", "--no-heading", "-e", scan.RG_PATTERN]
        for glob in scan._GLOBS:
            rg_cmd += ["-g", glob]
        rg_cmd.append(".")
        edited = tree / "torch" / "nn" / "modules" / "module.py"
        original = edited.read_bytes()

        def settled() -> None:
            """Until the cache holds the tree as it is now: the command writes a new
            result from a detached copy of itself after answering, and a timed run
            must neither race that copy nor share the cores with it."""
            for _ in range(200):
                if json.loads(_wall(harvest, ws, env)[1])["summary"]["cache"] == "tree":
                    return
                time.sleep(0.05)
            raise SystemExit("the cache never held the tree's result")

        _wall(rg_cmd, tree, env)  # page cache warm for both
        _wall([*harvest, "--no-cache"], ws, env)  # bytecode written
        rg_times, cold_times, warm_times, edit_times = [], [], [], []
        cold_out = last = ""
        try:
            for n in range(args.runs):
                edited.write_bytes(original)
                settled()
                rg_times.append(_wall(rg_cmd, tree, env)[0])
                took, cold_out = _wall([*harvest, "--no-cache"], ws, env)
                cold_times.append(took)
                took, last = _wall(harvest, ws, env)
                if json.loads(last)["summary"]["cache"] != "tree":
                    raise SystemExit("the warm run did not find its result cached")
                warm_times.append(took)
                edited.write_bytes(original + f"# TODO: benchmark edit {n}\n".encode())
                took, after_edit = _wall(harvest, ws, env)
                edit_times.append(took)
                if json.loads(after_edit)["summary"]["cache"] != "files":
                    raise SystemExit("the run after an edit did not reuse the cache")
                settled()
        finally:
            edited.write_bytes(original)
        leasot_cmd = _leasot()
        leasot_times: list[float] = []
        if leasot_cmd is not None:
            globs = [f"**/*{s}" for s in (".py", ".h")]
            for _ in range(args.runs):
                leasot_times.append(
                    _wall([*leasot_cmd, "-x", "-S", "-T", "XXX,HACK", "-r", "json", *globs],
                          tree, env)[0]
                )  # fmt: skip
        pass_time = statistics.median(
            _wall([sys.executable, "-c", "pass"], ws, env)[0] for _ in range(args.runs)
        )
        # What every onboard command pays before its own work: the interpreter,
        # Click and onboard's command table.
        version_time = statistics.median(
            _wall([sys.executable, "-m", "onboard", "--version"], ws, env)[0]
            for _ in range(args.runs)
        )
        t_rg = statistics.median(rg_times)
        t_cold = statistics.median(cold_times)
        t_warm = statistics.median(warm_times)
        t_edit = statistics.median(edit_times)
        data = json.loads(cold_out)
        s = data["summary"]
        print(f"tree: {n_files} files (reference tree of the installed wheel)")
        print(f"searcher: {data['searcher']}")
        print(
            f"harvested: {s['harvested']} comments, skipped {s['skipped_vendored']} vendored and "
            f"{s['skipped_generated']} generated, {s['non_comment_hits']} non-comment hits"
        )
        print(f"ripgrep -n, same tags and files: {t_rg:.3f} s (median of {args.runs})")
        for label, took, target in (
            ("onboard harvest --json --no-cache, cold", t_cold, 10),
            ("onboard harvest --json, warm cache", t_warm, 3),
            ("onboard harvest --json, after editing one file", t_edit, 2),
        ):
            ratio = took / t_rg
            print(
                f"{label}: {took:.3f} s (ratio {ratio:.2f} vs ripgrep {t_rg:.3f} s; "
                f"{_verdict(ratio, target)})"
            )
        if leasot_times:
            t_leasot = statistics.median(leasot_times)
            print(
                f"leasot, same tags over the .py/.h files: {t_leasot:.3f} s (ratio "
                f"{t_leasot / t_rg:.2f} vs ripgrep; onboard cold: {t_cold / t_leasot:.2f} of it)"
            )
        else:
            print("leasot: not installed (`npm install -g leasot` to compare), skipped")
        print(
            f"python -c pass: {pass_time:.3f} s "
            f"(ratio {pass_time / t_rg:.2f} vs ripgrep {t_rg:.3f} s; interpreter start-up alone)"
        )
        print(
            f"onboard --version: {version_time:.3f} s (ratio {version_time / t_rg:.2f} vs "
            f"ripgrep; the start-up any onboard command pays; warm harvest spends "
            f"{t_warm - version_time:.3f} s beyond it)"
        )
        print(f"in-process phases, last cold run: {json.dumps(data.get('seconds', {}))}")
        print(
            f"in-process phases, last warm run: {json.dumps(json.loads(last).get('seconds', {}))}"
        )


if __name__ == "__main__":
    main()
