"""Parsing what a failing PyTorch call prints.

With ``TORCH_SHOW_CPP_STACKTRACES=1`` (2.13.0, checked on this machine) a
c10::Error reads::

    Traceback (most recent call last):
      File "repro.py", line 3, in <module>
    RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)
    Exception raised from meta at /__w/pytorch/pytorch/aten/src/ATen/native/\
LinearAlgebra.cpp:204 (most recent call first):
    C++ CapturedTraceback:
    #6 c10::detail::torchCheckFail(char const*, ...) from ??:0
    #7 at::meta::structured_mm::meta(at::Tensor const&, at::Tensor const&) from ??:0
    ...

Older builds print ``frame #7: at::meta::... + 0x12 (0x7f.. in /lib/libtorch_cpu.so)``.
A TORCH_WARN ends with ``(Triggered internally at PATH:LINE.)``; an internal
assert says ``INTERNAL ASSERT FAILED at "PATH":LINE``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PY_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?$')
_RAISED_FROM = re.compile(
    r"Exception raised from (?P<func>.+?) at (?P<path>\S+?):(?P<line>\d+)"
    r"(?: \(most recent call first\))?"
)
_TRIGGERED = re.compile(r"\(Triggered internally at (?P<path>\S+?):(?P<line>\d+)\.\)")
_INTERNAL_ASSERT = re.compile(r'INTERNAL ASSERT FAILED at "(?P<path>[^"]+)":(?P<line>\d+)')
_CAPTURED = re.compile(r"^#(?P<n>\d+) (?P<sym>.+?) from (?P<file>\S+?):(?P<line>\d+|\?)$")
_LEGACY = re.compile(
    r"^frame #(?P<n>\d+): (?P<sym>.+?)(?: \+ 0x[0-9a-f]+)? \(0x[0-9a-f]+ in (?P<file>\S+)\)$"
)
_EXC_LINE = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Warning|Interrupt|Exit|Failure|Fault)"
    r"|[A-Za-z_][\w.]*\.[A-Z]\w*): ?(?P<msg>.*)$"
)
_WARNING_LINE = re.compile(r"^(?P<path>\S+?):(?P<line>\d+): (?P<type>\w*Warning): (?P<msg>.*)$")


@dataclass(frozen=True)
class PyFrame:
    path: str
    line: int
    func: str | None
    text: str | None = None


@dataclass(frozen=True)
class CppFrame:
    index: int
    symbol: str
    file: str | None  # a basename from the symbolizer, or the library for legacy frames
    line: int | None


@dataclass(frozen=True)
class Site:
    """A ``PATH:LINE`` the binary itself reports (``__FILE__``/``__LINE__``)."""

    kind: str  # raised / triggered / internal_assert
    path: str
    line: int
    func: str | None = None
    message: str | None = None  # a warning's own text (the line before "(Triggered ...")
    category: str | None = None  # UserWarning, DeprecationWarning, ...


@dataclass
class Trace:
    python_frames: list[PyFrame] = field(default_factory=list)
    exc_type: str | None = None
    message: str | None = None
    sites: list[Site] = field(default_factory=list)
    cpp_frames: list[CppFrame] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (type, message)
    # The message is an exception's (False: the last warning's, or none).
    raised_exception: bool = False

    @property
    def raised(self) -> Site | None:
        for kind in ("raised", "internal_assert", "triggered"):
            for site in self.sites:
                if site.kind == kind:
                    return site
        return None

    @property
    def empty(self) -> bool:
        return not (self.python_frames or self.message or self.sites or self.cpp_frames)


def parse(text: str) -> Trace:
    """Read a traceback or log; the last exception wins."""
    trace = Trace()
    lines = text.splitlines()
    in_message = False
    message_lines: list[str] = []
    for i, raw in enumerate(lines):
        line = raw.rstrip()
        if line.startswith("Traceback (most recent call last):"):
            # A new (chained or later) exception: keep only the last one's frames.
            trace.python_frames = []
            trace.cpp_frames = []
            trace.exc_type = None
            message_lines = []
            trace.sites = [s for s in trace.sites if s.kind == "triggered"]
            in_message = False
            continue
        frame = _PY_FRAME.match(line)
        if frame:
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else None
            source = (
                nxt
                if nxt and not _PY_FRAME.match(lines[i + 1]) and not _EXC_LINE.match(nxt)
                else None
            )
            trace.python_frames.append(
                PyFrame(frame.group("path"), int(frame.group("line")), frame.group("func"), source)
            )
            in_message = False
            continue
        for pattern, kind in ((_RAISED_FROM, "raised"), (_INTERNAL_ASSERT, "internal_assert")):
            mo = pattern.search(line)
            if mo:
                func = mo.groupdict().get("func")
                site = Site(kind, mo.group("path"), int(mo.group("line")), func)
                if site not in trace.sites:
                    trace.sites.append(site)
        warning = _WARNING_LINE.match(line)
        said = _TRIGGERED.sub("", warning.group("msg")).strip() if warning else None
        for mo in _TRIGGERED.finditer(line):
            words = said if said is not None else line[: mo.start()].strip() or None
            site = Site(
                "triggered",
                mo.group("path"),
                int(mo.group("line")),
                message=words,
                category=warning.group("type") if warning else None,
            )
            if all(
                (s.kind, s.path, s.line) != (site.kind, site.path, site.line) for s in trace.sites
            ):
                trace.sites.append(site)
        if warning:
            trace.warnings.append((warning.group("type"), said or ""))
            continue
        cpp = _CAPTURED.match(line) or _LEGACY.match(line)
        if cpp:
            in_message = False
            line_no = cpp.groupdict().get("line")
            trace.cpp_frames.append(
                CppFrame(
                    int(cpp.group("n")),
                    cpp.group("sym"),
                    None if cpp.group("file") == "??" else cpp.group("file"),
                    int(line_no) if line_no and line_no.isdigit() and line_no != "0" else None,
                )
            )
            continue
        if (
            _RAISED_FROM.search(line)
            or line.startswith("C++ CapturedTraceback")
            or not line.strip()
        ):
            if in_message and line.strip() and not _RAISED_FROM.search(line):
                continue
            in_message = False
            continue
        exc = _EXC_LINE.match(line) if not line.startswith(" ") else None
        if exc and (trace.python_frames or trace.exc_type is None):
            trace.exc_type = exc.group("type")
            message_lines = [exc.group("msg")]
            in_message = True
            continue
        if in_message:
            message_lines.append(line)
    if message_lines:
        trace.message = "\n".join(message_lines).strip()
        trace.raised_exception = True
    elif trace.warnings:
        trace.exc_type, trace.message = trace.warnings[-1]
    return trace


# --- layers -----------------------------------------------------------------

# Ordered caller -> callee, as a C++ trace is read top down.
LAYERS = (
    "python",
    "python binding",
    "autograd",
    "dispatcher",
    "backend wrapper",
    "kernel",
    "meta",
    "check",
)

_WRAPPED = re.compile(r", &(?P<fn>(?:\w|::|\(anonymous namespace\))+)>")
_INTERPRETER = re.compile(
    r"^(?:_?Py|cfunction_|method_vectorcall|_start\b|__libc_|pymain_|run_|slot_tp_|vectorcall|"
    r"function_code_fastcall|builtin_|std::_Function_handler)"
)
_CHECK_MACHINERY = re.compile(
    r"torchCheckFail|c10::Error::Error|c10::\w+Error::|c10::detail::|c10::Warning|"
    r"c10::warn|SetStackTraceFetcher|torchInternalAssertFail|c10::ThrowEnforce"
)


@dataclass(frozen=True)
class FrameRole:
    layer: str | None  # one of LAYERS, or None for interpreter frames
    name: str  # the function, without argument lists
    op: str | None = None  # the aten op the frame is for (mm), when it says
    backend: str | None = None  # CPU, CompositeExplicitAutograd, ... for wrappers
    macro: str | None = None  # TORCH_META_FUNC / TORCH_IMPL_FUNC when structured
    glue: bool = False  # a dispatcher call-through frame (wrap_kernel_functor_unboxed_)


def _strip_args(symbol: str) -> str:
    """``at::meta::structured_mm::meta(at::Tensor const&)`` -> ``at::meta::structured_mm::meta``."""
    anon = "(anonymous namespace)"
    depth = 0
    i = 0
    while i < len(symbol):
        if symbol.startswith(anon, i):
            i += len(anon)
            continue
        ch = symbol[i]
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            break
        i += 1
    return symbol[:i].strip()


def classify(symbol: str, file: str | None = None) -> FrameRole:
    wrapped = _WRAPPED.search(symbol)
    if wrapped and "wrap_kernel_functor_unboxed_" in symbol:
        inner = classify(wrapped.group("fn"), file)
        return FrameRole(inner.layer, inner.name, inner.op, inner.backend, inner.macro, glue=True)
    name = _strip_args(symbol)
    base = name.replace("(anonymous namespace)::", "")
    if _CHECK_MACHINERY.search(name):
        return FrameRole("check", base)
    if _INTERPRETER.match(name) or (file or "").endswith((".c",)):
        return FrameRole(None, base)
    mo = re.search(r"THPVariable_(\w+)", base)
    if mo or "python_torch_functions" in (file or "") or "python_variable_methods" in (file or ""):
        return FrameRole("python binding", base, op=mo.group(1) if mo else None)
    mo = re.search(r"VariableType::(\w+)", base)
    if mo:
        return FrameRole("autograd", base, op=mo.group(1))
    mo = re.search(r"at::_ops::(\w+)::(?:call|redispatch)", base)
    if mo:
        return FrameRole("dispatcher", base, op=mo.group(1))
    mo = re.search(r"\bwrapper_(?P<backend>[A-Za-z]+?)_{1,2}(?P<op>\w+)$", base)
    if mo or re.match(r"Register\w+\.cpp$", file or ""):
        return FrameRole(
            "backend wrapper",
            base,
            op=mo.group("op").rstrip("_") if mo else None,
            backend=mo.group("backend") if mo else None,
        )
    mo = re.search(r"at::meta::structured_(\w+)::meta$", base)
    if mo:
        return FrameRole("meta", base, op=mo.group(1), macro="TORCH_META_FUNC")
    mo = re.search(r"at::native::structured_(\w+)::impl$", base)
    if mo:
        return FrameRole("kernel", base, op=mo.group(1), macro="TORCH_IMPL_FUNC")
    mo = re.search(r"at::native::(?:\w+::)*(\w+)$", base)
    if mo:
        return FrameRole("kernel", base, op=mo.group(1))
    if base.startswith(
        ("c10::impl::", "c10::Dispatcher", "c10::KernelFunction", "c10::OperatorHandle")
    ):
        return FrameRole("dispatcher", base, glue=True)
    if base.startswith(("at::", "c10::", "torch::")):
        return FrameRole("kernel", base)
    return FrameRole(None, base)
