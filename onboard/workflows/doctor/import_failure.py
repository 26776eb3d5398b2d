"""Why torch's C extension will not import, told the way a person would after reading its linkage.

The loader's message names one problem (the first undefined symbol, the first
library it could not open); the extension's ELF headers say which Python and
which C++ ABI it was built for. Together they separate:
- a Python mismatch: the extension's filename tag (``cpython-39``), a DT_NEEDED
  on ``libpython3.9.so``, or Python C API functions this interpreter lacks;
- a C++ ABI mismatch: a symbol mangled with the old ``std::string`` where
  torch's library defines the ``std::__cxx11`` one, or the reverse
  (``_GLIBCXX_USE_CXX11_ABI``);
- a libstdc++ older than the one the wheel was built against (``GLIBCXX_3.4.x``);
- missing CUDA runtime libraries or a half-installed torch.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from onboard import linkage as elf
from onboard.torchenv import TorchEnv
from onboard.workflows.doctor import import_findings as told
from onboard.workflows.doctor.import_findings import Failure
from onboard.workflows.doctor.report import Finding, short_message

UNDEFINED_RE = re.compile(r"(?P<obj>/[^\s:]+): undefined symbol: (?P<sym>\S+)")
CANNOT_OPEN_RE = re.compile(r"(?P<lib>[^\s:/]+\.so[\w.]*): cannot open shared object file")
VERSION_RE = re.compile(
    r"(?P<lib>\S+): version `(?P<ver>[^']+)' not found \(required by (?P<obj>[^)]+)\)"
)
_NO_C_RE = re.compile(r"No module named 'torch\._C'|cannot import name '_C'")
BAD_ELF_RE = re.compile(r"wrong ELF class|invalid ELF header|cannot open shared object file: Exec")
_CUDA_LIB_RE = re.compile(r"^lib(cu|nv|cudnn|nccl|cusparse|cufft|curand|cublas|cupti)")
_TORCH_LIB_RE = re.compile(r"^lib(c10|torch|shm|gomp|aoti)")


def explain(env: TorchEnv, python: str | None, cwd: str | None) -> list[Finding]:
    err: dict[str, Any] = env.import_error or {}
    message = str(err.get("message") or "")
    text = f"{message}\n{err.get('traceback') or ''}"
    assert env.spec_origin is not None
    torch_dir = Path(env.spec_origin).parent
    # The child lists them after a failed import; after a crash it never got there.
    exts = [Path(p) for p in err.get("extensions") or []] or sorted(torch_dir.glob("_C*.so"))
    ctx = ImportContext(env, python, cwd, torch_dir, exts, message)
    findings: list[Finding] = []

    if err.get("type") == "crash":
        findings.append(told.import_crash(ctx.failure(), err))
        mismatch = ctx.python_mismatch_finding()
        return [*findings, mismatch] if mismatch else findings

    undefined = UNDEFINED_RE.search(text)
    cannot_open = CANNOT_OPEN_RE.search(text)
    version = VERSION_RE.search(text)
    if version:
        findings.append(
            ctx.symbol_version(version.group("lib"), version.group("ver"), version.group("obj"))
        )
    elif undefined:
        findings.append(ctx.undefined_symbol(Path(undefined.group("obj")), undefined.group("sym")))
    elif cannot_open and not BAD_ELF_RE.search(text):
        findings.append(ctx.missing_library(cannot_open.group("lib")))
    elif BAD_ELF_RE.search(text):
        findings.append(ctx.bad_elf())
    elif _NO_C_RE.search(text) or not ctx.matching_exts():
        findings.append(ctx.no_extension())
    mismatch = ctx.python_mismatch_finding()
    if mismatch and not any(f.id == mismatch.id for f in findings):
        # The tag or linkage says "other Python" even though the loader's first
        # complaint was something else: say so, it is the root cause.
        findings.append(mismatch)
    if not findings:
        findings.append(ctx.generic())
    return findings


class ImportContext:
    """What the extension files say (read once, asked by each finding), and the
    loader's first complaint told as a finding (``import_findings``). An
    extension's subclass (``extension``) overrides the hooks that name its files
    and its fixes."""

    def __init__(
        self,
        env: TorchEnv,
        python: str | None,
        cwd: str | None,
        torch_dir: Path,
        exts: list[Path],
        message: str,
    ) -> None:
        self.env = env
        self.python = python
        self.cwd = cwd
        self.torch_dir = torch_dir
        self.exts = exts
        self.message = message
        self.said = short_message(message)
        self.exe = env.python.executable
        version = (env.dist or {}).get("version")
        self.version = version or "this version"
        self.pin = f"torch=={version}" if version else "torch"
        self._python_evidence: list[str] | None = None
        self._built_for: str | None = None

    # What failed to load, as the findings name it (an extension's subclass says its own).
    what = "`import torch`"
    subject = "torch's C extension"

    def failure(self) -> Failure:
        return Failure(
            self.what, self.said, self.subject, self.exe, self.pin, self.version, self.torch_dir
        )

    # --- what the extension files say ---------------------------------------

    def matching_exts(self) -> list[Path]:
        """_C files this interpreter would load: its EXT_SUFFIX, .abi3.so or a bare .so."""
        py = self.env.python
        return [
            e
            for e in self.exts
            if e.name.endswith(py.ext_suffix) or e.name.endswith(".abi3.so") or e.name == "_C.so"
        ]

    def loadable(self) -> str:
        """The file names this interpreter would load for the extension."""
        return f"`_C{self.env.python.ext_suffix}`"

    def foreign_exts(self) -> list[Path]:
        mine = set(self.matching_exts())
        return [e for e in self.exts if e not in mine]

    def objects(self) -> list[Path]:
        """The files whose linkage matters: the extension(s) and libtorch_python."""
        objs = self.matching_exts() or self.exts
        lib = self.torch_dir / "lib" / "libtorch_python.so"
        return [*objs, lib] if lib.is_file() else objs

    def libraries(self) -> list[Path]:
        lib_dir = self.torch_dir / "lib"
        return sorted(lib_dir.glob("*.so*")) if lib_dir.is_dir() else []

    def python_evidence(self) -> list[str]:
        """Sentences, each a fact read from a file, that say "built for another Python"."""
        if self._python_evidence is None:
            files = (self.matching_exts(), self.foreign_exts(), self.objects())
            self._python_evidence, self._built_for = told.python_evidence(
                self.env.python, self.python, self.cwd, files, self.loadable()
            )
        return self._python_evidence

    def _is_source_build(self) -> bool:
        root = self.torch_dir.parent
        return (root / "setup.py").is_file() and (root / "aten").is_dir()

    # --- the fixes an extension's subclass tells its own way ------------------

    def _reinstall_fix(self, note: str) -> str:
        return told.reinstall_fix(self.failure(), self._is_source_build(), note)

    def _owner_fix(self, obj: Path) -> str:
        return told.owner_fix(self.failure(), obj)

    # --- the loader's first complaint ----------------------------------------

    def python_mismatch_finding(self) -> Finding | None:
        evidence = self.python_evidence()
        if not evidence:
            return None
        py = self.env.python
        note = f"pip then picks the wheel tagged for {py.soabi or py.version}"
        fix = self._reinstall_fix(note)
        return told.python_mismatch(self.failure(), py, evidence, self._built_for, fix)

    def undefined_symbol(self, obj: Path, symbol: str) -> Finding:
        if re.match(r"^_?Py", symbol):
            mismatch = self.python_mismatch_finding()
            if mismatch is not None:
                return mismatch
            fix = self._reinstall_fix("pip then picks the wheel for this Python") + "."
            return told.python_api_missing(
                self.failure(), obj, symbol, self.env.python.version, fix
            )
        if symbol.startswith("_Z"):
            twin = elf.find_abi_twin(
                symbol, _defining_candidates(obj, self.torch_dir, self.libraries())
            )
            if twin is not None:
                return self._cxx_abi(obj, twin)
            return told.cxx_function_missing(self.failure(), obj, symbol, self._owner_fix(obj))
        return told.symbol_missing(self.failure(), obj, symbol, self._owner_fix(obj))

    def _cxx_abi(self, obj: Path, twin: elf.AbiTwin) -> Finding:
        fix = self._owner_fix(obj) if obj.is_relative_to(self.torch_dir) else None
        return told.cxx_abi(self.failure(), obj, twin, fix)

    def symbol_version(self, lib: str, version: str, obj: str) -> Finding:
        return told.symbol_version(self.failure(), lib, version, obj, self.python, self.cwd)

    def missing_library(self, lib: str) -> Finding:
        needers = []
        for obj in [*self.exts, *self.libraries()]:
            link = elf.read_linkage(obj)
            if link and lib in link.needed:
                needers.append(obj.name)
        who = ", ".join(needers) or "a library torch loads"
        if lib.startswith("libpython"):
            mismatch = self.python_mismatch_finding()
            if mismatch is not None:
                return mismatch
        kind = "cuda" if _CUDA_LIB_RE.match(lib) else "torch" if _TORCH_LIB_RE.match(lib) else ""
        return told.library_missing(self.failure(), lib, who, kind)

    def bad_elf(self) -> Finding:
        return told.wrong_platform(self.failure())

    def no_extension(self) -> Finding:
        mismatch = self.python_mismatch_finding()
        if mismatch is not None:
            return mismatch
        return told.extension_missing(self.failure(), self._is_source_build())

    def generic(self) -> Finding:
        return told.import_failed(self.failure(), self.env.import_error or {})


def _defining_candidates(obj: Path, torch_dir: Path, libraries: list[Path]) -> list[Path]:
    """Where a C++ symbol ``obj`` needs could be defined: its DT_NEEDED libraries
    (found on its RUNPATH or in torch's lib/), then every library of torch."""
    link = elf.read_linkage(obj)
    search = [*(link.search_dirs() if link else []), torch_dir / "lib"]
    libs = _needed_libraries(link, search) if link else []
    return libs + [lib for lib in libraries if lib not in libs]


def _needed_libraries(link: elf.Linkage, search: list[Path]) -> list[Path]:
    found = []
    for name in link.needed:
        for folder in search:
            candidate = folder / name
            if candidate.is_file() and candidate not in found:
                found.append(candidate)
                break
    return found
