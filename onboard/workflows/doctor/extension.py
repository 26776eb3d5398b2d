"""Why a compiled extension will not import against this torch.

``onboard doctor --import MODULE`` imports torch and then MODULE in the target
interpreter (``children/_import_child.py``, from the user's folder); ``onboard doctor --
python script.py`` runs the script. Either way the loader's complaint
(``undefined symbol``, ``cannot open shared object file``, ``version `GLIBCXX_..'
not found``) and the extension's ELF headers go through the same analysis as a
broken ``import torch`` (``import_failure.ImportContext``), told for the extension:
a symbol mangled for the other ``_GLIBCXX_USE_CXX11_ABI`` (which side has
which, the flag to drop), a C++ function this torch does not define (which
torch its package asks for, whether this torch's headers still declare it), a
file built for another Python (its tag, or the C API function this Python
lacks: rebuild it with this Python), a library the loader cannot find.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from onboard import linkage as elf
from onboard import proc
from onboard.errors import OnboardError
from onboard.jsonable import spec
from onboard.shell import quote
from onboard.torchenv import TorchEnv
from onboard.workflows.doctor import import_failure
from onboard.workflows.doctor.report import ERROR, INFO, Finding

IMPORT_TIMEOUT = 180.0
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
_IMPORT_LINE = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\b|import\s+([\w.]+))")
_TORCH_REQ = re.compile(r"^torch(?![\w-])")
_LOADER_OBJECT = re.compile(r"(/[^\s:]+\.so[\w.]*)")


def _unquoted(what: str) -> str:
    return what.strip("`")


@dataclass
class ImportAttempt:
    """One try at loading an extension, and the compiled files that could be it."""

    # "`import ext_abi`" or "`python use_ext.py`", as the findings quote it (JSON: unquoted)
    what: str = field(metadata=spec(convert=_unquoted))
    module: str | None
    ok: bool
    # In JSON one "error" {type, message}, null when it worked (json_extra).
    error_type: str | None = field(default=None, metadata=spec(omit=True))
    message: str = field(default="", metadata=spec(omit=True))
    traceback: str = field(default="", metadata=spec(omit=True))
    returncode: int | None = None
    origin: str | None = None
    files: list[str] = field(default_factory=list)
    distribution: dict[str, Any] | None = None
    torch_error: dict[str, Any] | None = field(default=None, metadata=spec(omit=True))

    def json_extra(self) -> dict[str, object]:
        failed = {"type": self.error_type, "message": self.message}
        return {"error": None if self.ok else failed}

    def summary(self) -> str:
        head = self.what.strip("`")
        if self.ok:
            return f"{head}: works" + (f" ({self.origin})" if self.origin else "")
        first = (self.message.strip().splitlines() or [""])[0]
        return f"{head}: {self.error_type or 'failed'}: {first}"


def attempt_import(python: str, module: str, cwd: str) -> ImportAttempt:
    """``import torch; import MODULE`` in the target interpreter, from ``cwd``."""
    if not re.fullmatch(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*", module):
        from onboard.errors import BadInput

        raise BadInput(
            f"{module!r} is not a Python module name.",
            next_step="Pass the dotted name you import: `onboard doctor --import my_ext` or "
            "`onboard doctor --import mypkg._C`.",
        )
    what = f"`import {module}`"
    try:
        asked = proc.ask_child(
            python, "_import_child.py", module, cwd=cwd, timeout=IMPORT_TIMEOUT,
            what=f"Importing {module}",
        )  # fmt: skip
    except proc.NoAnswer as exc:
        said = (exc.stderr.strip().splitlines() or ["no output"])[-1]
        return ImportAttempt(
            what,
            module,
            False,
            "crash",
            f"the interpreter exited with {exc.returncode} while importing {module}: {said}",
            exc.stderr[-4000:],
            exc.returncode,
        )
    data, result = asked.data, asked.result
    error = data.get("error") or {}
    return ImportAttempt(
        what,
        module,
        not error,
        error.get("type"),
        str(error.get("message") or ""),
        str(error.get("traceback") or ""),
        result.returncode,
        data.get("origin"),
        list(data.get("files") or []),
        _torch_requirement(data.get("distribution")),
        data.get("torch_error"),
    )


def attempt_command(argv: list[str], cwd: str, sys_path: tuple[str, ...]) -> ImportAttempt:
    """Run the user's command; read the exception it ended with, and find its extension."""
    from onboard.workflows.opsource import cpp_trace

    shown = f"`{shlex.join(argv)}`"
    try:
        # Done when the command's own process exits (what it printed is the answer):
        # a child it left behind is stopped, not waited for until the timeout.
        result = proc.run(
            argv, cwd=cwd, timeout=IMPORT_TIMEOUT, check=False, what=shown, until_main_exits=True
        )
    except OnboardError as exc:
        raise OnboardError(
            f"Could not run {shown}: {exc.message}",
            next_step="Check the command (the interpreter's path, the script's name), then run "
            "`onboard doctor -- python script.py` again.",
        ) from exc
    trace = cpp_trace.parse(result.stderr)
    module = module_of(trace)
    attempt = ImportAttempt(
        shown,
        module,
        result.returncode == 0,
        trace.exc_type,
        trace.message or "",
        result.stderr[-4000:],
        result.returncode,
    )
    if not attempt.ok and trace.exc_type is None:
        said = (result.stderr.strip().splitlines() or ["no output"])[-1]
        attempt.error_type, attempt.message = "exit", f"exit {result.returncode}: {said}"
    folders = [str(Path(a).resolve().parent) for a in argv[1:2] if a.endswith(".py")]
    attempt.files = find_files(module, [*folders, *sys_path]) if module else []
    return attempt


def module_of(trace: Any) -> str | None:
    """The module an ImportError is about: named in it, or in the failing import line."""
    named = _NO_MODULE.search(trace.message or "")
    if named:
        return str(named.group(1))
    for frame in reversed(trace.python_frames):
        mo = _IMPORT_LINE.match(frame.text or "")
        if mo:
            return str(mo.group(1) or mo.group(2))
    return None


def find_files(module: str, folders: list[str]) -> list[str]:
    """Compiled files in ``folders`` that are ``module`` under any tag."""
    parts = module.split(".")
    found: list[str] = []
    for entry in folders:
        folder = Path(entry, *parts[:-1])
        try:
            names = sorted(p.name for p in folder.iterdir())
        except OSError:
            continue
        for name in names:
            if name.startswith(parts[-1] + ".") and name.endswith(".so"):
                path = str(folder / name)
                if path not in found:
                    found.append(path)
    return found


def _torch_requirement(dist: dict[str, Any] | None) -> dict[str, Any] | None:
    if not dist:
        return None
    requires = [r for r in dist.get("requires") or [] if _TORCH_REQ.match(r)]
    return {**dist, "requires": requires}


# --- the analysis -------------------------------------------------------------------


def explain(env: TorchEnv, attempt: ImportAttempt, python: str | None, cwd: str) -> list[Finding]:
    """Findings for one import attempt (an info note when it worked)."""
    if attempt.ok:
        where = f" from {attempt.origin}" if attempt.origin else ""
        return [
            Finding(
                "extension-import-ok",
                INFO,
                f"{attempt.what} works in this interpreter{where}",
                "torch imported first, then the module, with no loader or import error.",
                "Nothing to do.",
            )
        ]
    if env.torch is None:
        return []  # torch itself does not import: the probe's findings say why
    files = [Path(f) for f in attempt.files]
    named = _LOADER_OBJECT.search(attempt.message)
    if named and Path(named.group(1)) not in files:
        files.insert(0, Path(named.group(1)))
    ctx = _ExtensionContext(env, python, cwd, attempt, files)
    text = f"{attempt.message}\n{attempt.traceback}"
    undefined = import_failure.UNDEFINED_RE.search(text)
    cannot_open = import_failure.CANNOT_OPEN_RE.search(text)
    version = import_failure.VERSION_RE.search(text)
    if version:
        return [
            ctx.symbol_version(version.group("lib"), version.group("ver"), version.group("obj"))
        ]
    if undefined:
        return [ctx.undefined_symbol(Path(undefined.group("obj")), undefined.group("sym"))]
    if cannot_open and not import_failure.BAD_ELF_RE.search(text):
        return [ctx.missing_library(cannot_open.group("lib"))]
    if import_failure.BAD_ELF_RE.search(text):
        return [ctx.bad_elf()]
    mismatch = ctx.python_mismatch_finding()
    if mismatch is not None:
        return [mismatch]
    if attempt.error_type == "ModuleNotFoundError" and not files:
        return [ctx.not_found()]
    return [ctx.generic()]


class _ExtensionContext(import_failure.ImportContext):
    """The import-failure analysis, told about the user's extension instead of torch's _C."""

    def __init__(
        self,
        env: TorchEnv,
        python: str | None,
        cwd: str,
        attempt: ImportAttempt,
        files: list[Path],
    ) -> None:
        assert env.torch is not None
        super().__init__(env, python, cwd, env.torch.package_dir, files, attempt.message)
        self.attempt = attempt
        self.what = attempt.what
        self.subject = files[0].name if files else (attempt.module or "the extension")
        self.module = attempt.module or (files[0].name.split(".")[0] if files else "it")

    def matching_exts(self) -> list[Path]:
        """Files this interpreter would load: its EXT_SUFFIX, .abi3.so or an untagged .so."""
        py = self.env.python
        return [
            e
            for e in self.exts
            if e.name.endswith(py.ext_suffix)
            or e.name.endswith(".abi3.so")
            or elf.extension_tag(e.name) is None
        ]

    def objects(self) -> list[Path]:
        return self.matching_exts() or self.exts

    def loadable(self) -> str:
        py = self.env.python
        stem = self.module.rsplit(".", 1)[-1]
        return f"`{stem}{py.ext_suffix}`, `{stem}.abi3.so` or `{stem}.so`"

    def _reinstall_fix(self, note: str) -> str:
        dist = self.attempt.distribution
        if dist:
            how = (
                f"reinstall its package: `{quote(self.exe)} -m pip install --force-reinstall "
                f"--no-deps {dist['name']}` ({note})"
            )
        else:
            how = (
                f"run its build again with this interpreter (`{quote(self.exe)} -m pip install .` "
                f"or `{quote(self.exe)} setup.py build_ext --inplace` in its source folder)"
            )
        version = self.env.python.version
        return f"Rebuild {self.subject} for this Python {version} ({how}; torch itself is fine)"

    def _owner_fix(self, obj: Path) -> str:
        return _rebuild_against_this_torch(obj, self.attempt.distribution, self.exe, self.version)

    def undefined_symbol(self, obj: Path, symbol: str) -> Finding:
        finding = super().undefined_symbol(obj, symbol)
        if finding.id != "extension-symbol-missing" or not symbol.startswith("_Z"):
            return finding
        extra = _symbol_history(
            elf.demangle([symbol])[symbol],
            self.torch_dir / "include",
            self.attempt.distribution,
            self.version,
        )
        return replace(finding, why=f"{finding.why} {' '.join(extra)}")

    def _cxx_abi(self, obj: Path, twin: elf.AbiTwin) -> Finding:
        return replace(super()._cxx_abi(obj, twin), fix=_cxx11_abi_fix(obj, twin))

    def missing_library(self, lib: str) -> Finding:
        return _library_not_found(self, lib)

    def bad_elf(self) -> Finding:
        import platform

        return Finding(
            "extension-wrong-platform",
            ERROR,
            f"{self.subject} is for another platform or is damaged",
            f"{self.what} fails with: {self.said} This machine is {platform.machine()}.",
            self._owner_fix(self.exts[0] if self.exts else Path(self.subject)),
        )

    def not_found(self) -> Finding:
        return _module_not_found(self)

    def generic(self) -> Finding:
        return _raised_by_the_module(self)


# --- what each finding says about the extension ---------------------------------------


def _rebuild_against_this_torch(
    obj: Path, dist: dict[str, Any] | None, exe: str, version: str
) -> str:
    """The fix for an extension built against another torch: its package's build for this
    torch, or its own build run again."""
    if dist:
        wants = "; ".join(dist.get("requires") or []) or "no torch version"
        return (
            f"{obj.name} belongs to {dist['name']} {dist['version']}, which asks for "
            f"{wants}; install the build of {dist['name']} made for torch {version}, or "
            f"rebuild it from source against this torch (`{quote(exe)} -m pip install "
            f"--no-build-isolation --force-reinstall --no-binary {dist['name']} "
            f"{dist['name']}`)."
        )
    return (
        f"Rebuild {obj.name} against this torch {version} (rerun its build with "
        f"{exe}: `{quote(exe)} -m pip install --no-build-isolation .` or "
        f"`{quote(exe)} setup.py build_ext --inplace` in its source folder)."
    )


def _symbol_history(
    demangled: str, include: Path, dist: dict[str, Any] | None, version: str
) -> list[str]:
    """Why a C++ function the extension calls is missing from this torch: the torch its
    package was built for, and whether this torch's headers still declare it."""
    declared = _declared_in_headers(include, demangled)
    extra = []
    if dist and dist.get("requires"):
        extra.append(
            f"Its package {dist['name']} {dist['version']} was built for "
            f"{'; '.join(dist['requires'])}, and this is torch {version}."
        )
    if declared:
        extra.append(
            f"This torch's headers still declare `{_short_name(demangled)}` "
            f"({declared}), with another signature: the extension was compiled against "
            "another torch's declaration."
        )
    else:
        extra.append(
            f"This torch's headers do not declare `{_short_name(demangled)}` at all: it "
            f"was removed or renamed before torch {version}, or the extension was "
            "built against a newer torch."
        )
    return extra


def _cxx11_abi_fix(obj: Path, twin: elf.AbiTwin) -> str:
    """The _GLIBCXX_USE_CXX11_ABI flag to change in the extension's build."""
    if twin.wanted_cxx11:
        return (
            f"Rebuild {obj.name} with -D_GLIBCXX_USE_CXX11_ABI=0, the old ABI this torch "
            "was built with (`torch._C._GLIBCXX_USE_CXX11_ABI` is False); "
            "torch.utils.cpp_extension and CMake's TorchConfig set it for you when the flag "
            "is not given by hand."
        )
    return (
        f"Drop -D_GLIBCXX_USE_CXX11_ABI=0 from {obj.name}'s compile flags "
        "(extra_compile_args, CXXFLAGS, CMAKE_CXX_FLAGS) and rebuild it: this torch uses "
        "the C++11 ABI (`torch._C._GLIBCXX_USE_CXX11_ABI` is True), and "
        "torch.utils.cpp_extension and CMake's TorchConfig take the right value from "
        "torch when the flag is not given by hand."
    )


def _library_not_found(ctx: _ExtensionContext, lib: str) -> Finding:
    """A shared library the extension needs (DT_NEEDED) that the loader cannot find: torch's
    own (found once `import torch` loaded it) or another."""
    needers = []
    for obj in ctx.exts:
        link = elf.read_linkage(obj)
        if link and lib in link.needed:
            needers.append(obj)
    who = ", ".join(o.name for o in needers) or ctx.subject
    torch_lib = ctx.torch_dir / "lib"
    runpath = [str(d) for o in needers for d in (elf.read_linkage(o) or _NONE).search_dirs()]
    searched = f"its RUNPATH ({', '.join(runpath)})" if runpath else "no RUNPATH of its own"
    if (torch_lib / lib).is_file():
        return Finding(
            "extension-torch-library-not-found",
            ERROR,
            f"{who} needs torch's own {lib}, and the loader does not look in {torch_lib}",
            f"{ctx.what} fails with: {ctx.said} {lib} is in {torch_lib}, but {who} has "
            f"{searched}: the loader finds torch's libraries only once `import torch` has "
            "loaded them.",
            f"Import torch before {ctx.module} (`import torch` first), or link {who} with "
            f"`{quote(f'-Wl,-rpath,{torch_lib}')}` so it finds them itself.",
        )
    return Finding(
        "library-missing",
        ERROR,
        f"{who} needs {lib}, which the loader cannot find",
        f"{ctx.what} fails with: {ctx.said} {who} has {searched}; {lib} is not there, not "
        f"on LD_LIBRARY_PATH and not in the system's library folders. It is not one of "
        f"torch's own libraries either (those are in {torch_lib}).",
        f"Install the package that provides {lib}, or add the folder that holds it to "
        f"LD_LIBRARY_PATH (or rebuild {who} with `-Wl,-rpath,FOLDER`).",
    )


def _module_not_found(ctx: _ExtensionContext) -> Finding:
    return Finding(
        "extension-not-found",
        ERROR,
        f"{ctx.what}: there is no module {ctx.module} where this interpreter looks",
        f"{ctx.what} fails with: {ctx.said} No {ctx.module}.py, {ctx.module}/ package "
        f"or compiled {ctx.loadable()} is in the folders Python searched (the script's "
        "folder or the current one, then this interpreter's sys.path).",
        f"Run it from the folder that holds the module, add that folder to PYTHONPATH, or "
        f"install its package into {ctx.exe} (`{quote(ctx.exe)} -m pip install ...`).",
    )


def _raised_by_the_module(ctx: _ExtensionContext) -> Finding:
    """Not a loader error: the module's own code raised."""
    return Finding(
        "extension-import-failed",
        ERROR,
        f"{ctx.what} fails with {ctx.attempt.error_type or 'an error'}",
        f"{ctx.what} raised: {ctx.said} This is not a loader error (no undefined "
        "symbol or missing library), so the module's own code raised it.",
        f"Read the traceback (`onboard doctor --import {ctx.module} -v` shows its last "
        "frames); if torch raised it, `onboard locate -- python script.py` walks it to the "
        "check.",
        tuple(ctx.attempt.traceback.strip().splitlines()[-12:]),
    )


class _NoLinkage:
    def search_dirs(self) -> list[Path]:
        return []


_NONE = _NoLinkage()


def _short_name(demangled: str) -> str:
    """``at::native::foo(at::Tensor const&, long)`` -> ``at::native::foo``."""
    return demangled.split("(", 1)[0]


def _declared_in_headers(include: Path, demangled: str) -> str | None:
    """Where this torch's headers name the function (``path:line``), if they do."""
    name = _short_name(demangled).rsplit("::", 1)[-1]
    if not name or not include.is_dir():
        return None
    if proc.which("grep") is not None:
        found = proc.run(
            ["grep", "-rnw", "--include=*.h", "-m1", name, str(include)],
            check=False,
            timeout=60,
        )
        first = (found.stdout.splitlines() or [""])[0]
        if first:
            path, line, _rest = first.split(":", 2)
            return f"{Path(path).relative_to(include)}:{line}"
        return None
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    for header in include.rglob("*.h"):
        try:
            text = header.read_text(encoding="utf-8", errors="replace")
        except OSError:  # removed or replaced by a folder since the walk saw it
            continue
        mo = pattern.search(text)
        if mo:
            return f"{header.relative_to(include)}:{text.count(chr(10), 0, mo.start()) + 1}"
    return None
