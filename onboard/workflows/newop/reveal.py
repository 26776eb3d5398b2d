"""`onboard new-op NAME --reveal`: how PyTorch itself writes an op, at the installed commit.

On a full checkout: the lines themselves, read from the installed commit with
git (so a practice branch, which takes the kernel out, does not hide them):
the yaml entries, the stub's DECLARE/DEFINE/REGISTER lines, the meta and impl
functions and the kernels, found by the names the structured-kernel pattern
gives them. On a reference tree (no .cpp/.cu): the yaml entries and the
stub's declaration from the tree, and links to the C++ at the installed
commit on GitHub.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote

from onboard import git
from onboard.errors import BadInput
from onboard.jsonable import spec
from onboard.workflows.newop import family as families
from onboard.workflows.newop import names, sites

if TYPE_CHECKING:
    from onboard.workspace import Workspace

_MAX_LINES = 40  # of one function shown


@dataclass(frozen=True)
class Snippet:
    path: str
    line: int
    what: str
    text: str
    url: str | None = None


def _links(links: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"what": w, "url": u} for w, u in links]


@dataclass
class RevealResult:
    """JSON keys: ``ok``, ``name``, ``commit`` (the installed commit the lines are from),
    ``source`` ("checkout" or "links"), ``snippets`` [{path, line, what, text, url}],
    ``links`` [{what, url}], ``notes``, ``seconds``."""

    name: str
    commit: str | None
    source: str
    snippets: list[Snippet] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list, metadata=spec(convert=_links))
    notes: list[str] = field(default_factory=list)
    seconds: float = field(default=0.0, metadata=spec(digits=3))

    @property
    def exit_code(self) -> int:
        return 0

    def json_extra(self) -> dict[str, object]:
        return {"ok": True}


def _patterns(name: str) -> list[tuple[str, str]]:
    n = re.escape(name)
    return [
        (
            f"the meta function (TORCH_META_FUNC({name}))",
            rf"TORCH_META_FUNC\({n}\)|_META_FUNC\({n}\)",
        ),
        (
            f"the impl function (TORCH_IMPL_FUNC({name}_out))",
            rf"TORCH_IMPL_FUNC\({n}_out\)|CREATE_\w*\({n}_out",
        ),
        ("DispatchStub", rf"(DEFINE|REGISTER\w*|DECLARE)_DISPATCH\([^)]*\b{n}_stub\b"),
        ("the kernel", rf"IMPLEMENT_\w*KERNEL\w*\({n}[,)]|^\s*(static\s+)?void\s+{n}_kernel\w*\("),
    ]


def _snippet(text: str, line: int) -> str:
    """The line, or the whole function/block it opens (up to _MAX_LINES lines)."""
    lines = text.splitlines()
    first = lines[line - 1]
    if "{" not in first and not first.rstrip().endswith(")"):
        return first
    depth, out = 0, []
    for ln in lines[line - 1 : line - 1 + _MAX_LINES]:
        out.append(ln)
        depth += ln.count("{") - ln.count("}")
        if depth <= 0 and "{" in "".join(out):
            break
    return "\n".join(out)


def _from_commit(ws: Workspace, name: str, commit: str) -> list[Snippet]:
    checkout = ws.checkout_path
    found: list[Snippet] = []
    seen: set[tuple[str, int]] = set()
    for what, pattern in _patterns(name):
        result = git.core.git(
            checkout,
            "grep",
            "-n",
            "-E",
            pattern,
            commit,
            "--",
            sites.NATIVE,
            check=False,
            what="git grep",
        )
        for hit in result.stdout.splitlines():
            # <commit>:<path>:<line>:<text>
            _, path, line, _text = hit.split(":", 3)
            if (path, int(line)) in seen or not path.endswith((".cpp", ".cu", ".h", ".cuh")):
                continue
            seen.add((path, int(line)))
            body = git.core.out(checkout, "show", f"{commit}:{path}")
            found.append(Snippet(path, int(line), what, _snippet(body, int(line))))
    return found


def _yaml_and_header(ws: Workspace, name: str, yaml_text: str) -> list[Snippet]:
    out: list[Snippet] = []
    definition = names.find_definition(ws.checkout_path, name, yaml_text)
    if definition is not None:
        lines = yaml_text.splitlines()
        for first in definition.yaml_lines:
            end = first
            while end < len(lines) and not lines[end].startswith("- func:") and lines[end].strip():
                end += 1
            text = "\n".join(lines[first - 1 : end])
            url = ws.github_url(names.NATIVE_YAML, first)
            out.append(Snippet(names.NATIVE_YAML, first, "the yaml entry", text, url))
    kind = families.kind_of(yaml_text, name) or "unary"
    header = families.default(kind).header
    declared = families.stub_declaration(ws.checkout_path, name, families.default(kind))
    if declared is not None:
        header = declared[0]
        text = (ws.checkout_path / header).read_text("utf-8", errors="replace")
        mo = re.search(rf"^DECLARE_DISPATCH\([^\n]*\b{name}_stub\b[^\n]*", text, re.M)
        if mo:
            line = text.count("\n", 0, mo.start()) + 1
            url = ws.github_url(header, line)
            out.append(Snippet(header, line, "DispatchStub (declared)", mo.group(0), url))
    return out


def reveal(ws: Workspace, name: str) -> RevealResult:
    start = time.monotonic()
    checkout = ws.checkout_path
    yaml_path = checkout / names.NATIVE_YAML
    yaml_text = yaml_path.read_text("utf-8") if yaml_path.is_file() else ""
    if name not in names.existing_ops(yaml_text):
        raise BadInput(
            f"aten::{name} is not an op in {names.NATIVE_YAML}, so there is nothing to reveal.",
            next_step="Pass an existing op, e.g. `onboard new-op trunc --reveal`; "
            f"`onboard where {name}` finds Python-level functions.",
        )
    if ws.is_reference:
        result = RevealResult(name, ws.commit, "links", _yaml_and_header(ws, name, yaml_text))
        kind = families.kind_of(yaml_text, name) or "unary"
        family_file = "UnaryOps" if kind == "unary" else "BinaryOps"
        for what, path in (
            (f"meta/impl functions and DEFINE_DISPATCH ({kind} ops)", f"{family_file}.cpp"),
            (f"CPU kernels ({kind} ops)", f"cpu/{family_file}Kernel.cpp"),
        ):
            url = ws.github_url(f"{sites.NATIVE}/{path}")
            if url:
                result.links.append((f"{what}: search it for `{name}`", url))
        query = quote(f"repo:pytorch/pytorch path:{sites.NATIVE}/cuda {name}_stub")
        result.links.append(
            (
                "the CUDA kernel (GitHub code search: the default branch, not the installed "
                "commit)",
                f"https://github.com/search?q={query}&type=code",
            )
        )
        limitation = ws.limitation("Showing the C++ lines here")
        if limitation:
            result.notes.append(limitation)
        result.seconds = time.monotonic() - start
        return result
    commit = ws.commit if ws.commit and git.refs.rev_parse(checkout, ws.commit) else None
    commit = commit or git.refs.head_sha(checkout)
    assert commit is not None
    snippets = _yaml_and_header(ws, name, yaml_text) + _from_commit(ws, name, commit)
    result = RevealResult(name, commit, "checkout", snippets)
    if commit != ws.commit:
        result.notes.append(
            f"The installed commit {ws.commit} is not in this checkout; the lines are from "
            f"HEAD {commit[:12]}."
        )
    result.seconds = time.monotonic() - start
    return result
