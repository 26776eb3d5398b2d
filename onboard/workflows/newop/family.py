"""The op family a scaffold follows: unary or binary, how integers are treated, which dtypes.

Every scaffold is a structured TensorIterator op (``structured_inherits:
TensorIteratorBase``), the pattern of trunc and hypot in current PyTorch
(docs/pytorch-facts.md: "Anatomy of a structured unary op"). What differs between
pointwise ops is the meta function's TensorIterator builder, what happens to
integer inputs and the floating dtypes the kernel dispatches over; ``--like OP``
reads those from the checkout's yaml and headers and from the installed torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from onboard import proc
from onboard.errors import BadInput, OnboardError

UNARY_HEADER = "aten/src/ATen/native/UnaryOps.h"
BINARY_HEADER = "aten/src/ATen/native/BinaryOps.h"

FLOAT_DTYPES = ("float32", "float64", "bfloat16", "float16")
INT_DTYPE = "int64"

# How integer inputs are handled (the last word of each TensorIterator builder):
#   kernel      the kernel has an integer path (same dtype out), like neg or maximum
#   no_op       integers are copied by the impl, like trunc/floor (array-API rule)
#   promote     integers become the default float before the kernel, like sin/atan2
#               (build_borrowing_unary_float_op / build_borrowing_binary_float_op)
#   unsupported the kernel only dispatches floating types, like frac/hypot
INT_PATHS = ("kernel", "no_op", "promote", "unsupported")


@dataclass(frozen=True)
class Family:
    kind: str  # "unary" | "binary"
    header: str  # repo path of the header that declares the stub
    stub_type: str  # "unary_fn" | "structured_binary_fn"
    sibling: str  # the op next to which the new entries are placed
    int_path: str  # one of INT_PATHS
    float_dtypes: tuple[str, ...] = FLOAT_DTYPES
    variants: str = "function, method"
    like: str | None = None

    @property
    def meta_builder(self) -> str:
        arity = "unary" if self.kind == "unary" else "binary"
        suffix = "_float_op" if self.int_path == "promote" else "_op"
        return f"build_borrowing_{arity}{suffix}"

    @property
    def supported_dtypes(self) -> tuple[str, ...]:
        ints = () if self.int_path == "unsupported" else (INT_DTYPE,)
        return (*self.float_dtypes, *ints)

    def json_extra(self) -> dict[str, object]:
        return {"meta_builder": self.meta_builder, "supported_dtypes": self.supported_dtypes}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Family:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["float_dtypes"] = tuple(known.get("float_dtypes") or FLOAT_DTYPES)
        return cls(**known)


def default(kind: str) -> Family:
    if kind == "unary":
        return Family("unary", UNARY_HEADER, "unary_fn", "trunc", "kernel")
    if kind == "binary":
        return Family("binary", BINARY_HEADER, "structured_binary_fn", "hypot", "kernel")
    # `--kind` is a click.Choice of these two (onboard/commands/new_op.py): anything else
    # here is onboard's own mistake.
    raise ValueError(f"no op family of kind {kind!r}")


# `- func: name(Tensor self) -> Tensor` (functional) and its `.out` entry's keys.
def _entry_blocks(yaml_text: str, name: str) -> dict[str, str]:
    blocks: dict[str, str] = {}
    pattern = re.compile(rf"^- func:\s*({re.escape(name)}(?:_|\.[A-Za-z0-9_]+)?)\s*\(", re.M)
    for mo in pattern.finditer(yaml_text):
        end = yaml_text.find("\n- func:", mo.end())
        blocks[mo.group(1)] = yaml_text[mo.start() : end if end != -1 else len(yaml_text)]
    return blocks


# Ops to practise on, named when an op cannot be used.
PRACTICE_EXAMPLES = "`onboard new-op trunc`, `onboard new-op floor`, `onboard new-op sin` or "
PRACTICE_EXAMPLES += "`onboard new-op hypot`"


def _refusal(op: str, why: str, like_next: str, practice: bool) -> BadInput:
    """One refusal, worded for `--like OP` or for practice on OP."""
    if practice:
        return BadInput(
            f"aten::{op} exists, but practice works on structured pointwise ops only: {why}.",
            next_step=f"Practise on one of those, e.g. {PRACTICE_EXAMPLES}; `onboard where "
            f"{op}` shows how {op} is built.",
        )
    return BadInput(f"--like {op}: {why}.", next_step=like_next)


def pattern_of(
    yaml_text: str, op: str, kind: str | None = None, *, practice: bool = False
) -> tuple[str, dict[str, str]]:
    """(unary|binary, the op's yaml blocks) when ``op`` can be copied with ``--like``
    (or practised on).

    Raises BadInput saying why not (no entry, another schema, not a structured
    TensorIterator op). Read from the yaml alone: no torch is asked.
    """
    blocks = _entry_blocks(yaml_text, op)
    functional = blocks.get(op)
    if functional is None:
        raise _refusal(
            op,
            f"there is no `{op}` entry in native_functions.yaml",
            "Pass an existing structured pointwise op, e.g. `--like trunc` "
            "(unary) or `--like hypot` (binary); `onboard where OP` shows what an op is.",
            practice,
        )
    op_kind = kind_of(yaml_text, op)
    if op_kind is None:
        head = functional.splitlines()[0]
        raise _refusal(
            op,
            f"its schema `{head[len('- func: ') :].strip()}` is neither "
            "`(Tensor self) -> Tensor` nor `(Tensor self, Tensor other) -> Tensor`, the two "
            "shapes new-op scaffolds",
            "Use a plain pointwise op such as `--like trunc` or `--like hypot`.",
            practice,
        )
    if kind is not None and kind != op_kind:
        subject, follows = ("aten::" + op, "the op") if practice else ("--like " + op, "--like")
        raise BadInput(
            f"{subject} is a {op_kind} op but --kind {kind} was given.",
            next_step=f"Drop --kind (it follows {follows}) or pass --kind {op_kind}.",
        )
    out = next((b for k, b in blocks.items() if k.startswith(f"{op}.out")), None)
    if out is None or "structured: True" not in out or "TensorIteratorBase" not in out:
        raise _refusal(
            op,
            f"`{op}` is not a structured TensorIterator op (its `.out` entry lacks "
            "`structured: True` / `structured_inherits: TensorIteratorBase`), so its kernels "
            "follow a different pattern than the one new-op writes",
            "Pick a structured pointwise op, e.g. `--like trunc`, `--like sin` or `--like hypot`.",
            practice,
        )
    return op_kind, blocks


def like(
    checkout: Path, op: str, kind: str | None, python: str, yaml_text: str, cwd: Path
) -> Family:
    """The family of the existing op ``op``, read from the checkout and the installed torch."""
    return described(checkout, op, kind, python, yaml_text, cwd)[0]


def described(
    checkout: Path,
    op: str,
    kind: str | None,
    python: str,
    yaml_text: str,
    cwd: Path,
    *,
    practice: bool = False,
    edges: bool = False,
) -> tuple[Family, dict[str, Any]]:
    """(the family of ``op``, what the installed torch said about it: ``probe``).

    The yaml and header are checked first, so a refusal costs no child process.
    ``practice`` words the refusals for `onboard new-op OP` on an existing op;
    ``edges`` also asks for its results on edge values.
    """
    op_kind, blocks = pattern_of(yaml_text, op, kind, practice=practice)
    functional = blocks[op]
    base = default(op_kind)
    declared = stub_declaration(checkout, op, base)
    if declared is None and practice:
        raise _refusal(
            op,
            f"no `DECLARE_DISPATCH(..., {op}_stub)` in {base.header}, so its kernel is not the "
            "DispatchStub kernel practice asks you to write",
            "",
            practice,
        )
    header, stub_type = declared or (base.header, base.stub_type)
    variants = "function, method"
    mo = re.search(r"^\s+variants:\s*(.+)$", functional, re.M)
    if mo and "method" not in mo.group(1):
        variants = "function"
    found = probe(python, op, op_kind, cwd, edges=edges)
    if found.get("missing"):
        version = found.get("version", "")
        if practice:
            raise BadInput(
                f"aten::{op} is in this checkout's native_functions.yaml but not in the "
                f"installed torch {version}, so nothing can judge a practice kernel of it.",
                next_step=f"Practise on an op the installed torch has, e.g. {PRACTICE_EXAMPLES}.",
            )
        raise BadInput(
            f"--like {op}: the installed torch {version} has no aten::{op} to copy.",
            next_step="Pick an op the installed torch has, e.g. `--like trunc`.",
        )
    floats = tuple(d for d in FLOAT_DTYPES if found["dtypes"].get(d, {}).get("ok"))
    if not floats:
        raise _refusal(
            op,
            f"the installed torch runs `{op}` on no floating dtype on CPU, so there is no "
            "family to copy",
            "Pick an op that works on float tensors, e.g. `--like trunc`.",
            practice,
        )
    ints = found["dtypes"].get(INT_DTYPE, {})
    if not ints.get("ok"):
        int_path = "unsupported"
    elif ints.get("result_dtype") != INT_DTYPE:
        int_path = "promote"
    elif ints.get("identity") and op_kind == "unary":
        int_path = "no_op"
    else:
        int_path = "kernel"
    fam = replace(
        base,
        header=header,
        stub_type=stub_type,
        sibling=op,
        int_path=int_path,
        float_dtypes=floats,
        variants=variants,
        like=op,
    )
    return fam, found


def kind_of(yaml_text: str, op: str) -> str | None:
    """unary / binary from the functional schema, None for any other shape."""
    functional = _entry_blocks(yaml_text, op).get(op)
    head = functional.splitlines()[0] if functional else ""
    if re.search(rf"- func:\s*{re.escape(op)}\(Tensor self\) -> Tensor\s*$", head):
        return "unary"
    if re.search(rf"- func:\s*{re.escape(op)}\(Tensor self, Tensor other\) -> Tensor\s*$", head):
        return "binary"
    return None


def stub_declaration(checkout: Path, op: str, base: Family) -> tuple[str, str] | None:
    """(header, stub type) of `DECLARE_DISPATCH(type, op_stub)` in the checkout, if any."""
    for header in (base.header, UNARY_HEADER, BINARY_HEADER):
        path = checkout / header
        if not path.is_file():
            continue
        mo = re.search(
            rf"^DECLARE_DISPATCH\(\s*([A-Za-z0-9_:]+)\s*,\s*{re.escape(op)}_stub\s*\)",
            path.read_text("utf-8", errors="replace"),
            re.M,
        )
        if mo and mo.group(1) in ("unary_fn", "structured_binary_fn"):
            return header, mo.group(1)
    return None


def probe(python: str, op: str, kind: str, cwd: Path, *, edges: bool = False) -> dict[str, Any]:
    """What the installed torch does with ``op`` on each dtype (``children/_like_child.py``);
    ``edges``: also its results on float edge values (practice's test file)."""
    try:
        data: dict[str, Any] = proc.ask_child(
            python,
            "_like_child.py",
            op,
            kind,
            *(["edges"] if edges else []),
            # A script run by path has its own folder (inside onboard) first on sys.path,
            # not the cwd; no PYTHONSAFEPATH, which would hide _oracle_checks.py beside it.
            by_path=True,
            cwd=cwd,
            timeout=180,
            what=f"Asking the installed torch how `{op}` treats each dtype",
        ).data
    except proc.NoAnswer as exc:
        raise OnboardError(
            f"Could not ask the installed torch about `{op}` (exit {exc.returncode}): "
            f"{(exc.stderr.strip().splitlines() or ['no output'])[-1]}",
            next_step="Check that `python -c 'import torch'` works in the workspace's "
            "interpreter (`onboard doctor`), or scaffold without --like.",
        ) from None
    return data
