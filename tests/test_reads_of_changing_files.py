"""Readers outside harvest that meet a file changed under them (a checkout in another
terminal, a header removed): they answer for what is there, and never crash."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from onboard import proc
from onboard.workflows.doctor import extension
from onboard.workflows.opsource import chain, checks
from onboard.workflows.opsource.paths import SourceLoc


def test_the_enclosing_function_of_a_line_past_the_end_of_a_shorter_file_is_unknown(
    tmp_path: Path,
) -> None:
    # The index named line 40; the file has two lines now.
    source_map = SimpleNamespace(lines=lambda path: ["int f() {", "}"])
    ctx: Any = SimpleNamespace(source_map=source_map, checkout=tmp_path)
    for path in ("aten/src/ATen/native/X.cpp", "torch/x.py"):
        loc = SourceLoc(path, 40, in_checkout=True, local=str(tmp_path / path))
        assert chain.enclosing(ctx, loc) is None


def test_a_header_gone_while_the_headers_are_read_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    include = tmp_path / "include"
    include.mkdir()
    (include / "a_gone.h").symlink_to(tmp_path / "removed.h")  # listed, then unreadable
    (include / "b.h").write_text("void other();\nvoid wanted_fn(int);\n", encoding="utf-8")
    monkeypatch.setattr(proc, "which", lambda name: None)  # the pure-Python search
    assert extension._declared_in_headers(include, "at::wanted_fn(int)") == "b.h:2"


def test_a_folder_gone_between_its_mtime_and_its_listing_drops_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "torch" / "gone"
    folder.mkdir(parents=True)
    data = {
        "folders": {"torch/gone": 1},
        "files": {"torch/gone/a.py": {"s": []}, "torch/kept.py": {"s": []}},
    }
    listing = os.scandir

    def vanished(path: Any) -> Any:
        if Path(path) == folder:
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return listing(path)

    monkeypatch.setattr(checks.os, "scandir", vanished)
    assert checks._refresh(tmp_path, data)
    assert data["files"] == {"torch/kept.py": {"s": []}}
    assert data["folders"] == {"torch/gone": -1}
