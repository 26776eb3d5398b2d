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
from onboard import torchenv
from onboard.shell import quote
from onboard.torchenv import TorchEnv
from onboard.workflows.doctor.report import ERROR, Finding, short_message

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
    ctx = _Context(env, python, cwd, torch_dir, exts, message)
    findings: list[Finding] = []

    if err.get("type") == "crash":
        findings.append(
            Finding(
                "torch-import-crash",
                ERROR,
                _sentence_case(str(err.get("message") or "the interpreter died importing torch")),
                "`import torch` did not raise an error, the process died in native code. That "
                "happens when a compiled extension built for another Python or another torch is "
                "loaded anyway, or when a library in the install is corrupted.",
                f"Run `{quote(ctx.exe)} -X faulthandler -c 'import torch'` to see the Python frame "
                f"it died in, then reinstall torch: `{quote(ctx.exe)} -m pip install "
                f"--force-reinstall {ctx.pin}`.",
                tuple((err.get("traceback") or "").strip().splitlines()[-12:]),
            )
        )
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


class _Context:
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
        if self._python_evidence is not None:
            return self._python_evidence
        py = self.env.python
        evidence: list[str] = []
        built_for: str | None = None
        matching = self.matching_exts()
        for ext in self.foreign_exts():
            tag = elf.extension_tag(ext.name)
            tag_version = elf.tag_python_version(tag)
            built_for = built_for or tag_version
            if not matching:
                evidence.append(
                    f"{ext.name} is named for {tag} (Python {tag_version or '?'}), while this "
                    f"interpreter only loads {self.loadable()} (SOABI {py.soabi})"
                )
        for obj in self.objects():
            link = elf.read_linkage(obj)
            if link is None:
                continue
            lib_version = link.libpython_version
            if lib_version and lib_version != _major_minor(py.version):
                built_for = built_for or lib_version
                evidence.append(
                    f"{obj.name} has a DT_NEEDED on {link.libpython}: it was linked against "
                    f"Python {lib_version}"
                )
            if link.python_symbols:
                check = torchenv.check_loader(self.python, link.python_symbols, cwd=self.cwd)
                if check and check.missing:
                    shown = ", ".join(check.missing[:5])
                    more = f" and {len(check.missing) - 5} more" if len(check.missing) > 5 else ""
                    evidence.append(
                        f"{obj.name} calls {len(link.python_symbols)} Python C API "
                        f"function(s); {len(check.missing)} of them are missing in this Python "
                        f"{py.version}: {shown}{more}"
                    )
        self._python_evidence = evidence
        self._built_for = built_for
        return evidence

    def python_mismatch_finding(self) -> Finding | None:
        evidence = self.python_evidence()
        if not evidence:
            return None
        py = self.env.python
        built = f"Python {self._built_for}" if self._built_for else "another Python"
        return Finding(
            "extension-python-mismatch",
            ERROR,
            f"{self.subject} was built for {built}, this interpreter is Python {py.version}",
            f"{self.what} fails with: {self.said} Reading the extension: "
            + "; ".join(evidence)
            + ". A CPython extension only loads into the Python version (and ABI flags) it was "
            f"compiled for, so {self.subject} cannot work in this interpreter.",
            self._reinstall_fix(f"pip then picks the wheel tagged for {py.soabi or py.version}")
            + (
                f", or run it with the Python {self._built_for} it was built for"
                if self._built_for
                else ""
            )
            + ".",
            tuple(evidence),
        )

    def _reinstall_fix(self, note: str) -> str:
        if self._is_source_build():
            return (
                "Rebuild torch with this interpreter (`onboard build`, or `"
                f"{quote(self.exe)} -m pip install --no-build-isolation -v -e .` in the checkout)"
            )
        return (
            f"Reinstall torch for this interpreter: `{quote(self.exe)} -m pip install "
            f"--force-reinstall --no-deps {self.pin}` ({note})"
        )

    def _is_source_build(self) -> bool:
        root = self.torch_dir.parent
        return (root / "setup.py").is_file() and (root / "aten").is_dir()

    # --- the loader's first complaint ----------------------------------------

    def undefined_symbol(self, obj: Path, symbol: str) -> Finding:
        if re.match(r"^_?Py", symbol):
            mismatch = self.python_mismatch_finding()
            if mismatch is not None:
                return mismatch
            return Finding(
                "extension-python-mismatch",
                ERROR,
                f"{obj.name} needs the Python C API function {symbol}, which this Python "
                f"{self.env.python.version} does not have",
                f"{self.what} fails with: {self.said} The extension was compiled against "
                "another Python version's headers.",
                self._reinstall_fix("pip then picks the wheel for this Python") + ".",
            )
        if symbol.startswith("_Z"):
            link = elf.read_linkage(obj)
            search = [*(link.search_dirs() if link else []), self.torch_dir / "lib"]
            libs = _needed_libraries(link, search) if link else []
            libs += [lib for lib in self.libraries() if lib not in libs]
            twin = elf.find_abi_twin(symbol, libs)
            if twin is not None:
                return self._cxx_abi(obj, twin)
            names = elf.demangle([symbol])
            return Finding(
                "extension-symbol-missing",
                ERROR,
                f"{obj.name} needs a C++ function no library of this torch defines",
                f"{self.what} fails with: {self.said} The missing function is "
                f"`{names[symbol]}`. Neither its C++11-ABI nor its old-ABI form is in torch's "
                "libraries, so the extension was built against a different torch version (the "
                "function's signature changed or it was removed).",
                self._owner_fix(obj),
            )
        return Finding(
            "extension-symbol-missing",
            ERROR,
            f"{obj.name} needs the symbol {symbol}, which nothing loaded defines",
            f"{self.what} fails with: {self.said}",
            self._owner_fix(obj),
        )

    def _owner_fix(self, obj: Path) -> str:
        if obj.is_relative_to(self.torch_dir):
            return (
                "Files from two different torch installs are mixed in one folder. Remove torch "
                f"completely (`{quote(self.exe)} -m pip uninstall torch`, repeated until pip says "
                f"it is not installed) and install it again (`{quote(self.exe)} -m pip install "
                f"{self.pin}`)."
            )
        return (
            f"Rebuild or reinstall the package that ships {obj} against this torch "
            f"{self.version} (pip packages with C++ extensions are built for one torch version)."
        )

    def _cxx_abi(self, obj: Path, twin: elf.AbiTwin) -> Finding:
        wants = "the old std::string ABI (_GLIBCXX_USE_CXX11_ABI=0)"
        has = "the C++11 ABI (_GLIBCXX_USE_CXX11_ABI=1)"
        if twin.wanted_cxx11:
            wants, has = has, wants
        lib = Path(twin.found_in).name
        return Finding(
            "extension-cxx-abi-mismatch",
            ERROR,
            f"{obj.name} was compiled with {wants}, torch's {lib} with {has}",
            f"{self.what} fails with: {self.said} {obj.name} needs "
            f"`{elf.readable(twin.wanted_demangled)}`, but {lib} defines only "
            f"`{elf.readable(twin.found_demangled)}`: the same "
            "function with std::string mangled the other way. Code compiled with "
            "different _GLIBCXX_USE_CXX11_ABI values cannot link together.",
            self._owner_fix(obj)
            if obj.is_relative_to(self.torch_dir)
            else f"Rebuild {obj.name} against this torch without setting "
            "-D_GLIBCXX_USE_CXX11_ABI by hand: torch.utils.cpp_extension and CMake's "
            "TorchConfig take the value from torch (`torch._C._GLIBCXX_USE_CXX11_ABI`). For a "
            f"pip package, install its build for torch {self.version}.",
            (
                f"wanted: {twin.wanted}",
                f"{lib} has: {twin.found}",
            ),
        )

    def symbol_version(self, lib: str, version: str, obj: str) -> Finding:
        lib_name = Path(lib).name
        if version.startswith(("GLIBCXX_", "CXXABI_")):
            loaded = lib if lib.startswith("/") else None
            if loaded is None:
                check = torchenv.check_loader(
                    self.python, libraries=["libstdc++.so.6"], cwd=self.cwd
                )
                loaded = (check.libraries.get("libstdc++.so.6") if check else None) or lib
            have = elf.defined_versions(loaded, version.split("_")[0] + "_")
            newest = have[-1] if have else "unknown"
            system = loaded.startswith(("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/"))
            if system:
                cause = (
                    "This is the system's own libstdc++: the operating system is older than "
                    "the toolchain torch (or this extension) was built with."
                )
                fix = (
                    "Use a newer libstdc++: in a conda environment `conda install -c "
                    "conda-forge 'libstdcxx-ng>=13'` (it comes first there), or a newer Linux "
                    "(or container); otherwise install a torch build made for this system."
                )
            else:
                cause = (
                    f"An older copy in {Path(loaded).parent} comes first: a conda "
                    "environment's own libstdc++, or LD_LIBRARY_PATH pointing at an old toolchain."
                )
                fix = (
                    f"Make a newer libstdc++ come first: remove {Path(loaded).parent} from "
                    "LD_LIBRARY_PATH, or in a conda environment `conda install -c conda-forge "
                    "'libstdcxx-ng>=13'`."
                )
            return Finding(
                "libstdcxx-too-old",
                ERROR,
                "the libstdc++ this Python loads is older than the one torch was built with",
                f"{self.what} fails with: {self.said} {Path(obj).name} needs {version}, "
                f"and the libstdc++ the loader picks here ({loaded}) provides versions only up to "
                f"{newest}. {cause}",
                fix,
                (
                    f"{Path(obj).name} needs from {lib_name}: {version}",
                    f"{loaded} defines up to {newest}",
                ),
            )
        return Finding(
            "glibc-too-old",
            ERROR,
            f"this system's {lib_name} is older than torch needs ({version})",
            f"{self.what} fails with: {self.said} Wheels are built for a minimum glibc "
            "(the manylinux tag in the wheel name); this system's is older.",
            "Use a newer Linux (or a container with one), or a torch release whose wheel tag "
            "this system supports (`pip debug --verbose` lists them).",
        )

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
        if _CUDA_LIB_RE.match(lib):
            return Finding(
                "cuda-libraries-missing",
                ERROR,
                f"the CUDA library {lib} that this CUDA build of torch needs is not installed",
                f"{self.what} fails with: {self.said} {who} needs it. CUDA wheels from "
                "PyPI load the CUDA runtime from the nvidia-* pip packages they depend on; "
                "those are missing or were removed.",
                f"Reinstall torch with its dependencies: `{quote(self.exe)} -m pip install "
                f"--force-reinstall {self.pin}` (with the same --index-url you "
                "installed it from), or the CPU wheel if you have no GPU.",
            )
        if _TORCH_LIB_RE.match(lib):
            return Finding(
                "torch-install-incomplete",
                ERROR,
                f"torch's own library {lib} is missing from {self.torch_dir / 'lib'}",
                f"{self.what} fails with: {self.said} {who} needs it: the install is "
                "incomplete (an interrupted install, or files removed by hand).",
                f"Reinstall torch: `{self.exe} -m pip install --force-reinstall --no-deps "
                f"{self.pin}`.",
            )
        return Finding(
            "library-missing",
            ERROR,
            f"{who} needs {lib}, which the loader cannot find",
            f"{self.what} fails with: {self.said}",
            f"Install the package that provides {lib} or add its folder to LD_LIBRARY_PATH.",
        )

    def bad_elf(self) -> Finding:
        import platform

        return Finding(
            "extension-wrong-platform",
            ERROR,
            "torch's compiled files are for another platform or are damaged",
            f"{self.what} fails with: {self.said} This machine is {platform.machine()}.",
            f"Reinstall torch: `{quote(self.exe)} -m pip install --force-reinstall --no-deps "
            f"{self.pin}`.",
        )

    def no_extension(self) -> Finding:
        mismatch = self.python_mismatch_finding()
        if mismatch is not None:
            return mismatch
        return Finding(
            "torch-extension-missing",
            ERROR,
            f"the torch package at {self.torch_dir} has no compiled C extension (torch._C)",
            f"{self.what} fails with: {self.said} A torch/ folder without `_C*.so` is a "
            "source tree that was never built, or a broken install.",
            (
                "Build it (`onboard build`) or run Python from another folder so the installed "
                "torch is used."
                if self._is_source_build()
                else f"Reinstall torch: `{quote(self.exe)} -m pip install --force-reinstall "
                f"{self.pin}`."
            ),
        )

    def generic(self) -> Finding:
        err = self.env.import_error or {}
        return Finding(
            "torch-import-failed",
            ERROR,
            f"`import torch` fails with {err.get('type', 'an error')}",
            f"`import torch` raised: {self.said}",
            f"Run `{quote(self.exe)} -c 'import torch'` to see the full traceback; `onboard doctor "
            "-v` shows its last frames.",
            tuple((err.get("traceback") or "").strip().splitlines()[-12:]),
        )


def _sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:]


def _major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _needed_libraries(link: elf.Linkage, search: list[Path]) -> list[Path]:
    found = []
    for name in link.needed:
        for folder in search:
            candidate = folder / name
            if candidate.is_file() and candidate not in found:
                found.append(candidate)
                break
    return found
