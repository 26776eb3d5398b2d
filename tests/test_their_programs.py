"""A repository handed to a command that only reads it runs none of the programs its
own .git/config names: a core.fsmonitor hook, a clean/smudge filter, diff.external, a
diff driver's textconv (each a script here that appends its name to a marker file).
`bisect` checks out commits, with the same settings (docs/safety.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixtures.pytorch_repo import git

from onboard.cli import cli
from onboard.crash import run_cli

PROGRAMS = ("fsmonitor", "clean", "smudge", "external", "textconv")


def _commit(repo: Path, message: str) -> None:
    git("add", "-A", cwd=repo)
    git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", message, cwd=repo)


@pytest.fixture
def handed(tmp_path: Path) -> tuple[Path, Path]:
    """(repository, marker): a repository on branch my-fix whose config names the
    programs, and the marker they append to."""
    marker = tmp_path / "ran"
    marker.write_text("")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for name in PROGRAMS:
        script = scripts / name
        # fsmonitor answers "no data" (exit 1); the others pass their input through.
        tail = "exit 1" if name == "fsmonitor" else "cat"
        script.write_text(f"#!/bin/sh\necho {name} >> {marker}\n{tail}\n")
        script.chmod(0o755)
    repo = tmp_path / "repo"
    (repo / "torch").mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    for i in range(4):
        (repo / "torch" / "mod.py").write_text(f"# TODO(onboard): tagged comment\nVALUE = {i}\n")
        _commit(repo, f"step {i}")
    git("switch", "-q", "-c", "my-fix", cwd=repo)
    (repo / "torch" / "mod.py").write_text("# TODO(onboard): tagged comment\nVALUE = 9\n")
    _commit(repo, "my fix")
    for key, name in (
        ("core.fsmonitor", "fsmonitor"), ("filter.evil.clean", "clean"),
        ("filter.evil.smudge", "smudge"), ("diff.external", "external"),
        ("diff.evil.textconv", "textconv"),
    ):  # fmt: skip
        git("config", key, str(scripts / name), cwd=repo)
    # git itself runs them (the fixture is what the test says it is):
    git("diff", "HEAD~1", cwd=repo)
    assert {"fsmonitor", "external"} <= set(marker.read_text().split())
    marker.write_text("")
    os.utime(repo / "torch" / "mod.py")  # racily clean: a read re-reads the file
    return repo, marker


@pytest.mark.parametrize(
    "argv",
    [
        ["harvest", "--repo", "REPO"],
        ["blame", "torch/mod.py:2", "--offline", "--repo", "REPO"],
        ["pr"],
        ["bisect", "REPRO", "--good", "main~3", "--bad", "main", "--repo", "REPO"],
    ],
    ids=["harvest", "blame-offline", "pr-dry-run", "bisect"],
)
def test_a_handed_repository_runs_none_of_its_programs(
    argv: list[str],
    handed: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo, marker = handed
    repro = tmp_path / "repro.py"
    repro.write_text(
        "import pathlib, sys\n"
        f"text = pathlib.Path({str(repo / 'torch' / 'mod.py')!r}).read_text()\n"
        "sys.exit(0 if 'VALUE = 0' in text or 'VALUE = 1' in text else 1)\n"
    )
    monkeypatch.chdir(repo)
    code = run_cli(cli, [{"REPO": str(repo), "REPRO": str(repro)}.get(a, a) for a in argv])
    out, err = capsys.readouterr()
    assert code in (0, 1), out + err  # answered (pr: a finding is 1), not a usage error
    assert marker.read_text() == "", out + err
