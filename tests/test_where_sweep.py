"""`onboard where` over the wheel's native_functions.yaml: every op by its aten name, and
every Python name torch exposes for it, against torchgen's parse of that yaml and the
binary's own ``torch._C._dispatch_dump``.

The oracle is torch's, not onboard's: torchgen (in this process) gives each op's
name, ``python_module`` and ``variants``, from which the Python names follow as
tools/autograd/gen_python_functions.py binds them (``torch.X`` for a function,
``Tensor.X`` for a method, ``torch._C._nn.X`` and ``F.X`` for ``python_module: nn``,
``torch.linalg.norm`` for ``linalg_norm``, ...); the table each overload must show is
the binary's dump of it. The normal suite runs a fixed, seeded sample (in this
process, from the live index: ~0.1 s a name); ``nox -s verify`` runs them all.
"""

from __future__ import annotations

import ast
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fixtures.events import gone
from fixtures.pytorch_repo import find_package_dir, find_torch_dir
from opsource_helpers import (
    cache_fixture,  # noqa: F401 (a pytest fixture)
    reference_ws_fixture,  # noqa: F401 (a pytest fixture)
    shared_cache_fixture,  # noqa: F401 (a pytest fixture)
)

from onboard.report import Reporter
from onboard.workflows.where import WhereRequest, where

SEED = 20261202
SAMPLE_PYTHON = 100
SAMPLE_OPS = 25
# The modules of the yaml's `python_module:` and the prefix its ops carry there.
_MODULES = {m: f"torch.{m}" for m in ("fft", "linalg", "special", "sparse", "nested")}
_DUMP_LINE = re.compile(
    r"^(?P<key>[^:]+?): (?:fallthrough )?registered at (?P<path>\S+?):(?P<line>\d+)"
)
OPINFO = "torch/testing/_internal/common_methods_invocations.py"


@dataclass(frozen=True)
class Corpus:
    overloads: dict[str, list[str]]  # op name (add_) -> its overloads (add_.Tensor, ...)
    python: list[tuple[str, str]]  # (Python name, the op it binds)


def _attr(dotted: str) -> Any:
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj
    return None


@pytest.fixture(scope="module", name="corpus")
def corpus_fixture() -> Corpus:
    import torch  # noqa: F401 (the names below are its attributes)
    from torchgen.gen import parse_native_yaml
    from torchgen.model import Variant

    packaged = find_package_dir("torchgen") / "packaged" / "ATen" / "native"
    parsed = parse_native_yaml(str(packaged / "native_functions.yaml"), str(packaged / "tags.yaml"))
    overloads: dict[str, list[str]] = {}
    variants: dict[str, set[Variant]] = {}
    modules: dict[str, set[str | None]] = {}
    for f in parsed.native_functions:
        op = str(f.func.name.name)  # add_, __iand__, linalg_norm
        overloads.setdefault(op, []).append(str(f.func.name))
        variants.setdefault(op, set()).update(f.variants)
        modules.setdefault(op, set()).add(f.python_module)
    python: list[tuple[str, str]] = []
    for op in overloads:
        names = []
        if Variant.function in variants[op]:
            for module in modules[op]:
                if module is None:
                    names += [f"torch.{op}", f"torch.nn.functional.{op}"]
                elif module == "nn":
                    names += [f"torch._C._nn.{op}", f"torch.nn.functional.{op}"]
                elif module in _MODULES and op.startswith(module + "_"):
                    names.append(f"{_MODULES[module]}.{op[len(module) + 1 :]}")
        if Variant.method in variants[op]:
            names.append(f"torch.Tensor.{op}")
        for name in dict.fromkeys(names):
            obj = _attr(name)
            if obj is not None and callable(obj) and not isinstance(obj, type):
                python.append((name, op))
    return Corpus(overloads, python)


@pytest.fixture(scope="module", name="indexed_ws")
def indexed_ws_fixture(reference_ws: Path, shared_cache: Path) -> Path:
    """The workspace, once the live index of every op is written (one child, ~10 s):
    from then on each name is one lookup, no torch import."""
    with pytest.MonkeyPatch.context() as patch:  # the autouse cache, for a module fixture
        patch.setenv("XDG_CACHE_HOME", str(shared_cache))
        reporter = Reporter(verbose=True)
        where(WhereRequest.parse("trunc", workspace=str(reference_ws)), reporter)
        pids = re.findall(r"in the background \(pid (\d+)\)", "\n".join(reporter.messages))
        for pid in pids:
            assert gone(int(pid), 900.0), "the child indexing every op never ended"
    return reference_ws


def _dump(overload: str) -> set[tuple[str, str, int]]:
    import torch

    try:
        text = torch._C._dispatch_dump(f"aten::{overload}")
    except RuntimeError:
        return set()
    found = set()
    for raw in text.splitlines():
        mo = _DUMP_LINE.match(raw.strip())
        if mo and mo.group("key") != "debug":  # the schema's line, not a kernel
            found.add((mo.group("key"), mo.group("path"), int(mo.group("line"))))
    return found


def _check_table(result: Any, op: str, overloads: list[str]) -> list[str]:
    """What differs between the result's rows for each overload and the binary's dump."""
    problems = []
    for overload in overloads:
        expected = _dump(overload)
        shown = set()
        for r in result.dispatch:
            if r.op != f"aten::{overload}":
                continue
            at = r.registered_at or r.location  # a Python kernel: the line the dump names
            shown.add((r.key, at.path, at.line))
        if {(k, n) for k, _, n in expected} != {(k, n) for k, _, n in shown}:
            problems.append(f"{overload}: shown {sorted(shown)} != dump {sorted(expected)}")
            continue
        by_key = {(k, n): p for k, p, n in shown}
        for key, path, line in expected:
            if not path.endswith(by_key[(key, line)]):
                problems.append(f"{overload} {key}: {by_key[(key, line)]} is not {path}")
    return problems


def _check_python(ws: Path, corpus: Corpus, name: str, op: str) -> list[str]:
    result = where(WhereRequest.parse(name, workspace=str(ws)))
    if result.op != op:
        return [f"{name}: aten::{result.op}, the yaml binds it to aten::{op}"]
    problems = [f"{name}: {p}" for p in _check_table(result, op, corpus.overloads[op])]
    entry = result.entry_points[0]
    if entry.call_error and not any("failed" in n for n in result.notes):
        problems.append(f"{name}: its call failed ({entry.call_error}) and no note says so")
    return problems


def _check_op(ws: Path, corpus: Corpus, op: str) -> list[str]:
    result = where(WhereRequest.parse(op, workspace=str(ws)))
    problems = [f"{op}: {p}" for p in _check_table(result, op, corpus.overloads[op])]
    expected = _opinfo_lines(op)
    shown = {o.line for o in result.opinfo}
    if expected - shown and len(shown) < 5:  # (onboard shows the first five)
        problems.append(f"{op}: OpInfo lines {sorted(expected - shown)} not shown")
    return problems


_OPINFO_ENTRIES: list[tuple[int, str, str, bool]] = []


def _opinfo_lines(op: str) -> set[int]:
    """The lines of the *Info(...) entries in the wheel's common_methods_invocations.py
    whose aten op is ``op`` (OpInfo's aten_name: the keyword, else the name; a
    ForeachFuncInfo('add') is _foreach_add's), read with ast."""
    if not _OPINFO_ENTRIES:
        tree = ast.parse((find_torch_dir().parent / OPINFO).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func.id if isinstance(node.func, ast.Name) else ""
            first = node.args[0]
            if not func.endswith("Info") or not isinstance(first, ast.Constant):
                continue
            aten = next((k.value for k in node.keywords if k.arg == "aten_name"), first)
            if isinstance(aten, ast.Constant) and isinstance(aten.value, str):
                foreach = func == "ForeachFuncInfo"
                _OPINFO_ENTRIES.append((node.lineno, str(first.value), aten.value, foreach))
    return {
        line
        for line, name, aten, foreach in _OPINFO_ENTRIES
        if (f"_foreach_{name}" == op if foreach else aten == op)
    }


def test_the_fixed_sample_of_python_names_shows_the_table_of_the_op_the_yaml_binds(
    indexed_ws: Path, corpus: Corpus
) -> None:
    sample = random.Random(SEED).sample(corpus.python, SAMPLE_PYTHON)
    problems = [p for name, op in sample for p in _check_python(indexed_ws, corpus, name, op)]
    assert not problems, "\n".join(problems)


def test_the_fixed_sample_of_aten_names_shows_each_overloads_table_and_its_opinfo(
    indexed_ws: Path, corpus: Corpus
) -> None:
    sample = random.Random(SEED).sample(sorted(corpus.overloads), SAMPLE_OPS)
    problems = [p for op in sample for p in _check_op(indexed_ws, corpus, op)]
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_every_op_and_every_python_name_of_the_yaml(indexed_ws: Path, corpus: Corpus) -> None:
    problems = [p for op in sorted(corpus.overloads) for p in _check_op(indexed_ws, corpus, op)]
    problems += [
        p for name, op in corpus.python for p in _check_python(indexed_ws, corpus, name, op)
    ]
    tried = f"{len(corpus.overloads)} ops, {len(corpus.python)} Python names"
    print(tried, file=sys.stderr)
    assert not problems, f"{len(problems)} of {tried}:\n" + "\n".join(problems)
