"""An installed wheel (not the source tree) finds its templates and nox tasks."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        cwd=out,
    )
    (found,) = out.glob("onboard-*.whl")
    return found


def test_wheel_ships_templates_and_tasks(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped_templates = {
        n for n in names if n.startswith("onboard/templates/") and n.endswith(".j2")
    }
    source_templates = {
        "onboard/templates/" + p.relative_to(ROOT / "templates").as_posix()
        for p in (ROOT / "templates").rglob("*.j2")
    }
    assert source_templates, "the source tree has templates to ship"
    assert shipped_templates == source_templates
    source_tasks = {
        "onboard/tasks/" + p.relative_to(ROOT / "tasks").as_posix()
        for p in (ROOT / "tasks").rglob("*.py")
    }
    assert source_tasks <= names
    # The top-level folders must not leak out as importable packages of their own.
    assert not any(n.startswith(("templates/", "tasks/")) for n in names)


def test_installed_wheel_resolves_resources(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
    )
    code = (
        "import onboard.resources as r, onboard.tasks as t, onboard.render as rd;"
        "print(r.templates_dir()); print(t.__file__);"
        "import pathlib; print(sorted(p.name for p in r.templates_dir().rglob('*.j2'))[0])"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[0].startswith(str(target)), out
    assert out[1].startswith(str(target)), out
    assert out[2].endswith(".j2")


def test_every_package_folder_is_in_the_wheel(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for init in (ROOT / "onboard").rglob("__init__.py"):
        rel = init.relative_to(ROOT).as_posix()
        assert rel in names, f"{rel} is missing from the wheel: add its package to pyproject.toml"


@pytest.mark.slow
def test_verify_session_runs_against_the_installed_wheel() -> None:
    """`nox -s verify` sets ONBOARD_VERIFY_WHEEL: its tests must exercise the
    installed wheel, not the source tree they sit beside."""
    if not os.environ.get("ONBOARD_VERIFY_WHEEL"):
        pytest.skip("only meaningful inside `nox -s verify`")
    import onboard

    assert Path(onboard.__file__).resolve().parent != ROOT / "onboard", onboard.__file__


def test_the_package_reaches_only_its_own_modules() -> None:
    """templates/ and tasks/ come in through pyproject's package-dir mapping; the
    package does not append the repository root to its own ``__path__`` (which made
    ``import onboard.noxfile`` and ``onboard.tests`` work in a checkout)."""
    import onboard

    assert [Path(p).resolve() for p in onboard.__path__] == [
        Path(onboard.__file__).resolve().parent
    ]
    assert importlib.util.find_spec("onboard.noxfile") is None
    assert importlib.util.find_spec("onboard.templates") is not None
    assert importlib.util.find_spec("onboard.tasks.workspace") is not None
