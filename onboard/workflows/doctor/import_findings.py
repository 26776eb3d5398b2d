"""The findings a failed import can give, one function each, and the facts they read.

``import_failure`` reads the loader's complaint and the extension's files; these
functions say what that means and what to do, for torch's own ``_C`` or (through
``extension``) for the user's extension.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onboard import linkage as elf
from onboard import torchenv
from onboard.shell import quote
from onboard.torchenv import PythonInfo
from onboard.workflows.doctor.report import ERROR, Finding

_SYSTEM_DIRS = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/")


@dataclass(frozen=True)
class Failure:
    """What failed to load and the install it failed in, as every finding names them."""

    what: str  # "`import torch`", or the user's import
    said: str  # the loader's message, shortened
    subject: str  # "torch's C extension", or the extension's file
    exe: str  # the interpreter
    pin: str  # "torch==X.Y.Z", for reinstall commands
    version: str  # torch's version, or "this version"
    torch_dir: Path

    @property
    def fails_with(self) -> str:
        return f"{self.what} fails with: {self.said}"


def python_evidence(
    py: PythonInfo,
    python: str | None,
    cwd: str | None,
    files: tuple[list[Path], list[Path], list[Path]],
    loadable: str,
) -> tuple[list[str], str | None]:
    """(sentences, each a fact read from a file, that say "built for another Python";
    the Python it was built for when a file says). ``files``: the extension files this
    interpreter would load, the others, and the objects whose linkage matters."""
    matching, foreign, objects = files
    evidence: list[str] = []
    built_for: str | None = None
    for ext in foreign:
        tag = elf.extension_tag(ext.name)
        tag_version = elf.tag_python_version(tag)
        built_for = built_for or tag_version
        if not matching:
            evidence.append(
                f"{ext.name} is named for {tag} (Python {tag_version or '?'}), while this "
                f"interpreter only loads {loadable} (SOABI {py.soabi})"
            )
    for obj in objects:
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
            check = torchenv.check_loader(python, link.python_symbols, cwd=cwd)
            if check and check.missing:
                shown = ", ".join(check.missing[:5])
                more = f" and {len(check.missing) - 5} more" if len(check.missing) > 5 else ""
                evidence.append(
                    f"{obj.name} calls {len(link.python_symbols)} Python C API "
                    f"function(s); {len(check.missing)} of them are missing in this Python "
                    f"{py.version}: {shown}{more}"
                )
    return evidence, built_for


def python_mismatch(
    f: Failure, py: PythonInfo, evidence: list[str], built_for: str | None, reinstall: str
) -> Finding:
    built = f"Python {built_for}" if built_for else "another Python"
    return Finding(
        "extension-python-mismatch",
        ERROR,
        f"{f.subject} was built for {built}, this interpreter is Python {py.version}",
        f"{f.fails_with} Reading the extension: "
        + "; ".join(evidence)
        + ". A CPython extension only loads into the Python version (and ABI flags) it was "
        f"compiled for, so {f.subject} cannot work in this interpreter.",
        reinstall
        + (f", or run it with the Python {built_for} it was built for" if built_for else "")
        + ".",
        tuple(evidence),
    )


def reinstall_fix(f: Failure, source_build: bool, note: str) -> str:
    if source_build:
        return (
            "Rebuild torch with this interpreter (`onboard build`, or `"
            f"{quote(f.exe)} -m pip install --no-build-isolation -v -e .` in the checkout)"
        )
    return (
        f"Reinstall torch for this interpreter: `{quote(f.exe)} -m pip install "
        f"--force-reinstall --no-deps {f.pin}` ({note})"
    )


def owner_fix(f: Failure, obj: Path) -> str:
    if obj.is_relative_to(f.torch_dir):
        return (
            "Files from two different torch installs are mixed in one folder. Remove torch "
            f"completely (`{quote(f.exe)} -m pip uninstall torch`, repeated until pip says "
            f"it is not installed) and install it again (`{quote(f.exe)} -m pip install "
            f"{f.pin}`)."
        )
    return (
        f"Rebuild or reinstall the package that ships {obj} against this torch "
        f"{f.version} (pip packages with C++ extensions are built for one torch version)."
    )


def python_api_missing(f: Failure, obj: Path, symbol: str, py_version: str, fix: str) -> Finding:
    return Finding(
        "extension-python-mismatch",
        ERROR,
        f"{obj.name} needs the Python C API function {symbol}, which this Python "
        f"{py_version} does not have",
        f"{f.fails_with} The extension was compiled against another Python version's headers.",
        fix,
    )


def cxx_function_missing(f: Failure, obj: Path, symbol: str, fix: str) -> Finding:
    names = elf.demangle([symbol])
    return Finding(
        "extension-symbol-missing",
        ERROR,
        f"{obj.name} needs a C++ function no library of this torch defines",
        f"{f.fails_with} The missing function is "
        f"`{names[symbol]}`. Neither its C++11-ABI nor its old-ABI form is in torch's "
        "libraries, so the extension was built against a different torch version (the "
        "function's signature changed or it was removed).",
        fix,
    )


def symbol_missing(f: Failure, obj: Path, symbol: str, fix: str) -> Finding:
    return Finding(
        "extension-symbol-missing",
        ERROR,
        f"{obj.name} needs the symbol {symbol}, which nothing loaded defines",
        f.fails_with,
        fix,
    )


def cxx_abi(f: Failure, obj: Path, twin: elf.AbiTwin, fix: str | None) -> Finding:
    """``fix``: the owner's fix when ``obj`` is torch's own file, else None."""
    wants = "the old std::string ABI (_GLIBCXX_USE_CXX11_ABI=0)"
    has = "the C++11 ABI (_GLIBCXX_USE_CXX11_ABI=1)"
    if twin.wanted_cxx11:
        wants, has = has, wants
    lib = Path(twin.found_in).name
    return Finding(
        "extension-cxx-abi-mismatch",
        ERROR,
        f"{obj.name} was compiled with {wants}, torch's {lib} with {has}",
        f"{f.fails_with} {obj.name} needs "
        f"`{elf.readable(twin.wanted_demangled)}`, but {lib} defines only "
        f"`{elf.readable(twin.found_demangled)}`: the same "
        "function with std::string mangled the other way. Code compiled with "
        "different _GLIBCXX_USE_CXX11_ABI values cannot link together.",
        fix
        if fix is not None
        else f"Rebuild {obj.name} against this torch without setting "
        "-D_GLIBCXX_USE_CXX11_ABI by hand: torch.utils.cpp_extension and CMake's "
        "TorchConfig take the value from torch (`torch._C._GLIBCXX_USE_CXX11_ABI`). For a "
        f"pip package, install its build for torch {f.version}.",
        (
            f"wanted: {twin.wanted}",
            f"{lib} has: {twin.found}",
        ),
    )


def symbol_version(
    f: Failure, lib: str, version: str, obj: str, python: str | None, cwd: str | None
) -> Finding:
    """A ``version `X' not found``: libstdc++ (GLIBCXX_/CXXABI_) or glibc too old."""
    lib_name = Path(lib).name
    if not version.startswith(("GLIBCXX_", "CXXABI_")):
        return Finding(
            "glibc-too-old",
            ERROR,
            f"this system's {lib_name} is older than torch needs ({version})",
            f"{f.fails_with} Wheels are built for a minimum glibc "
            "(the manylinux tag in the wheel name); this system's is older.",
            "Use a newer Linux (or a container with one), or a torch release whose wheel tag "
            "this system supports (`pip debug --verbose` lists them).",
        )
    loaded = lib if lib.startswith("/") else None
    if loaded is None:
        check = torchenv.check_loader(python, libraries=["libstdc++.so.6"], cwd=cwd)
        loaded = (check.libraries.get("libstdc++.so.6") if check else None) or lib
    have = elf.defined_versions(loaded, version.split("_")[0] + "_")
    newest = have[-1] if have else "unknown"
    if loaded.startswith(_SYSTEM_DIRS):
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
        f"{f.fails_with} {Path(obj).name} needs {version}, "
        f"and the libstdc++ the loader picks here ({loaded}) provides versions only up to "
        f"{newest}. {cause}",
        fix,
        (
            f"{Path(obj).name} needs from {lib_name}: {version}",
            f"{loaded} defines up to {newest}",
        ),
    )


def library_missing(f: Failure, lib: str, who: str, kind: str) -> Finding:
    """``kind``: "cuda" for a CUDA runtime library, "torch" for one of torch's own."""
    if kind == "cuda":
        return Finding(
            "cuda-libraries-missing",
            ERROR,
            f"the CUDA library {lib} that this CUDA build of torch needs is not installed",
            f"{f.fails_with} {who} needs it. CUDA wheels from "
            "PyPI load the CUDA runtime from the nvidia-* pip packages they depend on; "
            "those are missing or were removed.",
            f"Reinstall torch with its dependencies: `{quote(f.exe)} -m pip install "
            f"--force-reinstall {f.pin}` (with the same --index-url you "
            "installed it from), or the CPU wheel if you have no GPU.",
        )
    if kind == "torch":
        return Finding(
            "torch-install-incomplete",
            ERROR,
            f"torch's own library {lib} is missing from {f.torch_dir / 'lib'}",
            f"{f.fails_with} {who} needs it: the install is "
            "incomplete (an interrupted install, or files removed by hand).",
            f"Reinstall torch: `{quote(f.exe)} -m pip install --force-reinstall --no-deps "
            f"{f.pin}`.",
        )
    return Finding(
        "library-missing",
        ERROR,
        f"{who} needs {lib}, which the loader cannot find",
        f.fails_with,
        f"Install the package that provides {lib} or add its folder to LD_LIBRARY_PATH.",
    )


def wrong_platform(f: Failure) -> Finding:
    return Finding(
        "extension-wrong-platform",
        ERROR,
        "torch's compiled files are for another platform or are damaged",
        f"{f.fails_with} This machine is {platform.machine()}.",
        f"Reinstall torch: `{quote(f.exe)} -m pip install --force-reinstall --no-deps {f.pin}`.",
    )


def extension_missing(f: Failure, source_build: bool) -> Finding:
    return Finding(
        "torch-extension-missing",
        ERROR,
        f"the torch package at {f.torch_dir} has no compiled C extension (torch._C)",
        f"{f.fails_with} A torch/ folder without `_C*.so` is a "
        "source tree that was never built, or a broken install.",
        (
            "Build it (`onboard build`) or run Python from another folder so the installed "
            "torch is used."
            if source_build
            else f"Reinstall torch: `{quote(f.exe)} -m pip install --force-reinstall {f.pin}`."
        ),
    )


def import_failed(f: Failure, err: dict[str, Any]) -> Finding:
    return Finding(
        "torch-import-failed",
        ERROR,
        f"`import torch` fails with {err.get('type', 'an error')}",
        f"`import torch` raised: {f.said}",
        f"Run `{quote(f.exe)} -c 'import torch'` to see the full traceback; `onboard doctor "
        "-v` shows its last frames.",
        tuple((err.get("traceback") or "").strip().splitlines()[-12:]),
    )


def import_crash(f: Failure, err: dict[str, Any]) -> Finding:
    message = str(err.get("message") or "the interpreter died importing torch")
    return Finding(
        "torch-import-crash",
        ERROR,
        message[:1].upper() + message[1:],
        "`import torch` did not raise an error, the process died in native code. That "
        "happens when a compiled extension built for another Python or another torch is "
        "loaded anyway, or when a library in the install is corrupted.",
        f"Run `{quote(f.exe)} -X faulthandler -c 'import torch'` to see the Python frame "
        f"it died in, then reinstall torch: `{quote(f.exe)} -m pip install "
        f"--force-reinstall {f.pin}`.",
        tuple((err.get("traceback") or "").strip().splitlines()[-12:]),
    )


def _major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])
