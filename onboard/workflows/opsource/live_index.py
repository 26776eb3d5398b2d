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
from onboard.cache import matches
from onboard.errors import OnboardError
from onboard.report import Reporter
from onboard.shell import quote
from onboard.workflows.opsource import cache

# Bump when the per-op answer changes shape (python_kernels came with 2).
FORMAT = 2
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
            "top_ops?": [str],
            "dispatched?": [str],
            "call_error?": (str, None),
        }
    ],
    "dumps": {str: (str, None)},
}

Requests = Callable[[], dict[str, dict[str, Any]]]


class LiveIndex:
    """``lookup`` an op's answer; ``ask`` one that is not there (and index the rest)."""

    def __init__(
        self, python: str, cache_id: str, reporter: Reporter, *, refresh: bool = False
    ) -> None:
        self.python = python
        self.reporter = reporter
        self.refresh = refresh
        name = "live-index-" + cache.key(python, cache_id)
        self.path = cache.cache_root() / f"{name}.jsonl"
        self.building = cache.cache_root() / f"{name}.building"
        self._header: dict[str, Any] | None = None
        self._header_size = 0
        self._stale = refresh
        self._child: proc.Child | None = None
        if not refresh:
            self._read_header()

    # -- reading ----------------------------------------------------------

    def _read_header(self) -> None:
        try:
            with self.path.open("rb") as fh:
                raw = fh.readline()
            header = json.loads(raw)
        except (OSError, ValueError):
            self._stale = True
            return
        if _valid_header(header) and _same_torch(header):
            self._header, self._header_size = header, len(raw)
        else:
            self._stale = True

    def lookup(self, base: str, request: dict[str, Any]) -> dict[str, Any] | None:
        """The stored answer to ``request`` (an op's full question, as ``_live_child`` takes
        it), or None when the index does not hold it."""
        row = self._row(base)
        if row is None:
            return None
        if row.get("request") != request:
            self._stale = True  # the yaml changed since the index was written
            return None
        return row["answer"]

    def entry(self, name: str) -> dict[str, Any] | None:
        """A Python entry point's answer (``torch.nn.functional.linear``), from the op it
        was asked for."""
        if self._header is None:
            return None
        base = self._header["names"].get(name)
        row = self._row(base) if isinstance(base, str) else None
        if row is None:
            return None
        for entry in row["answer"]["entries"]:
            if isinstance(entry, dict) and entry.get("name") == name and entry.get("exists"):
                return entry
        return None

    def _row(self, base: str) -> dict[str, Any] | None:
        if self._header is None:
            return None
        where = self._header["offsets"].get(base)
        if where is None:
            return None
        try:
            with self.path.open("rb") as fh:
                fh.seek(self._header_size + where[0])
                row = json.loads(fh.read(where[1]))
        except (OSError, ValueError):
            self._stale = True
            return None
        answer = row.get("answer") if isinstance(row, dict) else None
        if (
            row.get("base") != base
            or not isinstance(row.get("request"), dict)
            or not matches(answer, ANSWER_SHAPE)
        ):
            self._stale = True
            return None
        return row

    # -- asking -----------------------------------------------------------

    def prepare(self) -> None:
        """Start the child now (torch imports while the caller reads the yaml) when the
        index is to be built: missing, stale, or --refresh."""
        if self._header is None and self._child is None and not self._someone_building():
            self._child = self._start()

    def ask(self, request: dict[str, Any], every: Requests) -> dict[str, Any]:
        """The child's answer to ``request``; the child then indexes every op (``every()``:
        base -> request) in the background when the index is missing or stale."""
        child, self._child = self._child, None
        build = self._stale and not self._someone_building(mine=child is not None)
        if child is None:
            child = self._start() if build else _start_child(self.python)
        job: dict[str, Any] = {"first": request, "index": None}
        if build:
            job["index"] = {
                "path": str(self.path),
                "building": str(self.building),
                "ops": every(),
            }
        try:
            data = child.answer(json.dumps(job).encode(), timeout=LIVE_TIMEOUT)
        except OnboardError as exc:  # a timeout: the child was stopped
            child.release()
            self._forget(build)
            raise OnboardError(
                f"Asking the installed torch ({self.python}) failed: {exc.message}",
                next_step=f"Check that `{quote(self.python)} -c 'import torch'` works, or pass "
                "--python with the interpreter whose torch you use.",
            ) from exc
        if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
            code, stderr = child.failure()
            child.release()
            self._forget(build)
            tail = (stderr.strip().splitlines() or ["no output"])[-1]
            how = f"exit {code}" if code is not None else "no answer"
            raise OnboardError(
                f"The interpreter {self.python} could not answer onboard's torch questions "
                f"({how}): {tail}",
                next_step=f"Check that `{quote(self.python)} -c 'import torch'` works, or pass "
                "--python "
                "with the interpreter whose torch you use; `onboard doctor` shows what is wrong.",
            )
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
            self._forget(True)
            self._child = None

    def _start(self) -> proc.Child:
        child = _start_child(self.python)
        with contextlib.suppress(OSError):
            cache.cache_root().mkdir(parents=True, exist_ok=True)
            self.building.write_text(json.dumps({"pid": child.pid, "started": time.time()}))
        return child

    def _forget(self, build: bool) -> None:
        if build:
            with contextlib.suppress(OSError):
                self.building.unlink()

    def _someone_building(self, *, mine: bool = False) -> bool:
        """Whether another child is indexing now (``mine``: the marker is this run's)."""
        if mine:
            return False
        try:
            marker = json.loads(self.building.read_text())
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
