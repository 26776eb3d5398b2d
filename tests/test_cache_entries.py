"""A cache entry that cannot be read as a file (a folder in its place) is replaced by
the next write, or, when it cannot be, the answer says the cache is not used and why:
left there, it was rebuilt on every run and every `where` took seconds more, silently.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from onboard import cache
from onboard.jsonable import spec
from onboard.report import Reporter
from onboard.workflows.opsource import cache as opsource_cache
from onboard.workflows.opsource.live_index import LiveIndex


def _folder_at(path: Path) -> None:
    (path / "inside").mkdir(parents=True)
    (path / "inside" / "file").write_text("x")


def test_a_folder_in_place_of_an_entry_is_replaced_by_the_next_write(tmp_path: Path) -> None:
    entry = tmp_path / "opsource" / "kernels-1234.json"
    _folder_at(entry)
    assert cache.read_valid(entry, {"n": int}) == {}  # reads as missing...
    cache.write_json(entry, {"n": 1})
    assert entry.is_file() and cache.read_valid(entry, {"n": int}) == {"n": 1}  # ...then kept
    assert cache.take_notes() == []


def test_the_opsource_caches_rebuild_a_folder_entry_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    name = "yaml-" + opsource_cache.key("t") + ".json"
    _folder_at(opsource_cache.cache_root() / name)
    builds = []

    def build() -> dict[str, int]:
        builds.append(1)
        return {"n": 2}

    for _ in range(3):
        data, _warm = opsource_cache.cached(name, lambda d: True, build, {"n": int})
        assert data == {"n": 2}
    assert len(builds) == 1  # rebuilt once, then read back


def test_the_live_index_clears_a_folder_in_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The index's child writes it with os.replace, which cannot replace a folder: every
    # `where` started a child importing torch (11-17 s instead of 1.5 s).
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = LiveIndex(sys.executable, "tree", Reporter())
    _folder_at(first.path)
    index = LiveIndex(sys.executable, "tree", Reporter())
    assert not index.path.exists()  # the child can write it now


def test_an_entry_that_cannot_be_replaced_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from onboard.commands._common import finish

    entry = tmp_path / "kernels-1234.json"
    _folder_at(entry)

    def refuse(path: object, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(shutil, "rmtree", refuse)  # (as root, permissions would not refuse)
    cache.write_json(entry, {"n": 1})
    assert entry.is_dir()

    @dataclass
    class Done:
        ok: bool = True
        exit_code: int = field(default=0, metadata=spec(omit=True))

    assert finish(Done(), lambda *a: None, True, False) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"ok": True}  # the answer alone on stdout
    assert f"the cache entry {entry} could not be written" in err
    assert "cache is not used" in err and "Permission denied" in err
