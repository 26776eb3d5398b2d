"""What `where` asks the installed torch (in a child: ``children/_live_child.py``): an
op's Python entry points and, per overload, its live dispatch table. Answers come
from the live index (every op, asked once per torch) when it holds them, else from a
child asked about this op alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from onboard.workflows.opsource import live
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.live_index import LiveIndex
from onboard.workflows.where.names import base_of, op_name, python_op

# The short names the live child resolves (children/_live_child.py: _ALIASES).
ALIASES = {"F": "torch.nn.functional", "Tensor": "torch.Tensor", "nn": "torch.nn"}


def entry_candidates(base: str, functions: list[dict[str, Any]]) -> list[str]:
    """The Python names an op may have, for each op name of the group (``add``,
    ``add_``, ``__iand__``): torch.X, Tensor.X, F.X, torch.linalg.X, ..."""
    names: list[str] = []
    for name in dict.fromkeys([base] + [op_name(f["name"]) for f in functions]):
        own = [f for f in functions if op_name(f["name"]) == name] or functions
        variants = {v for f in own for v in f["variants"]}
        modules = {f.get("python_module") for f in own}
        names += [f"torch.{name}", f"torch.{name}_"]
        if "method" in variants:
            names += [f"torch.Tensor.{name}", f"torch.Tensor.{name}_"]
        names.append(f"torch.nn.functional.{name}")
        for module in ("special", "linalg", "fft", "sparse", "nested"):
            if module in modules or name.startswith(module + "_"):
                short = name[len(module) + 1 :] if name.startswith(module + "_") else name
                names.append(f"torch.{module}.{short}")
        if "nn" in modules:
            names.append(f"torch._C._nn.{name}")
    return list(dict.fromkeys(names))


def op_request(base: str, functions: list[dict[str, Any]]) -> dict[str, Any]:
    """The live question about an op: its Python entry points and its overloads."""
    return {
        "entries": entry_candidates(base, functions),
        "ops": [f"aten::{f['name']}" for f in functions],
        "record": True,
        "group_overloads": False,
    }


def every_request(yaml: Any) -> dict[str, dict[str, Any]]:
    """The question about every op of the yaml (for the live index), by base name."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for f in yaml.functions:
        groups.setdefault(f["base"], []).append(f)
    return {base: op_request(base, functions) for base, functions in groups.items()}


def narrowed(answer: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """An op's whole answer cut to a question about some of its overloads (``mm.out``):
    the entry points and dumps that question names, in its order."""
    by_query = {e.get("query"): e for e in answer["entries"] if isinstance(e, dict)}
    return {
        **answer,
        "entries": [by_query[q] for q in request["entries"] if q in by_query],
        "dumps": {op: answer["dumps"][op] for op in request["ops"] if op in answer["dumps"]},
        "python_kernels": {
            op: kernels
            for op, kernels in (answer.get("python_kernels") or {}).items()
            if op in request["ops"]
        },
    }


@dataclass(frozen=True)
class LiveAnswers:
    """The questions of one `where` run, answered from the index or a child."""

    ctx: TreeContext
    index: LiveIndex
    yaml: Any
    refresh: bool

    def about_python(self, name: str) -> dict[str, Any]:
        """The answer about a Python name: its entry (what it reaches) and those ops' dumps."""
        stored = None if self.refresh else self._python_from_index(name)
        if stored is not None:
            return stored
        return self._ask({"entries": [name], "ops": [], "record": True, "group_overloads": True})

    def about_op(self, base: str, functions: list[dict[str, Any]]) -> dict[str, Any]:
        """The answer about ``functions``, some or all overloads of the group ``base``."""
        request = op_request(base, functions)
        whole = op_request(base, self.yaml.group(base))
        stored = None if self.refresh else self.index.lookup(base, whole)
        return narrowed(stored, request) if stored is not None else self._ask(request)

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        return live.ask(
            self.ctx.python,
            request,
            cache_id=self.ctx.cache_id,
            index=self.index,
            every=lambda: every_request(self.yaml),
            reporter=self.ctx.reporter,
            refresh=self.refresh,
        )

    def _python_from_index(self, name: str) -> dict[str, Any] | None:
        """The answer about a Python entry point, from the index: its entry, and the dumps
        of the op it reaches; None when the index does not hold both."""
        full = ALIASES.get(name.split(".", 1)[0])
        entry = self.index.entry(f"{full}.{name.split('.', 1)[1]}" if full else name)
        op = python_op(self.yaml, entry)[0] if entry is not None else None
        if entry is None or op is None:
            return None
        op_base = base_of(self.yaml, op)
        stored = self.index.lookup(op_base, op_request(op_base, self.yaml.group(op_base)))
        if stored is None:
            return None
        return {**stored, "entries": [entry]}
