"""The yaml index: native_functions.yaml (read by torchgen) and derivatives.yaml.

torchgen comes from the workspace interpreter's torch wheel and runs in a
child process (onboard never imports it at start-up); the parsed entries,
with their line numbers, are cached per file content stamp.
"""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard import proc, torchenv
from onboard.errors import OnboardError
from onboard.report import Reporter
from onboard.workflows.opsource import cache

NATIVE_FUNCTIONS = "aten/src/ATen/native/native_functions.yaml"
TAGS = "aten/src/ATen/native/tags.yaml"
DERIVATIVES = "tools/autograd/derivatives.yaml"
PARSE_TIMEOUT = 300.0


def _stamp(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return "missing"
    return f"{st.st_size}:{st.st_mtime_ns}"


@dataclass
class YamlIndex:
    functions: list[dict[str, Any]]
    derivatives: list[dict[str, Any]]
    warm: bool = False
    by_name: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_name = {f["name"]: f for f in self.functions}

    @property
    def names(self) -> list[str]:
        return list(self.by_name)

    def group(self, base: str) -> list[dict[str, Any]]:
        """Every entry of one op: its overloads, inplace and out variants (yaml order)."""
        return [f for f in self.functions if f["base"] == base]

    def derivatives_for(self, names: set[str]) -> list[dict[str, Any]]:
        """derivatives.yaml entries whose `name:` schema is one of ``names`` (`trunc`, `mm.out`)."""
        return [d for d in self.derivatives if d["op"] in names]

    def suggest(self, query: str, n: int = 5) -> list[str]:
        bases = sorted({f["base"] for f in self.functions})
        found = difflib.get_close_matches(query, bases, n=n, cutoff=0.6)
        found += [
            name
            for name in difflib.get_close_matches(query, self.names, n=n, cutoff=0.6)
            if name not in found
        ]
        if not found:
            found = [b for b in bases if query and (query in b or b in query)][:n]
        return found[:n]


# What where/locate read of each entry (_yaml_child.py writes more).
SHAPE = {
    "functions": [
        {
            "name": str,
            "base": str,
            "overload": str,
            "inplace": bool,
            "schema": str,
            "line": int,
            "kind": str,
            "variants": [str],
            "structured": bool,
            "structured_delegate": (str, None),
            "tags": [str],
            "dispatch": {str: str},
        }
    ],
    "derivatives": [{"name": str, "op": str, "line": int, "formulas": {str: str}}],
}


def load(checkout: Path, python: str, reporter: Reporter, *, refresh: bool = False) -> YamlIndex:
    native = checkout / NATIVE_FUNCTIONS
    if not native.is_file():
        raise OnboardError(
            f"{native} is missing, so the op registry cannot be read.",
            next_step="Point --workspace at a workspace made by `onboard setup` (its checkout "
            "holds aten/src/ATen/native/native_functions.yaml), or run `onboard setup DIR` again.",
        )
    tags = checkout / TAGS
    derivatives = checkout / DERIVATIVES
    name = "yaml-" + cache.key(native.resolve(), _stamp(native), _stamp(tags), _stamp(derivatives))
    data = None if refresh else cache.load(name + ".json", SHAPE)
    if data is not None:
        return YamlIndex(data["functions"], data["derivatives"], warm=True)
    reporter.step(f"Reading {NATIVE_FUNCTIONS} with torchgen (once per commit)")
    data = _parse(python, native, tags, derivatives)
    cache.store(name + ".json", data)
    return YamlIndex(data["functions"], data["derivatives"], warm=False)


def _parse(python: str, native: Path, tags: Path, derivatives: Path) -> dict[str, Any]:
    errors: list[str] = []
    for exe in dict.fromkeys([python, sys.executable]):
        try:
            asked = proc.ask_child(
                exe, "_yaml_child.py", str(native), str(tags), str(derivatives),
                **torchenv.isolated(), timeout=PARSE_TIMEOUT,
                what="Parsing native_functions.yaml with torchgen",
            )  # fmt: skip
        except proc.NoAnswer as exc:
            errors.append(f"{exe}: {(exc.stderr.strip().splitlines() or ['no output'])[-1]}")
            continue
        data: dict[str, Any] = asked.data
        return data
    raise OnboardError(
        "torchgen could not read native_functions.yaml (" + "; ".join(errors) + ").",
        next_step="torchgen ships with torch but needs PyYAML: run `"
        f"{python} -m pip install pyyaml`, then run the command again.",
    )
