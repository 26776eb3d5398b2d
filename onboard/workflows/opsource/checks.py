"""The check index: every site that can raise or warn with a literal message.

C++: every call of a check/error/warning macro family (``TORCH_CHECK``, its
typed ``TORCH_CHECK_*`` kinds, ``TORCH_SYM_CHECK``, ``TORCH_MAYBE_SYM_CHECK``,
internal asserts, ``TORCH_WARN*``, ``C10_THROW_ERROR``, a file's own macros
built on them) in .cpp/.h/.cu files under aten/src, c10, torch/csrc and
torch/headeronly. The families, what each adds to the message and the Python
exception it raises are read from the tree's own headers (``macros.py``).
Python: ``raise X(...)`` (also after ``if ...:`` on one line, and a message
built in a variable first), ``warnings.warn(...)`` and ``torch._check*(...)``
under torch/. Each site keeps its message as literal pieces: runtime values
(``self.sizes()[0]``, an f-string field, a ``%s``) are the gaps between them,
so "(2x3 and 4x5)" matches ``"(", a, "x", b, " and ", ...``.

The index is cached per checkout and commit, one record per folder with the
folder's mtime, so an added file re-reads only its folder.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from onboard.cache import Row
from onboard.report import Reporter
from onboard.workflows.opsource import cache, macros, scan

CPP_ROOTS = ("aten/src", "c10", "torch/csrc", "torch/headeronly")
PY_ROOTS = ("torch",)
INDEX_FORMAT = 3  # the shape (or reading) of one file's record; bump when it changes

# No leading \b or ^: a literal first word keeps the regex engine's fast search.
_PY_RAISE = re.compile(r"raise[ \t]+(?P<exc>[\w.]+)[ \t]*\(")
_PY_CALL = re.compile(r"(?P<call>warnings\.warn|torch\._check\w*)[ \t]*\(")
_WARN_CATEGORY = re.compile(r",\s*(?:category\s*=\s*)?(?:warnings\.)?([A-Z]\w*Warning)\b")
_MIN_PIECE = 3
_FIRST_ARG = re.compile(r"\s*((?:::)?[\w:]+)\s*[,)]")


def _has_literal(args: list[list[str]]) -> bool:
    return any(len(p.strip()) >= _MIN_PIECE for arg in args for p in arg)


def scan_cpp(text: str) -> dict[str, Any]:
    """{"s": [[line, macro, [[pieces of each argument]], type argument]], "d": [#defines]}."""
    record: dict[str, Any] = {}
    defines = macros.scan_defines(text)
    if defines:
        record["d"] = defines
    calls = macros.macro_calls(text)
    if not calls:
        return record
    starts = scan.line_starts_of(text)
    sites: list[list[Any]] = []
    for call in calls:
        macro = call.name
        line = scan.line_of(text, call.start, starts)
        line_start = starts[line - 1]
        head = text[line_start : call.start].lstrip()
        # A macro's own definition is not a site.
        if head.startswith("#") or (
            line >= 2 and text[starts[line - 2] : line_start].rstrip().endswith("\\")
        ):
            continue
        if head.startswith(("//", "*")):
            continue
        args, end = scan.cpp_arguments(text, call.open_paren)
        if not _has_literal(args):
            args = _streamed(text, call.start, call.open_paren, end, args)
        if not _has_literal(args):
            continue
        first = _FIRST_ARG.match(text, call.open_paren + 1)
        sites.append([line, macro, args, first.group(1) if first else None])
    if sites:
        record["s"] = sites
    return record


_STR_CALL = re.compile(r"\b(?P<name>\w+)\.str\(\)")
_STREAM_DECL = r"\b(?:std::)?o?stringstream[ \t]+{name}\b"
_SHIFT = re.compile(r"<<")


def _streamed(
    text: str, start: int, open_paren: int, end: int, args: list[list[str]]
) -> list[list[str]]:
    """``args`` with a ``ss.str()`` argument replaced by the literal pieces written to
    the ``std::ostringstream ss`` above the call (``ss << "expected " << name << ...``):
    the message is built there, not in the macro call."""
    inside = text[open_paren:end]
    mo = _STR_CALL.search(inside)
    if mo is None:
        return args
    name = mo.group("name")
    window_start = max(0, start - 4000)
    window = text[window_start:start]
    decls = list(re.finditer(_STREAM_DECL.format(name=re.escape(name)), window))
    if not decls:
        return args
    pieces: list[str] = []
    for shift in re.finditer(rf"\b{re.escape(name)}[ \t]*<<", window[decls[-1].end() :]):
        at = window_start + decls[-1].end() + shift.start()
        stop = text.find(";", at, start)
        pieces.extend(_shifted_literals(text[at : stop if stop >= 0 else start]))
    # Which argument the stream is: top-level commas before it.
    index = sum(
        1
        for tok in scan.CPP_TOKEN.finditer(inside[: mo.start()])
        if tok.group("comma") is not None and _depth(inside, tok.start()) == 1
    )
    if not pieces or index >= len(args):
        return args
    return [*args[:index], pieces, *args[index + 1 :]]


def _depth(text: str, pos: int) -> int:
    depth = 0
    for tok in scan.CPP_TOKEN.finditer(text[:pos]):
        if tok.group("paren") == "(":
            depth += 1
        elif tok.group("paren") == ")":
            depth -= 1
    return depth


def _shifted_literals(statement: str) -> list[str]:
    """The string literals of ``ss << "a" << x << "b" "c"``, those with only ``<<``
    between them joined (nothing of the program's comes between them)."""
    pieces: list[str] = []
    last = -1
    for tok in scan.CPP_TOKEN.finditer(statement):
        value = tok.group("str")
        if value is None:
            continue
        between = _SHIFT.sub("", statement[last : tok.start()]) if last >= 0 else "x"
        if pieces and not between.strip():
            pieces[-1] += scan.unescape(value)
        else:
            pieces.append(scan.unescape(value))
        last = tok.end()
    return pieces


def _message_variable(text: str, start: int, name: str) -> list[str]:
    """The pieces of ``name = ...`` (and ``name += ...``) in the lines above a raise."""
    window = text[max(0, start - 4000) : start]
    offset = max(0, start - 4000)
    assigns = list(re.finditer(rf"^[ \t]*{re.escape(name)}[ \t]*(\+?)=[ \t]*", window, re.M))
    first = next((i for i in range(len(assigns) - 1, -1, -1) if not assigns[i].group(1)), None)
    if first is None:
        return []
    pieces: list[str] = []
    for mo in assigns[first:]:
        at = offset + mo.end()
        if text[at : at + 1] in "([{":
            found, _end = scan.py_call_strings(text, at)
        else:
            end = text.find("\n", at)
            found, _end = scan.py_call_strings("(" + text[at : end if end >= 0 else None] + ")", 0)
        pieces.extend(found)
    return pieces


def scan_python(text: str) -> list[list[Any]]:
    """[[line, kind, [pieces]]]: kind is the exception raised, ``warnings.warn:Category``
    or the ``torch._check*`` function."""
    if "raise" not in text and "warn" not in text and "_check" not in text:
        return []
    starts = scan.line_starts_of(text)
    sites: list[list[Any]] = []
    found = [*_PY_RAISE.finditer(text), *_PY_CALL.finditer(text)]
    for mo in sorted(found, key=lambda m: m.start()):
        line_start = text.rfind("\n", 0, mo.start()) + 1
        head = text[line_start : mo.start()].strip()
        # A statement of its own, or the body of a one-line `if ...:` / `else:`.
        if head and not (mo.re is _PY_RAISE and head.endswith((":", ";"))):
            continue
        if mo.start() > 0 and (text[mo.start() - 1].isalnum() or text[mo.start() - 1] in "_."):
            continue
        open_paren = mo.end() - 1
        pieces, end = scan.py_call_strings(text, open_paren)
        call = mo.groupdict().get("call")
        exc = mo.groupdict().get("exc")
        if call == "warnings.warn":
            category = _WARN_CATEGORY.search(text, open_paren, end)
            kind = f"warnings.warn:{category.group(1) if category else 'UserWarning'}"
        else:
            kind = exc or call or ""
        if not pieces and exc:
            bare = re.fullmatch(r"\(\s*(\w+)\s*\)", text[open_paren:end])
            if bare:
                pieces = _message_variable(text, mo.start(), bare.group(1))
        if pieces and max(len(p.strip()) for p in pieces) >= _MIN_PIECE:
            sites.append([scan.line_of(text, mo.start(), starts), kind, pieces])
    return sites


def _scan_file(root: Path, rel: str) -> dict[str, Any]:
    text = scan.read(root / rel)
    if rel.endswith(".py"):
        sites = scan_python(text)
        return {"s": sites} if sites else {}
    return scan_cpp(text)


def _cpp_folder(rel: str) -> bool:
    return not rel.startswith("torch/") or rel.startswith(("torch/csrc", "torch/headeronly"))


def _wanted(rel: str) -> bool:
    if rel.endswith(".py"):
        return rel.startswith("torch/")
    return rel.endswith(scan.CPP_SUFFIXES) and _cpp_folder(rel)


def _build(root: Path, reporter: Reporter) -> dict[str, Any]:
    cpp, cpp_folders = scan.walk(root, CPP_ROOTS, scan.CPP_SUFFIXES)
    py, py_folders = scan.walk(root, PY_ROOTS, (".py",))
    files = sorted(set(cpp) | set(py))
    folders = sorted({*cpp_folders, *py_folders})
    out: dict[str, dict[str, Any]] = {}
    with reporter.task(
        "Indexing TORCH_CHECK and raise sites (once per commit)", total=len(files)
    ) as task:
        for i, rel in enumerate(files):
            record = _scan_file(root, rel)
            if record:
                out[rel] = record
            if i % 500 == 0:
                task.update(completed=i, detail=rel)
        task.update(completed=len(files))
    return {
        "folders": {
            str(f.relative_to(root)) if f.is_relative_to(root) else str(f): _mtime(f)
            for f in folders
        },
        "files": out,
        "file_count": len(files),
    }


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1


def _refresh(root: Path, data: dict[str, Any]) -> bool:
    """Re-read the folders whose mtime moved; True when anything changed."""
    changed = [rel for rel, stamp in data["folders"].items() if _mtime(root / rel) != stamp]
    if not changed:
        return False
    files: dict[str, Any] = data["files"]
    folders: dict[str, int] = data["folders"]
    for rel in changed:
        folder = root / rel
        prefix = "" if rel == "." else rel + "/"
        for name in [f for f in files if f.startswith(prefix) and "/" not in f[len(prefix) :]]:
            del files[name]
        try:
            stamp = _mtime(folder)
            entries = list(os.scandir(folder))
        except OSError:  # gone (or a file now), also when it went after its mtime was read
            for sub in [f for f in folders if f.startswith(prefix)]:
                folders.pop(sub, None)
            for name in [f for f in files if f.startswith(prefix)]:
                del files[name]
            folders[rel] = -1
            continue
        folders[rel] = stamp
        for entry in entries:
            child = f"{prefix}{entry.name}"
            if entry.is_file() and _wanted(child):
                record = _scan_file(root, child)
                if record:
                    files[child] = record
            elif entry.is_dir() and child not in folders and entry.name not in scan.SKIP_DIRS:
                suffixes = (".py",) if not _cpp_folder(child) else scan.CPP_SUFFIXES
                new_files, new_folders = scan.walk(root, (child,), suffixes)
                for new_folder in new_folders:
                    folders[str(new_folder.relative_to(root))] = _mtime(new_folder)
                for new_file in new_files:
                    record = _scan_file(root, new_file)
                    if record:
                        files[new_file] = record
    return True


# --- the sites, with their families resolved --------------------------------------


class Site(NamedTuple):
    """One check site with its family resolved (a tuple: ~16k are made per run)."""

    path: str
    line: int
    macro: str  # TORCH_CHECK_VALUE, raise ValueError -> "raise ValueError", torch._check_index
    pieces: tuple[str, ...]
    raises: str  # the Python exception or warning category it arrives as
    kind: str  # check / assert / warn / raise
    needle: str  # its longest piece, whitespace normalised: the quick test against a message


def _site(path: str, line: int, macro: str, pieces: list[str], raises: str, kind: str) -> Site:
    needle = " ".join(max(pieces, key=len).split())
    return Site(path, line, macro, tuple(pieces), raises, kind, needle)


@dataclass
class CheckIndex:
    root: Path
    files: dict[str, dict[str, Any]]
    warm: bool
    families: dict[str, macros.Family] = field(default_factory=dict)
    python_exceptions: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the index could not read from the tree
    _sites: list[Site] | None = None

    def sites(self) -> list[Site]:
        if self._sites is None:
            self._sites = self._resolve()
        return self._sites

    def _resolve(self) -> list[Site]:
        headers = {
            rel: rec["d"]
            for rel, rec in self.files.items()
            if "d" in rec and rel.endswith((".h", ".hpp", ".cuh"))
        }
        self.families = macros.resolve(headers)
        if macros.EXCEPTION_HEADER not in headers or "TORCH_CHECK" not in self.families:
            self.notes.append(
                f"{macros.EXCEPTION_HEADER} is not in this tree, so only TORCH_CHECK, "
                "TORCH_CHECK_WITH, TORCH_INTERNAL_ASSERT, AT_ERROR, C10_THROW_ERROR and "
                "TORCH_WARN* were recognised (as torch 2.13 defines them)"
            )
            self.families = {**_FALLBACK, **self.families}
        header = scan.read(self.root / macros.PYTHON_EXCEPTIONS_HEADER)
        self.python_exceptions = macros.python_exceptions(header) or dict(
            macros.DEFAULT_PYTHON_EXCEPTIONS
        )
        py_checks = macros.python_checks(scan.read(self.root / macros.TORCH_INIT))
        sites: list[Site] = []
        for rel, rec in self.files.items():
            if rel.endswith(".py"):
                sites.extend(self._python_site(rel, s, py_checks) for s in rec.get("s", ()))
                continue
            families = self.families
            if "d" in rec and not rel.endswith((".h", ".hpp", ".cuh")):
                families = macros.resolve({rel: rec["d"]}, base=self.families)
            for line, macro, args, type_arg in rec.get("s", ()):
                family = families.get(macro)
                if family is None or not family.fires:
                    continue
                pieces = [p for p in family.message_pieces(args) if p.strip()]
                if not pieces or max(len(p.strip()) for p in pieces) < _MIN_PIECE:
                    continue
                raises = macros.python_type(
                    family.error_of(type_arg), family.kind, self.python_exceptions
                )
                sites.append(_site(rel, line, macro, pieces, raises, family.kind))
        return sites

    @staticmethod
    def _python_site(rel: str, site: list[Any], py_checks: dict[str, str]) -> Site:
        line, kind, pieces = site
        if kind.startswith("warnings.warn"):
            return _site(rel, line, "warnings.warn", pieces, kind.split(":")[1], "warn")
        if kind.startswith("torch._check"):
            return _site(rel, line, kind, pieces, py_checks.get(kind, "RuntimeError"), "check")
        return _site(rel, line, f"raise {kind}", pieces, kind.rsplit(".", 1)[-1], "raise")


_FALLBACK = {
    name: macros.Family(name, kind, error, type_param, (msg,), msg, None)
    for name, kind, error, type_param, msg in (
        ("TORCH_CHECK", macros.CHECK, "Error", None, 1),
        ("TORCH_CHECK_WITH", macros.CHECK, None, 0, 2),
        ("TORCH_INTERNAL_ASSERT", macros.ASSERT, "Error", None, 1),
        ("AT_ERROR", macros.CHECK, "Error", None, 0),
        ("TORCH_WARN", macros.WARN, "UserWarning", None, 0),
        ("TORCH_WARN_ONCE", macros.WARN, "UserWarning", None, 0),
    )
}
_FALLBACK["C10_THROW_ERROR"] = macros.Family("C10_THROW_ERROR", macros.CHECK, None, 0, (1,), None)


# folder -> mtime; file -> {"s": sites, "d": #defines} (scan_cpp, scan_python).
_CPP_SITE = Row(int, str, [[str]], (str, None))
_PY_SITE = Row(int, str, [str])
_DEFINE = Row(int, str, [str], str, (bool, None))
SHAPE = {
    "folders": {str: int},
    "files": {str: {"s?": [(_CPP_SITE, _PY_SITE)], "d?": [_DEFINE]}},
}


def load(root: Path, tree_id: str, reporter: Reporter, *, refresh: bool = False) -> CheckIndex:
    name = "checks-" + cache.key(root.resolve(), tree_id, INDEX_FORMAT) + ".json"
    data = None if refresh else cache.load(name, SHAPE)
    if data is not None:
        if _refresh(root, data):
            cache.store(name, data)
            return CheckIndex(root, data["files"], warm=False)
        return CheckIndex(root, data["files"], warm=True)
    data = _build(root, reporter)
    cache.store(name, data)
    return CheckIndex(root, data["files"], warm=False)


# --- matching ---------------------------------------------------------------

_WS = re.compile(r"\s+")
_BUILTIN_EXCEPTIONS = {
    name
    for name, obj in vars(builtins).items()
    if isinstance(obj, type) and issubclass(obj, BaseException)
}


def normalize(text: str) -> str:
    return _WS.sub(" ", text).strip()


def short_type(exc: str | None) -> str | None:
    """``torch._C._LinAlgError`` -> ``LinAlgError``: the class name without its module."""
    if not exc:
        return None
    return exc.rsplit(".", 1)[-1].lstrip("_") or None


def as_printed(exc_type: str | None, message: str) -> str:
    """The message as the site wrote it: KeyError prints ``repr()`` of its argument."""
    text = message.strip()
    quoted = len(text) >= 2 and text[0] == text[-1] and text[0] in "'\""
    if quoted and (short_type(exc_type) in ("KeyError", None)):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return message
        if isinstance(value, str):
            return value
    return message


# Where a site sits says who can reach it (read from the path, PyTorch's layout).
EAGER = "eager"
COMPILE_ONLY = "compile-only"  # torch.compile / export machinery
CPP_FRONTEND = "cpp-frontend"  # the libtorch C++ API: never called from Python
TESTING = "testing"
# Python versions of ops that an eager program on a real device never runs: they run
# when tracing (torch.compile, export, FakeTensor) or on the meta device. Many repeat
# the eager C++ check's words, so the words alone do not tell them apart.
TRACING = "tracing"
# torchgen's templates: their text is copied into the generated files (build/aten/...),
# and one of those, at a line of its own, is what raised.
TEMPLATE = "template"
_REACH = (
    (re.compile(r"^torch/csrc/(?:api|jit/mobile)/"), CPP_FRONTEND),
    (re.compile(r"^torch/(?:_inductor|_dynamo|_export|export|_functorch/_aot_autograd"
                r"|_higher_order_ops)/"),
     COMPILE_ONLY),
    (re.compile(r"^torch/(?:_decomp/|_refs/|_prims/|_meta_registrations\.py"
                r"|_subclasses/(?:fake_|meta_utils|functional_tensor)|_library/fake_"
                r"|utils/_sympy/|fx/experimental/symbolic_shapes\.py)"),
     TRACING),
    (re.compile(r"^torch/testing/"), TESTING),
    (re.compile(r"^aten/src/ATen/templates/"), TEMPLATE),
)  # fmt: skip
_REACH_PENALTY = {
    EAGER: 0.0,
    TEMPLATE: 1.0,
    COMPILE_ONLY: 3.0,
    TRACING: 3.0,
    TESTING: 5.0,
    CPP_FRONTEND: 50.0,
}
REACH_WHY = {
    COMPILE_ONLY: "runs only under torch.compile / export",
    TRACING: "a decomposition, ref or fake/meta implementation: runs only when tracing "
    "(torch.compile, export, FakeTensor) or on the meta device",
    TESTING: "test helper code",
    TEMPLATE: "a torchgen template: its generated copy under build/ raised it",
    CPP_FRONTEND: "the C++ frontend (libtorch API): not reached from Python",
}


def reach_of(path: str) -> str:
    return next((kind for rx, kind in _REACH if rx.match(path)), EAGER)


@dataclass(frozen=True)
class Match:
    path: str
    line: int
    macro: str
    pieces: tuple[str, ...]
    matched: int  # characters of the message the literal pieces account for
    missed: int  # characters of literal pieces not found in the message
    coverage: float  # matched / message length
    raises: str = "RuntimeError"  # what the site raises in Python
    kind: str = macros.CHECK
    type_fit: int = 0  # +1 the message's exception type, -1 another one, 0 not known
    reach: str = EAGER
    in_frames: bool = False  # a function of the pasted traceback holds it
    reasons: tuple[str, ...] = ()

    @property
    def score(self) -> float:
        """Literal text explained, less text the site has that the message lacks, then
        what the message says of itself: its exception type, its traceback, who can raise it."""
        base = self.matched - 2 * self.missed + self.coverage
        return round(base + 20.0 * self.in_frames - _REACH_PENALTY[self.reach], 3)

    @property
    def rank_key(self) -> tuple[bool, float]:
        return (self.type_fit >= 0, self.score)


def match_pieces(message: str, pieces: list[str] | tuple[str, ...]) -> tuple[int, int]:
    """(matched, missed): the pieces found in order in ``message``."""
    pos = 0
    matched = missed = 0
    for raw in pieces:
        piece = _WS.sub(" ", raw)
        if not piece.strip():
            continue
        i = message.find(piece, pos)
        if i < 0 and piece != piece.strip():
            piece = piece.strip()
            i = message.find(piece, pos)
        if i < 0:
            missed += len(piece.strip())
            continue
        matched += len(piece)
        pos = i + len(piece)
    return matched, missed


def _type_fit(site: Site, exc_type: str | None) -> int:
    wanted = short_type(exc_type)
    if wanted is None:
        return 0
    if wanted == short_type(site.raises):
        return 1
    if site.kind == macros.WARN and wanted.endswith("Warning"):
        # A warning category can be filtered into an error or renamed by a subclass.
        return 0 if wanted not in _BUILTIN_EXCEPTIONS else -1
    return -1


def search(
    index: CheckIndex,
    message: str,
    *,
    exc_type: str | None = None,
    functions: frozenset[str] = frozenset(),
    limit: int = 10,
) -> list[Match]:
    """Sites whose literal pieces explain ``message``, best first.

    ``exc_type`` (``ValueError``) and ``functions`` (the function names of a
    pasted traceback) rank the sites further; ``enclosing`` is asked only for
    the sites that already match.
    """
    msg = normalize(as_printed(exc_type, message))
    if len(msg) < 4:
        return []
    found: list[Match] = []
    for site in index.sites():
        if site.needle not in msg:
            continue
        matched, missed = match_pieces(msg, site.pieces)
        coverage = matched / len(msg)
        if matched < min(8, len(msg)) or missed > matched or coverage < 0.25:
            continue
        fit = _type_fit(site, exc_type)
        reach = reach_of(site.path)
        reasons = []
        if fit < 0:
            reasons.append(f"raises {site.raises}, not {short_type(exc_type)}")
        if reach != EAGER:
            reasons.append(REACH_WHY[reach])
        found.append(
            Match(
                site.path,
                site.line,
                site.macro,
                site.pieces,
                matched,
                missed,
                coverage,
                site.raises,
                site.kind,
                fit,
                reach,
                False,
                tuple(reasons),
            )
        )
    found.sort(key=lambda m: (tuple(-x for x in m.rank_key), m.path, m.line))
    return found[:limit] if limit else found


def tied(matches: list[Match]) -> list[Match]:
    """The matches that rank exactly as the best one does."""
    if not matches:
        return []
    best = matches[0].rank_key
    return [m for m in matches if m.rank_key == best]
