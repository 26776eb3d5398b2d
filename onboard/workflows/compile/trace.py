"""Reading torch's structured trace (``TORCH_TRACE=DIR``): one file per process, each
line a glog prefix (``V1203 07:39:05.455000 19875 torch/_dynamo/guards.py:5396]``)
then one JSON object; a record with ``has_payload`` is followed by its payload, each
line indented by a tab (``torch/_logging/_internal.py``, ``TorchLogsFormatter`` and
``trace_structured``). File names are interned: ``{"str": [path, index]}`` first,
then stacks name a file by its index."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# What every record carries besides its own key.
_COMMON = ("frame_id", "frame_compile_id", "attempt", "has_payload", "compiled_autograd_id")


@dataclass
class Record:
    kind: str  # the record's own key: "artifact", "compilation_metrics", "dynamo_start" ...
    body: Any  # its value
    frame_id: int | None = None
    frame_compile_id: int | None = None
    payload: str | None = None

    @property
    def compile_id(self) -> str | None:
        """``"2/1"``: the frame and its compile, as torch's logs write it."""
        if self.frame_id is None or self.frame_compile_id is None:
            return None
        return f"{self.frame_id}/{self.frame_compile_id}"

    @property
    def artifact(self) -> str | None:
        return self.body.get("name") if self.kind == "artifact" and self.body else None


@dataclass
class Process:
    """One trace file: the records of one process, in order."""

    path: Path
    records: list[Record] = field(default_factory=list)
    strings: dict[int, str] = field(default_factory=dict)  # interned file names
    skipped: int = 0  # lines that were not a record (a torn last line)

    def artifacts(self, name: str) -> list[Record]:
        return [r for r in self.records if r.artifact == name]

    def of_kind(self, kind: str) -> list[Record]:
        return [r for r in self.records if r.kind == kind]


def read_dir(folder: Path) -> list[Process]:
    """Every trace file under ``folder`` (one per process that compiled), by name."""
    if not folder.is_dir():
        return []
    return [read_file(p) for p in sorted(folder.iterdir()) if p.is_file()]


def read_file(path: Path) -> Process:
    process = Process(path)
    current: Record | None = None
    payload: list[str] = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            line = raw.rstrip("\n")
            if line.startswith("\t"):
                payload.append(line[1:])
                continue
            if current is not None and payload:
                current.payload = "\n".join(payload)
            payload = []
            current = _record(line, process)
    if current is not None and payload:
        current.payload = "\n".join(payload)
    return process


def _record(line: str, process: Process) -> Record | None:
    cut = line.find("] {")
    if cut < 0:
        if line.strip():
            process.skipped += 1
        return None
    try:
        data = json.loads(line[cut + 2 :])
    except ValueError:
        process.skipped += 1
        return None
    if not isinstance(data, dict):
        return None
    own = [k for k in data if k not in _COMMON]
    if not own:
        return None
    kind = own[0]
    record = Record(kind, data[kind], data.get("frame_id"), data.get("frame_compile_id"))
    if kind == "str" and isinstance(data[kind], list) and len(data[kind]) == 2:
        name, index = data[kind]
        process.strings[int(index)] = str(name)
    process.records.append(record)
    return record
