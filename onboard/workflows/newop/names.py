"""Which names `onboard new-op` accepts, and where an existing op is defined.

The rules are torchgen's: an operator name is a C++ identifier
(``torchgen/model.py`` BaseOperatorName.parse), a trailing ``_`` means the
in-place variant and ``__x__`` a dunder method, so neither may start a new op;
``native_functions.yaml`` names are lower snake case. The name becomes a C++
function (``at::NAME``), a Python function (``torch.NAME``) and a method, so
keywords of either language are refused.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path

from onboard.errors import BadInput

NATIVE_YAML = "aten/src/ATen/native/native_functions.yaml"
NATIVE_DIR = "aten/src/ATen/native"

_SNAKE_RE = re.compile(r"^_?[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# `- func: name.overload(` or `- func: name(` at the start of a yaml line.
_FUNC_RE = re.compile(r"^- func:\s*([A-Za-z0-9_]+)(?:\.([A-Za-z0-9_]+))?\s*\(", re.M)

# C++20 keywords and alternative tokens (a name here cannot be `at::NAME`).
CPP_KEYWORDS = frozenset(
    [
        "alignas",
        "alignof",
        "and",
        "and_eq",
        "asm",
        "auto",
        "bitand",
        "bitor",
        "bool",
        "break",
        "case",
        "catch",
        "char",
        "char8_t",
        "char16_t",
        "char32_t",
        "class",
        "compl",
        "concept",
        "const",
        "consteval",
        "constexpr",
        "constinit",
        "const_cast",
        "continue",
        "co_await",
        "co_return",
        "co_yield",
        "decltype",
        "default",
        "delete",
        "do",
        "double",
        "dynamic_cast",
        "else",
        "enum",
        "explicit",
        "export",
        "extern",
        "false",
        "float",
        "for",
        "friend",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "mutable",
        "namespace",
        "new",
        "noexcept",
        "not",
        "not_eq",
        "nullptr",
        "operator",
        "or",
        "or_eq",
        "private",
        "protected",
        "public",
        "register",
        "reinterpret_cast",
        "requires",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "static_assert",
        "static_cast",
        "struct",
        "switch",
        "template",
        "this",
        "thread_local",
        "throw",
        "true",
        "try",
        "typedef",
        "typeid",
        "typename",
        "union",
        "unsigned",
        "using",
        "virtual",
        "void",
        "volatile",
        "wchar_t",
        "while",
        "xor",
        "xor_eq",
    ]
)
# Macros and types every ATen translation unit sees; an op named like them breaks the build.
_RESERVED = frozenset({"assert", "errno", "signbit", "isnan", "isinf", "main", "std", "at", "c10"})


@dataclass(frozen=True)
class Definition:
    """Where an existing op is defined in the checkout."""

    name: str
    yaml_lines: tuple[int, ...]  # 1-based lines of its `- func:` entries
    overloads: tuple[str, ...]  # "trunc", "trunc_", "trunc.out"
    kernel_files: tuple[str, ...] = field(default=())  # repo paths that define its kernels

    def where(self) -> str:
        first = self.yaml_lines[0]
        text = f"{NATIVE_YAML}:{first} ({', '.join(self.overloads)})"
        if self.kernel_files:
            text += "; kernels in " + ", ".join(self.kernel_files)
        return text


def check_shape(name: str, checkout: Path | None = None) -> None:
    """Refuse a name torchgen or the C++/Python APIs cannot take (BadInput, exit 2);
    ``checkout``: the one new-op would write in, whose ops the advice on a name ending
    in `_` takes into account."""
    hint = "Pick a lowercase snake_case name such as `my_frac` and run `onboard new-op NAME` again."
    if not name:
        raise BadInput("The op name is empty.", next_step=hint)
    check_length(name)
    if not _IDENT_RE.match(name):
        raise BadInput(
            f"`{name}` is not a valid operator name: torchgen takes C++ identifiers only "
            "(letters, digits and `_`, not starting with a digit), so `-`, `.` and spaces "
            "are refused (`.` starts an overload name in native_functions.yaml).",
            next_step=hint,
        )
    if name.startswith("__"):
        raise BadInput(
            f"`{name}` starts with `__`, which torchgen reserves for dunder methods "
            "(`__and__`, `__iand__`).",
            next_step=hint,
        )
    if name.endswith("_"):
        raise BadInput(
            f"`{name}` ends in `_`, which torchgen reads as the in-place variant of "
            f"`{name.rstrip('_')}`; new-op writes the in-place variant itself.",
            next_step=_in_place_next_step(name.rstrip("_"), checkout),
        )
    if not _SNAKE_RE.match(name):
        raise BadInput(
            f"`{name}` is not lower snake case: native_functions.yaml names are lowercase "
            "words joined by single `_` (e.g. `my_frac`, `special_my_erf`).",
            next_step=f"Try `onboard new-op {_snake(name)}`.",
        )
    if keyword.iskeyword(name) or keyword.issoftkeyword(name) or name in CPP_KEYWORDS:
        lang = "C++" if name in CPP_KEYWORDS else "Python"
        if name in CPP_KEYWORDS and (keyword.iskeyword(name) or keyword.issoftkeyword(name)):
            lang = "C++ and Python"
        raise BadInput(
            f"`{name}` is a {lang} keyword, and the op becomes both `at::{name}` in C++ and "
            f"`torch.{name}` in Python.",
            next_step=f"Pick another name, e.g. `onboard new-op my_{name}`.",
        )
    if name in _RESERVED:
        raise BadInput(
            f"`{name}` collides with a name every ATen file sees (a C library macro or a "
            "namespace).",
            next_step=f"Pick another name, e.g. `onboard new-op my_{name}`.",
        )


def _in_place_next_step(base: str, checkout: Path | None) -> str:
    """A command new-op accepts for a name that ended in `_`: the base name when it is
    free or can be practised on, else a free name (aten::relu exists, and practice
    refuses it: it is not a structured pointwise op)."""
    if checkout is None or not (checkout / NATIVE_YAML).is_file():
        return f"Pass the base name: `onboard new-op {base}`."
    text = (checkout / NATIVE_YAML).read_text("utf-8")
    ops = existing_ops(text)
    if base not in ops:
        return f"Pass the base name: `onboard new-op {base}`."
    from onboard.workflows.newop import family

    try:
        kind, _blocks = family.pattern_of(text, base, practice=True)
    except BadInput as exc:
        refused = exc.message  # "aten::relu exists, but practice works on ... only: ..."
    else:
        if family.stub_declaration(checkout, base, family.default(kind)) is not None:
            return f"aten::{base} exists: practise writing its kernel with `onboard new-op {base}`."
        refused = (
            f"aten::{base} exists, but its kernel is not a DispatchStub kernel practice can "
            "take out."
        )
    fresh = practice_name(base, set(ops))
    return (
        f"{refused} For a new op, pick a name of its own: `onboard new-op {fresh}`; to "
        f"practise, pick an op practice takes, e.g. {family.PRACTICE_EXAMPLES}."
    )


# PyTorch's longest op name has 57 characters, and its build names files after
# an op with up to 51 more (`NAME_compositeexplicitautogradnonfunctional_dispatch.h`);
# file systems stop at 255 bytes a name (eCryptfs home folders at 143).
MAX_NAME_LENGTH = 80


def check_length(name: str) -> None:
    """Refuse a name too long for the file and branch names made from it (exit 2)."""
    if len(name) <= MAX_NAME_LENGTH:
        return
    raise BadInput(
        f"The op name `{name[:20]}...` is {len(name)} characters long, and at most "
        f"{MAX_NAME_LENGTH} fit: new-op and PyTorch's build make file and branch names from it "
        "with up to 51 more characters (`NAME_compositeexplicitautogradnonfunctional_dispatch.h`), "
        "and file systems stop at 255 bytes a name (PyTorch's longest op name has 57).",
        next_step="Pick a shorter snake_case name such as `my_frac` and run "
        "`onboard new-op NAME` again.",
    )


def _snake(name: str) -> str:
    text = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    text = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()
    return re.sub(r"_+", "_", text) or "my_op"


def existing_ops(yaml_text: str) -> dict[str, list[tuple[int, str]]]:
    """base name (without a trailing `_`) -> [(line, "name.overload"), ...] from the yaml text."""
    found: dict[str, list[tuple[int, str]]] = {}
    line_starts = _line_index(yaml_text)
    for mo in _FUNC_RE.finditer(yaml_text):
        name, overload = mo.group(1), mo.group(2)
        base = name[:-1] if name.endswith("_") and not name.endswith("__") else name
        line = _line_of(line_starts, mo.start())
        found.setdefault(base, []).append((line, f"{name}.{overload}" if overload else name))
    return found


def _line_index(text: str) -> list[int]:
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def _line_of(starts: list[int], offset: int) -> int:
    import bisect

    return bisect.bisect_right(starts, offset)


def find_definition(checkout: Path, name: str, yaml_text: str | None = None) -> Definition | None:
    """The existing op `name` (or its in-place/out overloads) in the checkout, if any."""
    text = yaml_text if yaml_text is not None else (checkout / NATIVE_YAML).read_text("utf-8")
    entries = existing_ops(text).get(name)
    if not entries:
        return None
    return Definition(
        name=name,
        yaml_lines=tuple(line for line, _ in entries),
        overloads=tuple(ov for _, ov in entries),
        kernel_files=tuple(kernel_files(checkout, name)),
    )


def kernel_files(checkout: Path, name: str, limit: int = 8) -> list[str]:
    """C++/CUDA files under aten/src/ATen/native that define `name`'s kernels or stub.

    Looks for `TORCH_META_FUNC(name)`, `TORCH_IMPL_FUNC(name_out)`, `name_stub` and
    `name_kernel`: the names PyTorch's structured-kernel pattern gives them.
    A reference tree has no such files; the list is then empty.
    """
    native = checkout / NATIVE_DIR
    if not native.is_dir():
        return []
    needles = (
        f"TORCH_META_FUNC({name})",
        f"TORCH_IMPL_FUNC({name}_out)",
        f"{name}_stub",
        f"{name}_kernel",
    )
    hits: list[str] = []
    for path in sorted(native.rglob("*")):
        if path.suffix not in (".cpp", ".cu", ".mm") or not path.is_file():
            continue
        try:
            text = path.read_text("utf-8", errors="replace")
        except OSError:
            continue
        for needle in needles:
            pos = text.find(needle)
            # `abs_stub` must not match `fabs_stub`: require a non-identifier char before it.
            while pos != -1 and pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] == "_"):
                pos = text.find(needle, pos + 1)
            if pos != -1:
                line = text.count("\n", 0, pos) + 1
                hits.append(f"{path.relative_to(checkout).as_posix()}:{line}")
                break
        if len(hits) >= limit:
            break
    return hits


# Python-level names: torch.NAME and Tensor.NAME that are not aten ops (torch.unique,
# Tensor.stft's wrapper, ...) would shadow or be shadowed by the generated bindings.
_PYTHON_DEFS = (("torch/functional.py", "def {name}("), ("torch/_tensor.py", "    def {name}("))


def python_definition(checkout: Path, name: str) -> str | None:
    """ "path:line" where torch/functional.py or Tensor (torch/_tensor.py) defines ``name``."""
    for rel, pattern in _PYTHON_DEFS:
        path = checkout / rel
        if not path.is_file():
            continue
        needle = pattern.format(name=name)
        for i, line in enumerate(path.read_text("utf-8", errors="replace").splitlines(), 1):
            if line.startswith(needle):
                return f"{rel}:{i}"
    return None


def practice_name(name: str, taken: set[str]) -> str:
    """A free name for practising on an existing op: my_NAME, my_NAME2, ..."""
    base = name.lstrip("_")
    candidate = f"my_{base}"
    n = 2
    while candidate in taken:
        candidate = f"my_{base}{n}"
        n += 1
    return candidate
