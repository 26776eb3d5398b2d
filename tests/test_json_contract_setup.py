"""`onboard setup --json`: each key worked out from the result's own fields, through the one
serialiser (onboard/jsonable.py)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from onboard import ide
from onboard.jsonable import to_json
from onboard.workflows.checkout import FetchStats
from onboard.workflows.setup.result import SetupResult


def _result(tmp_path: Path, **kw: Any) -> SetupResult:
    return SetupResult(
        tmp_path, tmp_path / "pytorch", "clone", "c" * 40, "release", "c" * 40, "v2.13.0",
        "https://github.com/pytorch/pytorch.git", "2.13.0", sys.executable,
        "/__w/pytorch/pytorch", False, "created", **kw,
    )  # fmt: skip


def test_setup_result_is_its_fields_then_ok(tmp_path: Path) -> None:
    result = _result(
        tmp_path,
        actions=["fetched"],
        ide_files=[ide.FileAction(tmp_path / ".vscode/settings.json", "created")],
        gdb_file=tmp_path / ".gdbinit",
        fetch=FetchStats(12, 3456, ["v2.13.0"]),
        disk={"needed_bytes": 1, "free_bytes": 2},
        seconds=3.14159,
    )
    data = to_json(result)
    names = [f.name for f in dataclasses.fields(result)]
    assert list(data) == [*names, "ok"]
    assert data["ok"] is result.ok is True
    assert data["workspace"] == str(tmp_path) and data["checkout"] == str(result.checkout)
    assert data["ide_files"] == [{"path": str(tmp_path / ".vscode/settings.json"),
                                  "action": "created", "backup": None, "message": ""}]  # fmt: skip
    assert data["gdb_file"] == str(tmp_path / ".gdbinit") and data["noxfile"] is None
    assert data["fetch"] == {"objects": 12, "bytes_received": 3456, "fetched": ["v2.13.0"]}
    assert data["seconds"] == round(3.14159, 2) and data["reference"] is None
    json.dumps(data)
    failed = to_json(_result(tmp_path, problems=["a submodule failed"]))
    assert failed["ok"] is False and failed["fetch"] is None
