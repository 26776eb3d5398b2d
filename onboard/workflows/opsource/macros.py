"""The check and error macro families, read from the tree's own headers.

``c10/util/Exception.h`` defines ``TORCH_CHECK`` on top of
``c10::detail::torchCheckFail``, the typed variants on top of
``TORCH_CHECK_WITH_MSG(ValueError, ...)`` -> ``C10_THROW_ERROR``, the warnings
on top of ``c10::warn``; ``c10/core/SymBool.h`` adds ``TORCH_SYM_CHECK`` and
``TORCH_MAYBE_SYM_CHECK``, other headers and .cpp files add their own
(``TORCH_CHECK_TENSOR_ALL``, a file's local ``CHECK_INPUT``). Rather than a
hand list of names, every function-like ``#define`` whose body reaches one of
the four throwing primitives becomes a family, with what the macro adds to the
message and the C++ error class it throws. ``torch/csrc/Exceptions.h`` says
which Python exception each class becomes (``_CATCH_GENERIC_ERROR(ValueError,
PyExc_ValueError, ...)``; any other ``c10::Error`` is a ``RuntimeError``).

Definitions are read as a release wheel is compiled: ``#ifdef
STRIP_ERROR_MESSAGES`` branches are skipped, ``NDEBUG`` is defined (so
``TORCH_INTERNAL_ASSERT_DEBUG_ONLY`` never fires).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from onboard.workflows.opsource import scan

# How release wheels are compiled (setup.py: Release / RelWithDebInfo define
# NDEBUG; STRIP_ERROR_MESSAGES and STANDALONE_TORCH_HEADER are mobile and
# AOTInductor-standalone options). Anything not named here is "unknown", and
# both branches of its #if are read.
RELEASE_BUILD = {
    "STRIP_ERROR_MESSAGES": False,
    "STANDALONE_TORCH_HEADER": False,
    "DISABLE_WARN": False,
    "NDEBUG": True,
    "__CUDACC__": False,
    "__HIPCC__": False,
    "C10_USE_GLOG": False,
    "C10_MOBILE": False,
}

# Headers that hold the families and the C++ -> Python exception table.
EXCEPTION_HEADER = "c10/util/Exception.h"
PYTHON_EXCEPTIONS_HEADER = "torch/csrc/Exceptions.h"
TORCH_INIT = "torch/__init__.py"

CHECK = "check"
ASSERT = "assert"
WARN = "warn"

_NAME_HINT = re.compile(r"[A-Z0-9_]*(?:CHECK|ASSERT|ERROR|WARN|THROW|FAIL)[A-Z0-9_]*")
# A function-like macro call: found from its hint word, then widened to the whole
# name (a leading \b would defeat the regex engine's literal search: ~5x slower).
_CALL_TAIL = re.compile(r"(?:CHECK|ASSERT|ERROR|WARN|THROW|FAIL)[A-Z0-9_]*\s*\(")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


@dataclass(frozen=True)
class Call:
    name: str
    start: int
    open_paren: int


def macro_calls(text: str) -> list[Call]:
    """Every ``NAME(`` whose NAME is an upper-case identifier with a check-like word."""
    calls: list[Call] = []
    for mo in _CALL_TAIL.finditer(text):
        start = mo.start()
        while start > 0 and text[start - 1] in _NAME_CHARS:
            start -= 1
        if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            continue  # part of a longer (lower-case) identifier
        if calls and calls[-1].start == start:
            continue
        name = text[start : mo.end() - 1].rstrip()
        if name[0].isdigit():
            continue
        calls.append(Call(name, start, mo.end() - 1))
    return calls


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)(.*)$", re.S)
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)$", re.S)
_ROOTS = re.compile(
    r"\b(?P<check>torchCheckFail)\s*\("
    r"|\b(?P<assert>torchInternalAssertFail)\s*\("
    r"|\bthrow\s+(?:::)?c10::(?P<c10>\w+)\s*\("
    r"|\bthrow\s+std::(?P<std>\w+)\s*\("
    r"|(?P<warn>(?:::)?c10::warn)\s*\("
)
_DEAD_BODY = re.compile(r"^\s*(?:while|if)\s*\(\s*(?:false|0)\s*\)")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


# A message template item: literal text, or the index of the macro parameter
# whose argument goes there (the variadic one takes every argument from there on).
Item = str | int


@dataclass(frozen=True)
class Family:
    """One check/error/warning macro and what it does with its arguments."""

    name: str
    kind: str  # check / assert / warn
    error: str | None  # the C++ class thrown (ValueError, Error, UserWarning, std::runtime_error)
    type_param: int | None  # the class comes from this argument (TORCH_CHECK_WITH(IndexError, ..))
    template: tuple[Item, ...]  # the message: literal pieces and parameter indexes, in order
    variadic: int | None = None  # the index of ``...`` among the parameters
    defined_at: str | None = None  # path:line of the #define
    fires: bool = True  # False: compiled out of release builds

    def message_pieces(self, args: list[list[str]]) -> list[str]:
        """The literal pieces of a call's message, in order (runtime values are the gaps)."""
        pieces: list[str] = []
        for item in self.template:
            if isinstance(item, str):
                pieces.append(item)
            elif item == self.variadic:
                pieces.extend(p for arg in args[item:] for p in arg)
            elif item < len(args):
                pieces.extend(args[item])
        return pieces

    def error_of(self, type_arg: str | None) -> str | None:
        """The class a call throws; ``type_arg`` is the call's argument at ``type_param``."""
        if self.type_param is not None and type_arg:
            return re.sub(r"^(?:::)?c10::", "", type_arg).removesuffix("()")
        return self.error


# --- reading #defines ------------------------------------------------------


_HASH = re.compile(r"#[ \t]*(?:if|ifdef|ifndef|elif|else|endif|define)\b")


def _directives(text: str) -> list[tuple[int, str]]:
    """(1-based line, text) of each preprocessor directive, continuation lines joined."""
    out: list[tuple[int, str]] = []
    line = 1
    counted = 0
    for mo in _HASH.finditer(text):
        begin = text.rfind("\n", 0, mo.start()) + 1
        if text[begin : mo.start()].strip():
            continue  # a '#' inside a line: stringification, a comment
        end = text.find("\n", mo.start())
        while end >= 0 and text[end - 1] == "\\":
            end = text.find("\n", end + 1)
        end = len(text) if end < 0 else end
        line += text.count("\n", counted, begin)
        counted = begin
        out.append((line, text[begin:end].replace("\\\n", "\n")))
    return out


def _tri_and(values: list[bool | None]) -> bool | None:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def _tri_or(values: list[bool | None]) -> bool | None:
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) else False


def _tri_not(value: bool | None) -> bool | None:
    return None if value is None else not value


_COND_TOKEN = re.compile(r"defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)|&&|\|\||!|\(|\)|\w+|\S")


def evaluate(condition: str, build: dict[str, bool] = RELEASE_BUILD) -> bool | None:
    """An #if condition under ``build``: True, False, or None when it cannot be told."""
    tokens = [m for m in _COND_TOKEN.finditer(_COMMENT.sub(" ", condition))]
    pos = 0

    def atom() -> bool | None:
        nonlocal pos
        if pos >= len(tokens):
            return None
        tok = tokens[pos]
        pos += 1
        name = tok.group(1) or tok.group(2)
        if name:
            return build.get(name)
        text = tok.group(0)
        if text == "!":
            return _tri_not(atom())
        if text == "(":
            value = disjunction()
            if pos < len(tokens) and tokens[pos].group(0) == ")":
                pos += 1
            return value
        if text.isdigit():
            return text != "0"
        return build.get(text)

    def joined(
        op: str, operand: Callable[[], bool | None], combine: Callable[..., bool | None]
    ) -> bool | None:
        nonlocal pos
        values = [operand()]
        while pos < len(tokens) and tokens[pos].group(0) == op:
            pos += 1
            values.append(operand())
        return combine(values)

    def conjunction() -> bool | None:
        return joined("&&", atom, _tri_and)

    def disjunction() -> bool | None:
        return joined("||", conjunction, _tri_or)

    value = disjunction()
    return value if pos >= len(tokens) else None


def scan_defines(text: str) -> list[list[Any]]:
    """[[line, name, [params], body, active]] for the check-like macros a file defines.

    ``active`` is False when the definition sits in a branch a release build
    skips, None when that depends on something unknown.
    """
    if "define" not in text:
        return []
    stack: list[list[bool | None]] = []  # [this branch, some earlier branch taken]
    found: list[list[Any]] = []
    for line, logical in _directives(text):
        directive = _DIRECTIVE.match(logical)
        if directive:
            word, rest = directive.group(1), directive.group(2).strip()
            if word in ("if", "ifdef", "ifndef"):
                if word == "if":
                    value = evaluate(rest)
                else:
                    name = rest.split()[0] if rest.split() else ""
                    value = RELEASE_BUILD.get(name)
                    if word == "ifndef":
                        value = _tri_not(value)
                stack.append([value, value])
            elif word == "elif" and stack:
                taken = stack[-1][1]
                value = _tri_and([_tri_not(taken), evaluate(rest)])
                stack[-1] = [value, _tri_or([taken, value])]
            elif word == "else" and stack:
                taken = stack[-1][1]
                stack[-1] = [_tri_not(taken), True]
            elif word == "endif" and stack:
                stack.pop()
            continue
        mo = _DEFINE.match(logical)
        if not mo:
            continue
        name, params, body = mo.group(1), mo.group(2), _COMMENT.sub(" ", mo.group(3))
        if not (_NAME_HINT.fullmatch(name) or _ROOTS.search(body)):
            continue
        if not (_ROOTS.search(body) or macro_calls(body)):
            continue
        active = _tri_and([branch[0] for branch in stack])
        found.append(
            [line, name, [p.strip() for p in params.split(",") if p.strip()], body, active]
        )
    return found


# --- resolving families ------------------------------------------------------


def _split_args(text: str, open_paren: int) -> list[str]:
    """The raw text of each top-level argument of the call whose ``(`` is at ``open_paren``."""
    args: list[str] = []
    depth = 0
    start = open_paren + 1
    for mo in scan.CPP_TOKEN.finditer(text, open_paren):
        paren = mo.group("paren")
        if paren == "(":
            depth += 1
        elif paren == ")":
            depth -= 1
            if depth == 0:
                args.append(text[start : mo.start()])
                return args
        elif mo.group("comma") is not None and depth == 1:
            args.append(text[start : mo.start()])
            start = mo.end()
    args.append(text[start:])
    return args


def _literals(raw: str) -> list[str]:
    """The string literals of one argument's text, adjacent ones joined."""
    pieces = scan.cpp_arguments("(" + raw + ")", 0)[0]
    return [p for arg in pieces for p in arg]


_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|R"(?P<d>[^(\s]{0,16})\(.*?\)(?P=d)"', re.S)


def _items(params: list[str], arg: str) -> list[Item]:
    """What one argument of a call inside a macro body puts in the message.

    An argument holding ``__VA_ARGS__`` passes the caller's message on (the
    condition inside a nested ``TORCH_CHECK_MSG(cond, "", __VA_ARGS__)`` only
    makes the default text); otherwise its literals and the parameters it
    names (not ``#param``, which is the parameter's spelling), in order.
    """
    variadic = params.index("...") if "..." in params else None
    if variadic is not None and "__VA_ARGS__" in arg:
        return [variadic]
    found: list[tuple[int, Item]] = []
    for mo in _STRING.finditer(arg):
        found.extend((mo.start(), piece) for piece in _literals(mo.group(0)))
    for i, param in enumerate(params):
        if param == "...":
            continue
        for mo in re.finditer(rf"(?<![\w#\"]){re.escape(param)}\b", arg):
            if not _inside_string(arg, mo.start()):
                found.append((mo.start(), i))
    return [item for _pos, item in sorted(found, key=lambda f: f[0])]


def _inside_string(text: str, pos: int) -> bool:
    return any(mo.start() < pos < mo.end() for mo in _STRING.finditer(text))


def _root(name: str, params: list[str], body: str, at: str) -> Family | None:
    mo = _ROOTS.search(body)
    if mo is None:
        return None
    variadic = params.index("...") if "..." in params else None
    fires = not _DEAD_BODY.match(body)
    everything: tuple[Item, ...] = (variadic,) if variadic is not None else ()
    if mo.group("check") or mo.group("assert"):
        kind = CHECK if mo.group("check") else ASSERT
        return Family(name, kind, "Error", None, everything, variadic, at, fires)
    if mo.group("warn"):
        type_param = next(
            (i for i, p in enumerate(params) if re.search(rf"\b{re.escape(p)}\s*\(\s*\)", body)),
            None,
        )
        error = None if type_param is not None else "UserWarning"
        return Family(name, WARN, error, type_param, everything, variadic, at, fires)
    thrown = mo.group("c10") or mo.group("std")
    assert thrown is not None
    type_param = params.index(thrown) if thrown in params else None
    error = None if type_param is not None else (
        thrown if mo.group("c10") else f"std::{thrown}"
    )  # fmt: skip
    template: list[Item] = []
    for arg in _split_args(body, mo.end() - 1):
        if arg.strip().startswith("{"):
            continue  # the c10::SourceLocation {__func__, __FILE__, __LINE__}, not the message
        template.extend(i for i in _items(params, arg) if i != type_param)
    return Family(name, CHECK, error, type_param, tuple(template), variadic, at, fires)


def _derived(
    name: str, params: list[str], body: str, at: str, families: dict[str, Family]
) -> Family | None:
    """A macro that calls a known family: map its parameters through that call."""
    calls = [c for c in macro_calls(body) if c.name in families and c.name != name]
    if not calls:
        return None
    call = calls[0]
    inner = families[call.name]
    args = _split_args(body, call.open_paren)
    fires = inner.fires and not _DEAD_BODY.match(body)
    error, type_param = inner.error, None
    if inner.type_param is not None and inner.type_param < len(args):
        raw = args[inner.type_param].strip()
        if raw in params:
            error, type_param = None, params.index(raw)
        else:
            error = inner.error_of(raw)
    template: list[Item] = []
    for item in inner.template:
        if isinstance(item, str):
            template.append(item)
            continue
        passed = args[item:] if item == inner.variadic else args[item : item + 1]
        for arg in passed:
            template.extend(i for i in _items(params, arg) if i != type_param)
    variadic = params.index("...") if "..." in params else None
    return Family(name, inner.kind, error, type_param, tuple(template), variadic, at, fires)


def resolve(
    defines: dict[str, list[list[Any]]], base: dict[str, Family] | None = None
) -> dict[str, Family]:
    """Families from every file's #defines (first definition a release build uses wins),
    on top of ``base`` (the headers' families, for a .cpp file's own macros)."""
    candidates: list[tuple[str, list[Any]]] = []
    for path in sorted(defines):
        for entry in defines[path]:
            if entry[4] is not False:
                candidates.append((path, entry))
    # Definitions a release build certainly uses go before the "unknown" ones.
    candidates.sort(key=lambda c: c[1][4] is not True)
    families: dict[str, Family] = dict(base or {})
    pending = list(candidates)
    for path, (line, name, params, body, _active) in pending:
        if name in families:
            continue
        root = _root(name, params, body, f"{path}:{line}")
        if root is not None:
            families[name] = root
    changed = True
    while changed:
        changed = False
        for path, (line, name, params, body, _active) in pending:
            if name in families:
                continue
            family = _derived(name, params, body, f"{path}:{line}", families)
            if family is not None:
                families[name] = family
                changed = True
    return families


# --- what Python sees ----------------------------------------------------------

_CATCH = re.compile(r"_CATCH_GENERIC_ERROR\(\s*(\w+)\s*,\s*(\w+)")
_CATCH_OBJECT = re.compile(
    r"catch\s*\(\s*(?:const\s+)?c10::(\w+)\s*&[^)]*\)\s*\{[^}]*?PyErr_Set\w+\(\s*(\w+)"
)


def _python_name(c_name: str) -> str:
    for prefix in ("PyExc_", "THPException_"):
        if c_name.startswith(prefix):
            return c_name[len(prefix) :]
    return c_name


def python_exceptions(header_text: str) -> dict[str, str]:
    """C++ error class -> the Python exception torch raises for it (torch/csrc/Exceptions.h)."""
    table: dict[str, str] = {}
    text = header_text.replace("\\\n", " ")
    for pattern in (_CATCH, _CATCH_OBJECT):
        for mo in pattern.finditer(text):
            if mo.group(2).startswith(("PyExc_", "THPException_")):
                table.setdefault(mo.group(1), _python_name(mo.group(2)))
    return table


# What torch/csrc/Exceptions.h says on 2.13.0, for a tree that lacks the header.
DEFAULT_PYTHON_EXCEPTIONS = {
    "IndexError": "IndexError",
    "ValueError": "ValueError",
    "TypeError": "TypeError",
    "NotImplementedError": "NotImplementedError",
    "BufferError": "BufferError",
    "SyntaxError": "SyntaxError",
    "LinAlgError": "LinAlgError",
    "OutOfMemoryError": "OutOfMemoryError",
    "Error": "RuntimeError",
}


def python_type(error: str | None, kind: str, table: dict[str, str]) -> str:
    """The Python exception (or warning category) a family's C++ class arrives as."""
    if kind == WARN:
        return (error or "UserWarning").split("::")[-1]
    if error is None:
        return table.get("Error", "RuntimeError")
    if error.startswith("std::"):
        return "RuntimeError"  # torch turns any std::exception into RuntimeError
    return table.get(error) or table.get("Error", "RuntimeError")


_PY_CHECK_DEF = re.compile(r"^def (_check\w*)\((?![^)]*error_type)", re.M)
_CHECK_WITH = re.compile(r"_check_with\(\s*(\w+)")


def python_checks(init_text: str) -> dict[str, str]:
    """``torch._check_value`` -> ``ValueError``: the exception each torch._check* raises."""
    table: dict[str, str] = {}
    defs = list(_PY_CHECK_DEF.finditer(init_text))
    for i, mo in enumerate(defs):
        end = defs[i + 1].start() if i + 1 < len(defs) else min(len(init_text), mo.end() + 4000)
        # The function ends at the next line that starts in column 0 (after its signature).
        body = init_text[mo.end() : end]
        colon = body.find("):")
        nxt = re.search(r"^\S", body[colon + 2 :], re.M) if colon >= 0 else None
        body = body[: colon + 2 + nxt.start()] if nxt else body
        raised = _CHECK_WITH.search(body) or re.search(r"raise\s+(\w+)", body)
        if raised and raised.group(1) != "error_type":
            table[f"torch.{mo.group(1)}"] = raised.group(1)
    return table
