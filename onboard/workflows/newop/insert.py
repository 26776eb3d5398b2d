"""Text insertion next to a sibling entry, keeping each file's own formatting.

Files are never re-dumped (a yaml round trip would lose PyTorch's comments and
layout); each function finds the sibling op's entry by the shape PyTorch writes
it in and inserts the rendered block after it. When the sibling is missing, the
block goes at the end of the file (or of the list it belongs to) and the
returned ``Placement`` says so.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    text: str  # the whole new file content
    line: int  # 1-based line where the block starts
    where: str  # "after trunc.out" / "at the end (no trunc entry)"


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _join(lines: list[str]) -> str:
    return "".join(lines)


def _ensure_nl(block: str) -> str:
    return block if block.endswith("\n") else block + "\n"


def _end_of_paragraph(lines: list[str], start: int, stop_re: re.Pattern[str]) -> int:
    """Index of the first blank line after ``start`` (or of the next entry / EOF)."""
    i = start + 1
    while i < len(lines):
        if not lines[i].strip() or stop_re.match(lines[i]):
            return i
        i += 1
    return len(lines)


def _insert_paragraph(
    text: str, starts_re: re.Pattern[str], next_re: re.Pattern[str], block: str, what: str
) -> Placement:
    lines = _lines(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    hits = [i for i, ln in enumerate(lines) if starts_re.match(ln)]
    block = _ensure_nl(block)
    if not hits:
        # No sibling: append, separated by one blank line.
        while lines and not lines[-1].strip():
            lines.pop()
        at = len(lines) + 1
        new = [*lines, "\n", block]
        return Placement(_join(new), at + 1, f"at the end of the file (no {what} entry found)")
    end = _end_of_paragraph(lines, hits[-1], next_re)
    if end < len(lines) and not lines[end].strip():
        # After the blank line that closes the sibling's paragraph.
        insert_at = end + 1
        new = [*lines[:insert_at], block, "\n", *lines[insert_at:]]
        return Placement(_join(new), insert_at + 1, f"after the {what} entry")
    insert_at = end
    new = [*lines[:insert_at], "\n", block, *([] if insert_at == len(lines) else ["\n"])]
    new += lines[insert_at:]
    return Placement(_join(new), insert_at + 2, f"after the {what} entry")


def native_functions(text: str, sibling: str, block: str) -> Placement:
    """After the last `- func: sibling...` entry (trunc, trunc_, trunc.out)."""
    starts = re.compile(rf"^- func:\s*{re.escape(sibling)}(?:_|\.[A-Za-z0-9_]+)?\s*\(")
    return _insert_paragraph(text, starts, re.compile(r"^- func:"), block, f"`{sibling}`")


def derivatives(text: str, sibling: str, block: str) -> Placement:
    """After the sibling's `- name: sibling(...)` entries in derivatives.yaml."""
    starts = re.compile(rf"^- name:\s*{re.escape(sibling)}(?:_|\.[A-Za-z0-9_]+)?\s*\(")
    return _insert_paragraph(text, starts, re.compile(r"^- name:"), block, f"`{sibling}`")


def after_line(
    text: str,
    line_re: re.Pattern[str],
    fallback_re: re.Pattern[str] | None,
    new_line: str,
    what: str,
) -> Placement:
    """The new line right after the line matching ``line_re`` (else the last ``fallback_re``)."""
    lines = _lines(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    hits = [i for i, ln in enumerate(lines) if line_re.search(ln)]
    where = f"after {what}"
    if not hits and fallback_re is not None:
        hits = [i for i, ln in enumerate(lines) if fallback_re.search(ln)]
        where = f"after the last similar line ({what} not found)"
    new_line = _ensure_nl(new_line)
    if not hits:
        return Placement(
            _join([*lines, new_line]), len(lines) + 1, f"at the end ({what} not found)"
        )
    at = hits[-1] + 1
    return Placement(_join([*lines[:at], new_line, *lines[at:]]), at + 1, where)


def stub_declaration(text: str, sibling: str, stub_type: str, new_line: str) -> Placement:
    line_re = re.compile(rf"^DECLARE_DISPATCH\([^)]*\b{re.escape(sibling)}_stub\)")
    fallback = re.compile(rf"^DECLARE_DISPATCH\(\s*{re.escape(stub_type)}\s*,")
    return after_line(text, line_re, fallback, new_line, f"`{sibling}_stub`")


def _call_end(lines: list[str], start: int) -> int:
    """Index of the `)` line (column 0) that closes a top-level call starting at ``start``."""
    i = start + 1
    while i < len(lines):
        if lines[i].startswith(")"):
            return i
        i += 1
    return len(lines) - 1


def python_call(text: str, call: str, key_re: str, block: str, what: str) -> Placement:
    """After the top-level ``call(`` whose first argument matches ``key_re``.

    `add_docstr(\\n    torch.trunc,` in _torch_docs.py, `add_docstr_all(\\n    "trunc_",`
    in _tensor_docs.py: the call ends at the next line that starts with `)`.
    """
    lines = _lines(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    block = _ensure_nl(block)
    hit = None
    for i, ln in enumerate(lines[:-1]):
        if ln.startswith(f"{call}(") and re.match(key_re, lines[i + 1]):
            hit = i
    if hit is None:
        while lines and not lines[-1].strip():
            lines.pop()
        new = [*lines, "\n", block]
        return Placement(_join(new), len(lines) + 2, f"at the end of the file ({what} not found)")
    end = _call_end(lines, hit)
    new = [*lines[: end + 1], "\n", block, *lines[end + 1 :]]
    return Placement(_join(new), end + 3, f"after {what}")


def list_entry(text: str, entry_re: re.Pattern[str], block: str, what: str) -> Placement | None:
    """Before the entry that follows the sibling entry at the same indentation (op_db)."""
    lines = _lines(text)
    hit = next((i for i, ln in enumerate(lines) if entry_re.match(ln)), None)
    if hit is None:
        return None
    indent = len(lines[hit]) - len(lines[hit].lstrip(" "))
    i = hit + 1
    while i < len(lines):
        ln = lines[i]
        body = ln.lstrip(" ")
        ind = len(ln) - len(body)
        if body.strip() and ind == indent and not body.startswith((")", "#")):
            break
        if body.strip() and ind < indent:
            break
        i += 1
    new = [*lines[:i], _ensure_nl(block), *lines[i:]]
    return Placement(_join(new), i + 1, f"after {what}")


def sorted_lines(text: str, new_lines: list[str], what: str) -> Placement:
    """Each new line at its sorted position (the expect files are sorted lists)."""
    lines = _lines(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    first = None
    for new in new_lines:
        keys = [ln.rstrip("\n") for ln in lines]
        at = bisect.bisect_left(keys, new)
        lines.insert(at, new + "\n")
        first = at + 1 if first is None else min(first, at + 1)
    return Placement(_join(lines), first or 1, f"in sorted order ({what})")
