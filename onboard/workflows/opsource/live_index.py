"""Every op's live answer, asked of one child interpreter and kept per interpreter and torch.

Importing torch costs seconds, so `where` does not start a child per op. The
first time an op is asked (or when the index is missing or stale), one child
(``children/_live_index_child.py``) imports torch while onboard reads the yaml,
answers that op, and then, after onboard has printed its result and gone,
answers the same question for every op of native_functions.yaml with the per-op
code (``children/_live_child.py``) and writes them to one file. From then on an op is one
lookup in that file, until torch changes: its version, its git_version or
the mtime of its ``__init__.py`` (an upgrade, a reinstall, an editable
rebuild).

The file: a JSON header line (the torch it came from; where each op's line
starts) and one JSON line per op, holding the request it answers, so that a
changed yaml (an added op, other overloads) is asked live instead of read.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from onboard import proc, torchenv
from onboard.cache import make_room, matches
from onboard.errors import OnboardError
from onboard.report import Reporter
from onboard.shell import quote
from onboard.workflows.opsource import cache

# Bump when the per-op answer changes shape (python_kernels came with 2, each entry's
# metadata-named op, aten, with 3).
FORMAT = 3
# A child indexing for longer than this is taken to be gone (killed, machine asleep).
BUILDING_STALE_S = 900.0
# How long the first answer (import torch included) may take.
LIVE_TIMEOUT = 240.0
_VERSION_RE = re.compile(r"^(__version__|git_version)\s*=\s*['\"]([^'\"]*)['\"]", re.M)

# What _live_child.py answers, as where reads it (the per-entry keys beyond
# `exists` come only for names that exist; the recorded ones only with `record`).
ANSWER_SHAPE = {
    "torch_version": str,
    "entries": [
        {
            "query": str,
            "name": str,
            "exists": bool,
            "kind?": str,
            "module?": (str, None),
            "source?": ({"path": str, "line": int}, None),
            "callable?": bool,
            "aten?": [str],
            "aten_from?": (str, None),
            "top_ops?": [str],
            "dispatched?": [str],
            "call_error?": (str, None),
        }
    ],
    "dumps": {str: (str, None)},
}

Requests = Callable[[], dict[str, dict[str, Any]]]


class IndexFile:
    """The index on disk: its header (the torch it came from; where each op's row starts)
    and one row per op. ``stale`` once anything read shows it is missing or out of date."""

    def __init__(self, path: Path, *, stale: bool = False) -> None:
        self.path = path
        self.stale = stale
        self.header: dict[str, Any] | None = None
        self._header_size = 0
        if not stale:
            self._read_header()

    def _read_header(self) -> None:
        try:
            with self.path.open("rb") as fh:
                raw = fh.readline()
            header = json.loads(raw)
        except (OSError, ValueError):
            self.stale = True
            return
        if _valid_header(header) and _same_torch(header):
            self.header, self._header_size = header, len(raw)
        else:
            self.stale = True

    def row(self, base: str) -> dict[str, Any] | None:
        """The row of op ``base`` (its request and answer), or None."""
        if self.header is None:
            return None
        where = self.header["offsets"].get(base)
        if where is None:
            return None
        try:
            with self.path.open("rb") as fh:
                fh.seek(self._header_size + where[0])
                row = json.loads(fh.read(where[1]))
        except (OSError, ValueError):
            self.stale = True
            return None
        answer = row.get("answer") if isinstance(row, dict) else None
        if (
            row.get("base") != base
            or not isinstance(row.get("request"), dict)
            or not matches(answer, ANSWER_SHAPE)
        ):
            self.stale = True
            return None
        return row

    def base_of(self, name: str) -> str | None:
        """The op a Python entry point (``torch.nn.functional.linear``) was asked for."""
        base = self.header["names"].get(name) if self.header is not None else None
        return base if isinstance(base, str) else None


class LiveIndex:
    """``lookup`` an op's answer; ``ask`` one that is not there (and index the rest)."""

    def __init__(
        self, python: str, cache_id: str, reporter: Reporter, *, refresh: bool = False
    ) -> None:
        self.python = python
        self.reporter = reporter
        name = "live-index-" + cache.key(python, cache_id)
        self.path = cache.cache_root() / f"{name}.jsonl"
        make_room(self.path)  # a folder in its place would keep every call importing torch
        # While a child writes the index: its pid and start time.
        self.building = cache.cache_root() / f"{name}.building"
        self._file = IndexFile(self.path, stale=refresh)
        self._child: proc.Child | None = None

    def lookup(self, base: str, request: dict[str, Any]) -> dict[str, Any] | None:
        """The stored answer to ``request`` (an op's full question, as ``_live_child`` takes
        it), or None when the index does not hold it."""
        row = self._file.row(base)
        if row is None:
            return None
        if row.get("request") != request:
            self._file.stale = True  # the yaml changed since the index was written
            return None
        return row["answer"]

    def entry(self, name: str) -> dict[str, Any] | None:
        """A Python entry point's answer (``torch.nn.functional.linear``), from the op it
        was asked for."""
        base = self._file.base_of(name)
        row = self._file.row(base) if base is not None else None
        if row is None:
            return None
        for entry in row["answer"]["entries"]:
            if isinstance(entry, dict) and entry.get("name") == name and entry.get("exists"):
                return entry
        return None

    def prepare(self) -> None:
        """Start the child now (torch imports while the caller reads the yaml) when the
        index is to be built: missing, stale, or --refresh."""
        missing = self._file.header is None
        if missing and self._child is None and not _indexing_elsewhere(self.building):
            self._child = self._start()

    def ask(self, request: dict[str, Any], every: Requests) -> dict[str, Any]:
        """The child's answer to ``request``; the child then indexes every op (``every()``:
        base -> request) in the background when the index is missing or stale."""
        child, self._child = self._child, None
        build = self._file.stale and (child is not None or not _indexing_elsewhere(self.building))
        if child is None:
            child = self._start() if build else _start_child(self.python)
        job: dict[str, Any] = {"first": request, "index": None}
        if build:
            job["index"] = {"path": str(self.path), "building": str(self.building), "ops": every()}
        try:
            data = child.answer(json.dumps(job).encode(), timeout=LIVE_TIMEOUT)
        except OnboardError as exc:  # a timeout: the child was stopped
            self._drop(child, build)
            raise _asking_failed(self.python, exc) from exc
        if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
            code, stderr = child.failure()
            self._drop(child, build)
            raise _no_answer(self.python, code, stderr)
        child.release()
        if build:
            self.reporter.detail(
                "indexing every op's live dispatch table in the background (pid "
                f"{child.pid}): later `where` calls need no torch import"
            )
        return data

    def stop(self) -> None:
        """Stop a child started by ``prepare`` that nobody asked (an error came first)."""
        if self._child is not None:
            self._child.stop()
            _done_building(self.building)
            self._child = None

    def _start(self) -> proc.Child:
        """A child that will build the index, marked as building it."""
        child = _start_child(self.python)
        with contextlib.suppress(OSError):
            cache.cache_root().mkdir(parents=True, exist_ok=True)
            self.building.write_text(json.dumps({"pid": child.pid, "started": time.time()}))
        return child

    def _drop(self, child: proc.Child, build: bool) -> None:
        child.release()
        if build:
            _done_building(self.building)


def _done_building(building: Path) -> None:
    with contextlib.suppress(OSError):
        building.unlink()


def _indexing_elsewhere(building: Path) -> bool:
    """Whether another child is indexing now (its marker names a live pid, not too old)."""
    try:
        marker = json.loads(building.read_text())
        pid, started = int(marker["pid"]), float(marker["started"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if time.time() - started > BUILDING_STALE_S:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _asking_failed(python: str, exc: OnboardError) -> OnboardError:
    return OnboardError(
        f"Asking the installed torch ({python}) failed: {exc.message}",
        next_step=f"Check that `{quote(python)} -c 'import torch'` works, or pass "
        "--python with the interpreter whose torch you use.",
    )


def _no_answer(python: str, code: int | None, stderr: str) -> OnboardError:
    tail = (stderr.strip().splitlines() or ["no output"])[-1]
    how = f"exit {code}" if code is not None else "no answer"
    return OnboardError(
        f"The interpreter {python} could not answer onboard's torch questions ({how}): {tail}",
        next_step=f"Check that `{quote(python)} -c 'import torch'` works, or pass --python "
        "with the interpreter whose torch you use; `onboard doctor` shows what is wrong.",
    )


def _start_child(python: str) -> proc.Child:
    try:
        per_op = str(proc.CHILDREN / "_live_child.py")
        return proc.Child(
            proc.child_command(python, "_live_index_child.py", per_op),
            cwd=torchenv.neutral_cwd(),  # never the checkout's uncompiled torch/
            env=proc.environ(torchenv.SAFE_PATH_ENV),
        )
    except OnboardError as exc:
        raise OnboardError(
            f"Could not run the Python interpreter {python!r}: {exc.message}",
            next_step="Pass --python with the interpreter whose torch you use.",
        ) from exc


def _valid_header(header: Any) -> bool:
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        return False
    offsets, names = header.get("offsets"), header.get("names")
    return (
        isinstance(header.get("torch_file"), str)
        and type(header.get("torch_mtime_ns")) is int
        and isinstance(header.get("torch_version"), str)
        and isinstance(header.get("git_version"), (str, type(None)))
        and isinstance(offsets, dict)
        and isinstance(names, dict)
        and all(
            isinstance(v, list) and len(v) == 2 and all(type(n) is int and n >= 0 for n in v)
            for v in offsets.values()
        )
    )


def _same_torch(header: dict[str, Any]) -> bool:
    """The torch the index came from is still the one installed (same file, same
    mtime, and its version.py names the same version and git_version)."""
    torch_file = Path(header["torch_file"])
    try:
        if torch_file.stat().st_mtime_ns != header["torch_mtime_ns"]:
            return False
        text = (torch_file.parent / "version.py").read_text(encoding="utf-8")
    except OSError:
        return False
    found = dict(_VERSION_RE.findall(text))
    return (found.get("__version__"), found.get("git_version")) == (
        header["torch_version"],
        header["git_version"],
    )
