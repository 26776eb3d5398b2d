"""`onboard doctor --json`: each key worked out from the report's own fields, through the one
serialiser (onboard/jsonable.py)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from onboard import torchenv
from onboard.jsonable import to_json
from onboard.workflows.doctor import extension
from onboard.workflows.doctor.report import ERROR, INFO, DoctorReport, Finding


def test_an_import_attempt_gives_its_error_only_when_it_failed(tmp_path: Path) -> None:
    works = extension.ImportAttempt(
        "`import json`", "json", True, returncode=0, origin="/usr/lib/python3.11/json"
    )
    fails = extension.attempt_import(sys.executable, "no_such_module_here", str(tmp_path))
    assert works.ok and not fails.ok
    good, bad = to_json(works), to_json(fails)
    assert good["what"] == works.what.strip("`") and "`" not in good["what"]
    assert good["error"] is None and good["module"] == "json"
    assert bad["error"] == {"type": fails.error_type, "message": fails.message}
    assert bad["error"]["type"] == "ModuleNotFoundError"
    for data, attempt in ((good, works), (bad, fails)):
        assert not {"traceback", "torch_error", "error_type", "message"} & set(data)
        assert data["returncode"] == attempt.returncode and data["files"] == attempt.files
        assert data["origin"] == attempt.origin
        assert data["distribution"] == attempt.distribution
    json.dumps(bad)


def _env() -> torchenv.TorchEnv:
    python = torchenv.PythonInfo(
        sys.executable, "3.11.7", "cpython", "", "cpython-311-x86_64-linux-gnu",
        ".cpython-311-x86_64-linux-gnu.so", sys.prefix, "libpython3.11.so", "/",
    )  # fmt: skip
    return torchenv.TorchEnv(
        python, None, {"type": "ModuleNotFoundError"}, (), None, None, None,
        torchenv.Commit("unknown", None),
        torchenv.BuildPrefix("/__w/pytorch/pytorch", "strings", ("c10/a.cpp", "aten/b.h")),
        None, sys_path=("/a",),
    )  # fmt: skip


def test_torch_env_is_its_fields_with_the_source_paths_counted() -> None:
    env = _env()
    data = to_json(env)
    assert data["python"]["executable"] == sys.executable and data["torch"] is None
    assert data["build_prefix"] == {
        "prefix": env.build_prefix.prefix, "method": "strings", "source_paths": 2
    }  # fmt: skip
    assert data["commit"] == {"kind": "unknown", "sha": None, "tag": None, "note": ""}
    assert data["sys_path"] == ["/a"] and data["candidates"] == []
    assert list(data) == [f.name for f in dataclasses.fields(env)]


def test_the_report_is_its_facts_findings_and_whether_any_needs_action() -> None:
    env = _env()
    note = Finding("numpy-missing", INFO, "t", "w", "f", ("evidence",))
    error = Finding("abi", ERROR, "t2", "w2", "f2")
    facts = {"python": env.python.executable}
    calm = to_json(DoctorReport(env, facts, (note,), workspace={"root": "/ws"}))
    assert calm == {
        "facts": facts,
        "findings": [{"id": "numpy-missing", "severity": INFO, "title": "t", "why": "w",
                      "fix": "f", "details": ["evidence"]}],
        "ok": True,
    }  # fmt: skip
    assert to_json(DoctorReport(env, facts, (note, error)))["ok"] is False
