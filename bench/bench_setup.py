"""Benchmark `onboard setup`: a depth-1 fetch of one commit vs a plain `git clone`.

A PyTorch-shaped repository with a long history (16384 commits by default,
seeded from the installed wheel's files, tests/fixtures/pytorch_repo.py) is
served by `git daemon` on loopback. Each fixture commit changes one small file
(~0.8 KB of pack per commit), far lighter than PyTorch's own history (~4 GB of
git data), so the byte ratio grows with --commits: ~6x at 4096, ~21x at 16384.
Measured in this one run:

- bytes received: the size of the packs each one stored (`git count-objects
  -v`: size-pack + loose), and the objects in them;
- wall time: `python -m onboard setup WS --remote URL --commit HEAD_SHA` (the
  whole command, probe of torch included) vs `git clone URL`;
- wall time of `onboard setup WS --from-wheel`, against `python -c "import
  torch"` (the probe's floor) in the same run.

Run: `python bench/bench_setup.py [--commits N]`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_ROOT / "tests"))

from fixtures.git_server import GitDaemon  # noqa: E402
from fixtures.pytorch_repo import build_pytorch_repo, git_env  # noqa: E402


def _timed(args: list[str], **kwargs: object) -> float:
    start = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True, **kwargs)  # type: ignore[call-overload]
    return time.perf_counter() - start


def _stored(repo: Path) -> tuple[int, int]:
    """(bytes, objects) git stored for a repository: packs plus loose objects."""
    out = subprocess.run(
        ["git", "-C", str(repo), "count-objects", "-v"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    fields = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    size = (int(fields.get("size-pack", 0)) + int(fields.get("size", 0))) * 1024
    objects = int(fields.get("in-pack", 0)) + int(fields.get("count", 0))
    return size, objects


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=16384)
    args = parser.parse_args(argv)
    env = git_env()
    with tempfile.TemporaryDirectory(prefix="bench-setup-") as tmp:
        base = Path(tmp)
        # Keep probe caches and any git config inside the temp folder.
        env.update(XDG_CACHE_HOME=str(base / "cache"), HOME=str(base / "home"))
        (base / "home").mkdir()
        start = time.perf_counter()
        info = build_pytorch_repo(base / "pytorch", commits=args.commits)
        print(f"fixture: {args.commits} commits built in {time.perf_counter() - start:.1f} s")
        with GitDaemon(base / "served") as daemon:
            url = daemon.serve(info.path, "pytorch.git")
            onboard = [sys.executable, "-m", "onboard"]
            # Warm the probe's cache once so both setup runs below measure setup, not
            # the first scan of libtorch_cpu for the build prefix.
            subprocess.run(
                [*onboard, "setup", str(base / "warm"), "--from-wheel", "--json"],
                check=True,
                capture_output=True,
                env=env,
            )

            clone_s = _timed(["git", "clone", "-q", url, str(base / "clone")], env=env)
            setup_s = _timed(
                [
                    *onboard,
                    "setup",
                    str(base / "ws"),
                    "--remote",
                    url,
                    "--commit",
                    info.head,
                    "--json",
                ],
                env=env,
            )
            clone_bytes, clone_objects = _stored(base / "clone")
            setup_bytes, setup_objects = _stored(base / "ws" / "pytorch")
            print(
                f"setup bytes received: {setup_bytes / 1e6:.2f} MB in {setup_objects} objects "
                f"(ratio {clone_bytes / setup_bytes:.1f}x fewer vs git clone: "
                f"{clone_bytes / 1e6:.2f} MB in {clone_objects} objects)"
            )
            print(
                f"setup wall time: {setup_s:.2f} s (ratio {setup_s / clone_s:.2f} vs git clone: "
                f"{clone_s:.2f} s; setup includes probing torch in a child interpreter)"
            )

        import_s = _timed([sys.executable, "-c", "import torch"], env=env)
        shutil.rmtree(base / "warm")
        wheel_s = _timed([*onboard, "setup", str(base / "ref"), "--from-wheel", "--json"], env=env)
        files = int(
            subprocess.run(
                ["git", "-C", str(base / "ref" / "pytorch"), "ls-files"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.count("\n")
        )
        print(
            f"from-wheel wall time: {wheel_s:.2f} s for {files} files "
            f"(ratio {wheel_s / import_s:.1f} vs python -c 'import torch': {import_s:.2f} s; "
            "target < 10 s)"
        )


if __name__ == "__main__":
    main()
