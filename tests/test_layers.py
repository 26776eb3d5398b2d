"""The house rules a reader relies on, checked on the source itself.

- No import cycle between onboard's modules, deferred (inside a function) or
  not: each module can be read knowing only what it imports.
- Workflows never import Click, nor rich or the console: they return results, and
  ``onboard/views`` draws them. Only the proc adapter starts processes.
- No module calls into another module's private names.
- Each command calls one workflow entry with one request object (a frozen
  dataclass the command builds from what Click parsed, never ``**parsed``
  splatted into the workflow), and that entry takes the request first.

Imports under ``if TYPE_CHECKING:`` are for the type checker only and do not
count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import onboard

ROOT = Path(onboard.__file__).resolve().parent
TASKS = ROOT.parent / "tasks"


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in ROOT.rglob("*.py")}


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements that run (not those under ``if TYPE_CHECKING:``)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, list[str]]]:
    """(imported onboard module, names taken from it)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.startswith("onboard"):
                yield alias.name, []
        return
    base = node.module or ""
    if node.level:
        package = module.split(".")
        if MODULES[module].name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    if not base.startswith("onboard"):
        return
    names = []
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        if sub in MODULES:
            yield sub, []
        else:
            names.append(alias.name)
    if names:
        yield base, names


def _graph() -> dict[str, dict[str, list[str]]]:
    graph: dict[str, dict[str, list[str]]] = {}
    for name, path in MODULES.items():
        edges: dict[str, list[str]] = {}
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            for target, names in _targets(name, node):
                if target in MODULES and target != name:
                    edges.setdefault(target, []).extend(names)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_deferred_or_not() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph: dict[str, dict[str, list[str]]] = {
        "a": {"b": []},
        "b": {"c": []},
        "c": {"a": []},
        "d": {"a": []},
    }
    assert _cycles(graph) == [["a", "b", "c"]]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_aliases(name: str, tree: ast.AST) -> dict[str, str]:
    """Local name -> the onboard module it is bound to (``from onboard.x import y``
    where y is a module, ``import onboard.x as y``)."""
    aliases: dict[str, str] = {}
    for node in _runtime_imports(tree):
        for alias in node.names:
            local = alias.asname or alias.name
            if isinstance(node, ast.Import):
                if alias.asname and alias.name in MODULES:
                    aliases[local] = alias.name
                continue
            for target, names in _targets(name, ast.ImportFrom(node.module, [alias], node.level)):
                if not names:
                    aliases[local] = target
    return aliases


def test_no_module_uses_another_modules_private_names() -> None:
    offenders = []
    for name, edges in _graph().items():
        own_package = name.rsplit(".", 1)[0] + "._"
        for target, names in edges.items():
            private = [n for n in names if _private(n)]
            if private and not target.startswith(own_package):
                offenders.append(f"{name} takes {private} from {target}")
        # ...nor through the module: `module._name`, a subclass of `module._Class`.
        tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
        aliases = _module_aliases(name, tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and _private(node.attr)
                and not aliases[node.value.id].startswith(own_package)
                and aliases[node.value.id] != name
            ):
                offenders.append(f"{name}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert offenders == []


def _imports_anywhere(path: Path, top: str) -> bool:
    for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
        if any(n and (n == top or n.startswith(top + ".")) for n in names):
            return True
    return False


def test_workflows_never_import_click() -> None:
    workflows = [p for n, p in MODULES.items() if n.startswith("onboard.workflows")]
    assert workflows
    assert [str(p) for p in workflows if _imports_anywhere(p, "click")] == []


def test_workflows_return_results_and_views_draw_them() -> None:
    drawing = [
        n
        for n, p in MODULES.items()
        if n.startswith("onboard.workflows.")
        and (_imports_anywhere(p, "rich") or _imports_anywhere(p, "onboard.console"))
    ]
    assert drawing == []


def test_only_proc_starts_processes() -> None:
    # The child scripts (``onboard/children``) run in the target interpreter, not in onboard.
    starters = [
        n
        for n, p in MODULES.items()
        if n != "onboard.proc"
        and not n.startswith("onboard.proc.")  # proc as a package
        and not n.startswith("onboard.children.")
        and _imports_anywhere(p, "subprocess")
    ]
    assert starters == []


def test_children_speak_one_protocol() -> None:
    """Every child lives in ``onboard/children`` and gives its answer through
    ``onboard_answer``: no marker of its own that a parent must parse."""
    children = ROOT / "children"
    strays = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*_child.py"))
    assert [s for s in strays if not s.startswith("children/")] == []
    markers = sorted(
        str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if "@@ONBOARD" in p.read_text()
    )
    assert markers == ["children/onboard_answer.py"]
    silent = sorted(
        p.name for p in children.glob("_*_child.py") if not _imports_anywhere(p, "onboard_answer")
    )
    assert silent == []


# --- commands: parse, then one workflow with one request -------------------------------


def _is_command(func: ast.FunctionDef) -> bool:
    """A Click command's callback: decorated with ``click.command``/``group`` or a
    group's ``.command``."""
    for deco in func.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Attribute) and target.attr in ("command", "group"):
            return True
    return False


def _workflow_names(func: ast.FunctionDef) -> dict[str, tuple[str, str]]:
    """Local name -> (workflow module, name there) for what ``func`` imports from
    ``onboard.workflows``."""
    names = {}
    for node in ast.walk(func):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("onboard.workflows"):
            for alias in node.names:
                names[alias.asname or alias.name] = (node.module or "", alias.name)
    return names


def _callee(call: ast.Call) -> str | None:
    """``X`` for ``X(...)`` and for ``X.parse(...)``."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.value.id
    return func.id if isinstance(func, ast.Name) else None


def _resolve(module: str, name: str) -> object:
    import importlib

    return getattr(importlib.import_module(module), name)


def _entry_calls(path: Path) -> dict[str, list[str]]:
    """Each command callback in the module -> what breaks the rule in it (empty: none)."""
    import dataclasses
    import inspect

    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, list[str]] = {}
    for func in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and _is_command(n)]:
        imported = _workflow_names(func)
        requests = {
            local
            for local, (mod, name) in imported.items()
            if isinstance(_resolve(mod, name), type)
        }
        bound = {  # `request = XRequest(...)`
            target.id
            for node in ast.walk(func)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and _callee(node.value) in requests
            for target in node.targets if isinstance(target, ast.Name)
        }  # fmt: skip
        problems = []
        entries = [
            node
            for node in ast.walk(func)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in imported
            and node.func.id not in requests
        ]
        if len(entries) != 1:
            problems.append(f"calls {len(entries)} workflow entries, not one")
        for call in entries:
            mod, name = imported[call.func.id]  # type: ignore[attr-defined]
            if any(k.arg is None for k in call.keywords) or any(
                isinstance(a, ast.Starred) for a in call.args
            ):
                problems.append(f"splats its options into {name}")
            first = call.args[0] if call.args else None
            given = (
                isinstance(first, ast.Call)
                and _callee(first) in requests
                or isinstance(first, ast.Name)
                and first.id in bound
            )
            if not given:
                problems.append(f"{name}'s first argument is not a request object")
            params = list(inspect.signature(_resolve(mod, name)).parameters.values())  # type: ignore[arg-type]
            if not params or not str(params[0].annotation).endswith("Request"):
                problems.append(f"{mod}.{name} does not take a request first")
        for local in requests & {_callee(c) for c in ast.walk(func) if isinstance(c, ast.Call)}:
            cls = _resolve(*imported[local])
            if local.endswith("Request") and not (
                dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
            ):
                problems.append(f"{local} is not a frozen dataclass")
        found[f"{path.stem}.{func.name}"] = problems
    return found


def test_every_command_calls_one_workflow_with_one_request() -> None:
    from onboard.cli import COMMANDS

    checked: dict[str, list[str]] = {}
    for info in COMMANDS.values():
        checked.update(_entry_calls(MODULES[info.target.split(":")[0]]))
    # Every command (and `harvest show`) was looked at...
    callbacks = {
        f"{i.target.split(':')[0].rsplit('.', 1)[1]}.{i.target.split(':')[1]}"
        for i in COMMANDS.values()
    }
    assert callbacks <= set(checked)
    assert "harvest.show" in checked
    # ...and follows the rule.
    assert {name: p for name, p in checked.items() if p} == {}


def test_the_request_check_finds_a_splat(tmp_path: Path) -> None:
    command = tmp_path / "fake.py"
    command.write_text(
        "import click\n"
        "@click.command()\n"
        "def fake(**parsed):\n"
        "    from onboard.workflows.where import where\n"
        "    return where(**parsed)\n"
    )
    [problems] = _entry_calls(command).values()
    assert "splats its options into where" in problems
    assert "where's first argument is not a request object" in problems


def test_every_answer_serialises_through_the_one_serialiser() -> None:
    """No class writes its own ``to_json``: the JSON of a result is its dataclass
    fields through onboard/jsonable.py (field metadata, ``json_extra``)."""
    own = [
        f"{name}.{node.name}"
        for name, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
        and any(
            isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == "to_json"
            for item in node.body
        )
    ]
    assert own == []
