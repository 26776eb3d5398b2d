"""The JSON of the adapters' values (proc, torchenv, linkage, workspace, ide, errors) and of
verify / recover / checkout: each key worked out from the value's own fields, through the
one serialiser (onboard/jsonable.py)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from onboard import ide, linkage, workspace
from onboard.crash import run_cli
from onboard.jsonable import to_json
from onboard.proc.records import Swept
from onboard.proc.tree import Leftover
from onboard.torchenv import BuildPrefix
from onboard.transaction.recovery import Recovered
from onboard.workflows import verify
from onboard.workflows.checkout import FetchStats
from onboard.workflows.recover import RecoverResult


def test_a_leftover_says_how_it_was_found_and_a_sweep_lists_them() -> None:
    left = Leftover(4242, "sleep 100", "in its cgroup")
    swept = Swept("python train.py", 17, [left])
    assert to_json(left) == {"pid": left.pid, "command": left.command, "found": left.how}
    assert to_json(swept) == {
        "command": swept.command,
        "pid": swept.pid,
        "stopped": [{"pid": left.pid, "command": left.command, "found": left.how}],
    }


def test_recover_result_lists_runs_paths_and_whether_there_was_anything(tmp_path: Path) -> None:
    run = Recovered("j.json", "onboard new-op", 9, True, ["undid 2 files"])
    empty = RecoverResult(tmp_path)
    full = RecoverResult(tmp_path, runs=[run], swept=[tmp_path / "wt"])
    assert to_json(empty)["nothing_to_do"] is empty.nothing_to_do is True
    data = to_json(full)
    assert data == {
        "scope": str(tmp_path),
        "runs": [
            {
                "journal": run.journal,
                "command": run.command,
                "pid": run.pid,
                "undone": run.undone,
                "notes": run.notes,
                "set_aside": None,
            }
        ],
        "swept": [str(tmp_path / "wt")],
        "stopped": [],
        "nothing_to_do": full.nothing_to_do,
    }
    assert full.nothing_to_do is False


def test_fetch_stats_name_the_fetched_refs() -> None:
    stats = FetchStats(3, None, ["v2.13.0", "a" * 40])
    assert to_json(stats) == {"objects": 3, "bytes_received": None, "fetched": stats.fetches}


def test_build_prefix_counts_the_source_paths() -> None:
    bp = BuildPrefix("/__w/pytorch/pytorch", "strings", ("c10/core/A.cpp", "aten/B.h"))
    assert to_json(bp) == {"prefix": bp.prefix, "method": bp.method, "source_paths": 2}


def test_linkage_of_a_real_shared_object() -> None:
    # libtorch_python: the installed torch's bindings library (found, not imported).
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    so = next(iter(sorted(Path(spec.origin).parent.glob("lib/libtorch_python.so"))), None)
    assert so is not None, spec.origin
    found = linkage.read_linkage(so)
    assert found is not None
    data = to_json(found)
    assert not {"machine", "elf_class", "rpath"} & set(data)
    assert data["runpath"] == list(found.runpath or found.rpath)
    assert data["python_symbols"] == len(found.python_symbols) > 0
    assert data["libpython"] == found.libpython
    assert data["needed"] == list(found.needed)
    assert data["version_needs"] == {k: list(v) for k, v in found.version_needs.items()}
    json.dumps(data)


def test_workspace_json_carries_its_schema_and_the_saved_file_the_rest(tmp_path: Path) -> None:
    ws = workspace.Workspace(
        tmp_path, "2.13.0", "b" * 40, "release", "/__w/pytorch/pytorch", sys.executable,
        notes=("one",), extra={"fetch": to_json(FetchStats(1, 10, ["x"]))},
    )  # fmt: skip
    data = to_json(ws)
    assert data["schema"] == workspace.SCHEMA and data["root"] == str(tmp_path)
    assert data["notes"] == ["one"] and data["extra"]["fetch"]["fetched"] == ["x"]
    saved = json.loads(workspace.save(ws).read_text(encoding="utf-8"))
    assert "root" not in saved and saved == {k: v for k, v in data.items() if k != "root"}
    assert workspace.load(tmp_path) == ws


def test_ide_file_action_paths_as_text(tmp_path: Path) -> None:
    plain = ide.FileAction(tmp_path / "settings.json", "created")
    backed = ide.FileAction(tmp_path / "launch.json", "merged", tmp_path / "launch.json.bak")
    assert to_json(plain) == {
        "path": str(plain.path), "action": "created", "backup": None, "message": ""
    }  # fmt: skip
    assert to_json(backed)["backup"] == str(backed.backup)


def test_verify_result_counts_each_status_and_reads_back(tmp_path: Path) -> None:
    checks = [
        verify.Check("a", verify.PASSED, "fine"),
        verify.Check("b", verify.FAILED, "broken"),
        verify.Check("c", verify.NOT_CHECKED, "no gdb"),
        verify.Check("d", verify.PASSED, "fine too"),
    ]
    result = verify.VerifyResult(tmp_path, checks)
    data = to_json(result)
    assert data["ok"] is False and data["workspace"] == str(tmp_path)
    assert data["counts"] == {"passed": 2, "failed": 1, "not_checked": 1}
    assert data["checks"] == [
        {"name": c.name, "status": c.status, "detail": c.detail} for c in checks
    ]
    assert data["tree_changed"] is None
    assert verify.VerifyResult.from_json(json.loads(json.dumps(data))) == result


def test_an_expected_failure_with_json_is_one_error_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from onboard.cli import cli

    missing = tmp_path / "nowhere"
    code = run_cli(cli, ["verify", "--workspace", str(missing), "--json"])
    out = capsys.readouterr().out
    data = json.loads(out)
    assert data["ok"] is False and code == data["error"]["exit_code"] != 0
    assert set(data["error"]) == {"kind", "message", "next_step", "exit_code"}
    assert str(missing) in data["error"]["message"]
