"""The torch probe: what torch a target interpreter has, as a frozen dataclass.

The probe runs ``children/_probe_child.py`` in a child interpreter (``--python``,
default the current one); onboard itself never imports torch. Facts that come
from the binary rather than from Python (the build prefix baked in by
``__FILE__``, whether DWARF debug info is present) are read here from the ELF
files with pyelftools.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import re
import signal
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from onboard import proc
from onboard.cache import cache_dir, read_valid, write_json
from onboard.errors import OnboardError
from onboard.jsonable import spec
from onboard.shell import quote

PROBE_TIMEOUT = 180.0
_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_LOCAL_RE = re.compile(r"\+git([0-9a-f]{7,40})\b")
_NIGHTLY_RE = re.compile(r"\.dev(\d{8})")
# A source path compiled into the library through __FILE__ (TORCH_CHECK, warnings).
_SOURCE_RE = re.compile(
    rb"(/[\x21-\x7e]*?)/((?:aten/src|c10|torch/csrc|caffe2|third_party|build)/[\x21-\x7e]*?"
    rb"\.(?:cpp|cc|c|h|hpp|cu|cuh))(?=\x00)"
)


# --- children that import torch or torchgen ---------------------------------
# Python puts the current folder (for `-c`, `-m`, the REPL) or a script's own
# folder first on sys.path. Started from a PyTorch checkout, a child's
# `import torch` would load the checkout's uncompiled torch/ instead of the
# installed torch onboard is asked about (docs/pytorch-facts.md "Debugger and ABI
# facts"). Such children run from an empty folder of onboard's own, with
# PYTHONSAFEPATH=1: Python 3.11+ then puts no such folder on sys.path at
# all; older interpreters ignore the variable, and the empty folder holds.
SAFE_PATH_ENV = {"PYTHONSAFEPATH": "1"}
_NEUTRAL: list[Path] = []


def neutral_cwd() -> Path:
    """An empty folder (made once per process, removed at exit) to start children in."""
    if not _NEUTRAL or not _NEUTRAL[0].is_dir():
        import atexit
        import shutil
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="onboard-cwd-"))
        atexit.register(shutil.rmtree, folder, True)
        _NEUTRAL[:] = [folder]
    return _NEUTRAL[0]


def isolated(cwd: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """``proc.run`` keywords for a child interpreter that imports torch or torchgen:
    ``cwd`` (default an empty folder) and PYTHONSAFEPATH=1."""
    return {"cwd": cwd if cwd is not None else neutral_cwd(), "extra_env": SAFE_PATH_ENV}


def folder_torch(folder: str | os.PathLike[str]) -> Path | None:
    """The ``torch/`` package in ``folder``: what `python -c`, the REPL and a
    script saved in ``folder`` import first when started there."""
    torch_dir = Path(folder) / "torch"
    return torch_dir if (torch_dir / "__init__.py").is_file() else None


def is_compiled(torch_dir: Path) -> bool:
    """Whether a torch package has its C extension (a source tree built in place does)."""
    return any(torch_dir.glob("_C.*so")) or any(torch_dir.glob("_C.*pyd"))


def shadowing_tree(folder: str | os.PathLike[str]) -> Path | None:
    """``folder``'s torch/ when it is a source tree's without the compiled
    ``torch._C``: started there, Python imports it and `import torch` fails."""
    torch_dir = folder_torch(folder)
    return torch_dir if torch_dir is not None and not is_compiled(torch_dir) else None


@dataclass(frozen=True)
class PythonInfo:
    executable: str
    version: str
    implementation: str
    abiflags: str
    soabi: str
    ext_suffix: str
    prefix: str
    ldlibrary: str
    cwd: str


@dataclass(frozen=True)
class Commit:
    """Which source commit the installed binary was built from.

    kind: ``release`` (a tag's commit), ``nightly`` (a commit on the
    ``nightly`` branch whose subject names the main sha), ``local`` (a source
    build: ``+git<sha7>``), ``unknown`` (``git_version == "Unknown"``).
    """

    kind: str
    sha: str | None
    tag: str | None = None
    note: str = ""


@dataclass(frozen=True)
class BuildPrefix:
    """The folder the binary was built in, as ``__FILE__`` paths name it."""

    prefix: str | None
    method: str
    # repo-relative paths the binary names (in JSON, how many: there are thousands)
    source_paths: tuple[str, ...] = field(default=(), metadata=spec(convert=len))


@dataclass(frozen=True)
class TorchInfo:
    version: str
    file: str
    c_file: str | None
    git_version: str | None
    cuda: str | None
    hip: str | None
    debug: bool
    cxx11_abi: bool
    cudnn: int | None
    cuda_available: bool
    devices: tuple[dict[str, str], ...]
    config: str
    build_settings: dict[str, str] = field(default_factory=dict)
    # Why torch.cuda.is_available() is False on a CUDA build, when torch said
    # (e.g. "The NVIDIA driver on your system is too old").
    cuda_error: str | None = None

    @property
    def package_dir(self) -> Path:
        return Path(self.file).parent


@dataclass(frozen=True)
class TorchEnv:
    python: PythonInfo
    torch: TorchInfo | None
    import_error: dict[str, Any] | None
    candidates: tuple[str, ...]
    spec_origin: str | None
    dist: dict[str, Any] | None
    numpy: str | None
    commit: Commit
    build_prefix: BuildPrefix
    has_debug_info: bool | None
    # sys.path of the child, absolute, in import order, and the PYTHONPATH it
    # ran with: what tells a shadowing torch from cwd apart from one on PYTHONPATH.
    sys_path: tuple[str, ...] = ()
    pythonpath: tuple[str, ...] = ()

    @property
    def installed(self) -> bool:
        return self.spec_origin is not None

    @property
    def editable(self) -> bool:
        direct = (self.dist or {}).get("direct_url") or {}
        return bool((direct.get("dir_info") or {}).get("editable"))


@dataclass(frozen=True)
class Packages:
    """Where an interpreter would import packages from (found, not imported)."""

    python_version: str  # "3.11"
    folders: dict[str, Path | None]  # package -> its folder (None: not importable)


def find_packages(
    python: str,
    *names: str,
    cwd: str | os.PathLike[str] | None = None,
    isolate: bool = True,
    what: str | None = None,
    next_step: str | None = None,
    timeout: float = 60,
) -> Packages:
    """The folders of ``names`` as ``python`` would import them, without importing them.

    ``isolate``: from an empty folder (or ``cwd``) with PYTHONSAFEPATH=1, as the probe
    sees the installed packages; otherwise from ``cwd`` as a plain run there would (a
    checkout's torch/ in that folder is then what it finds). An interpreter that cannot
    run or answer raises ``OnboardError`` (``proc.NoAnswer``, ``proc.ChildTimeout``)."""
    where = isolated(cwd) if isolate else {"cwd": cwd}
    asked = proc.ask_child(
        python,
        "_spec_child.py",
        *names,
        **where,
        timeout=timeout,
        what=what or f"The interpreter {python!r}",
        next_step=next_step,
    )
    data = asked.data if isinstance(asked.data, dict) else {}
    found = data.get("packages") or {}
    return Packages(
        python_version=str(data.get("python", "")),
        folders={n: Path(found[n]) if found.get(n) else None for n in names},
    )


def probe(python: str | None = None, *, cwd: str | os.PathLike[str] | None = None) -> TorchEnv:
    """Probe the torch that ``python`` imports: the installed one, seen from an
    empty folder (or ``cwd``) with PYTHONSAFEPATH=1, never a checkout's torch/
    from the folder onboard runs in (``shadowing_tree`` tells about that)."""
    exe = python or sys.executable
    if os.sep in exe:  # a path from this folder: the probe runs in another one
        exe = os.path.abspath(exe)
    if os.sep not in exe and proc.which(exe) is None:
        raise OnboardError(
            f"There is no interpreter called {exe!r} on PATH.",
            next_step="Pass --python with the full path of the interpreter your project uses "
            "(for a venv: /path/to/venv/bin/python).",
        )
    if os.sep in exe and (not os.access(exe, os.X_OK) or os.path.isdir(exe)):
        raise OnboardError(
            f"There is no Python interpreter at {exe}.",
            next_step="Pass --python with the path of the interpreter your project uses (for a "
            "venv: /path/to/venv/bin/python; `python -c 'import sys; print(sys.executable)'` "
            "prints it).",
        )
    next_step = (
        f"Check that it is a working Python 3 (`{quote(exe)} -c 'import sys; print(sys.version)'`)"
        " and pass it with --python."
    )
    try:
        asked = proc.ask_child(
            exe,
            "_probe_child.py",
            **isolated(cwd),
            timeout=PROBE_TIMEOUT,
            what=f"The interpreter {exe!r}",
            next_step=next_step,
        )
    except proc.ChildTimeout as exc:
        raise OnboardError(
            f"The interpreter {exe!r} did not finish `import torch` within {PROBE_TIMEOUT:g} s "
            "and was stopped.",
            next_step=f"Time `{quote(exe)} -c 'import torch'` yourself; a hang there usually comes "
            "from a network file system or a CUDA driver stuck initialising. Then run "
            "`onboard doctor` again.",
        ) from exc
    except proc.NoAnswer:
        raise  # it started, and said why it could not answer
    except OnboardError as exc:  # it could not be started
        raise OnboardError(
            f"Could not run the Python interpreter {exe!r}: {exc.message}",
            next_step="Pass --python with the path of the interpreter your project uses "
            "(for a venv: /path/to/venv/bin/python).",
        ) from exc
    payload, result = asked.data, asked.result
    if payload.get("stage") != "done":
        # The child answered before `import torch`, then died in it (a
        # segfault or abort inside a mismatched extension).
        payload["import_error"] = {
            "type": "crash",
            "message": f"the interpreter {_death(result.returncode)} while importing torch",
            "traceback": result.stderr[-4000:],
            "returncode": result.returncode,
        }
    return from_payload(payload)


def from_payload(payload: dict[str, Any]) -> TorchEnv:
    python = PythonInfo(**payload["python"])
    tinfo = None
    if payload.get("torch"):
        t = dict(payload["torch"])
        t["devices"] = tuple(t.get("devices") or ())
        t["build_settings"] = parse_config(t.get("config") or "")
        tinfo = TorchInfo(**t)
    torch_dir = _torch_dir(tinfo, payload.get("spec_origin"))
    lib = find_library(torch_dir) if torch_dir else None
    return TorchEnv(
        python=python,
        torch=tinfo,
        import_error=payload.get("import_error"),
        candidates=tuple(payload.get("candidates") or ()),
        spec_origin=payload.get("spec_origin"),
        dist=payload.get("dist"),
        numpy=payload.get("numpy"),
        commit=classify(tinfo.version, tinfo.git_version) if tinfo else Commit("unknown", None),
        build_prefix=scan_build_prefix(lib) if lib else BuildPrefix(None, "no torch library found"),
        has_debug_info=has_debug_info(lib) if lib else None,
        sys_path=tuple(payload.get("sys_path") or ()),
        pythonpath=tuple(payload.get("pythonpath") or ()),
    )


def _death(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with status {returncode}"


def _torch_dir(tinfo: TorchInfo | None, spec_origin: str | None) -> Path | None:
    if tinfo is not None:
        return tinfo.package_dir
    if spec_origin:
        return Path(spec_origin).parent
    return None


def classify(version: str, git_version: str | None) -> Commit:
    """The commit a build came from (docs/pytorch-facts.md "Identifying the installed build")."""
    sha = git_version if git_version and _SHA_RE.match(git_version) else None
    local = _LOCAL_RE.search(version)
    if local:
        return Commit(
            "local",
            sha or local.group(1),
            note="a local source build (`+git<sha>` in __version__)",
        )
    if sha is None:
        return Commit(
            "unknown",
            None,
            note=f"torch.version.git_version is {git_version!r}: the wheel was built outside git",
        )
    nightly = _NIGHTLY_RE.search(version)
    if nightly:
        return Commit(
            "nightly",
            sha,
            note="a nightly: git_version is a commit on the `nightly` branch whose subject "
            "names the main commit as `(<sha>)`",
        )
    base = version.split("+", 1)[0]
    release = re.match(r"^(\d+\.\d+\.\d+)(rc\d+)?$", base)
    tag = f"v{release.group(1)}{release.group(2) or ''}" if release else None
    return Commit("release" if tag else "unknown", sha, tag=tag)


def parse_config(text: str) -> dict[str, str]:
    """``torch.__config__.show()`` -> {"BUILD_TYPE": "Release", "USE_CUDA": "OFF", ...}."""
    settings: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("- Build settings:"):
            for part in line[len("- Build settings:") :].split(","):
                if "=" in part:
                    key, _, value = part.strip().partition("=")
                    settings[key.strip()] = value.strip()
        elif line.startswith("- C++ Version:"):
            settings.setdefault("CXX_VERSION", line.split(":", 1)[1].strip())
        elif line.startswith("- GCC ") or line.startswith("- clang"):
            settings.setdefault("COMPILER", line[2:].strip())
    return settings


def find_library(torch_dir: Path) -> Path | None:
    """The library that holds ATen's checks (and so most ``__FILE__`` strings)."""
    for name in ("libtorch_cpu.so", "libtorch_cpu.dylib", "libtorch.so"):
        candidate = torch_dir / "lib" / name
        if candidate.is_file():
            return candidate
    return None


def _cache_file(kind: str, lib: Path) -> Path:
    st = lib.stat()
    key = hashlib.sha1(f"{lib.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return cache_dir() / f"{kind}-{key}.json"


def _rodata_ranges(lib: Path) -> list[tuple[int, int]]:
    """Offsets of the read-only data sections, where string literals live."""
    try:
        from elftools.elf.elffile import ELFFile

        with lib.open("rb") as fh:
            elf = ELFFile(fh)
            ranges = [
                (s["sh_offset"], s["sh_size"])
                for s in elf.iter_sections()
                if s.name in (".rodata", ".rodata.str1.1", ".rodata.str1.8")
            ]
            return ranges
    except Exception:  # noqa: BLE001 - not an ELF file we can read: scan it whole
        return []


_PREFIX_SHAPE = {"prefix": (str, None), "method": str, "source_paths": [str]}


def scan_build_prefix(lib: Path) -> BuildPrefix:
    """Find the build folder compiled into the library's ``__FILE__`` strings.

    Method: in the library's ``.rodata`` section (the whole file when there is
    none), every NUL-terminated string that looks like an absolute path
    containing ``/aten/src/``, ``/c10/``, ``/torch/csrc/``, ``/third_party/``
    or ``/build/`` and ending in a C/C++/CUDA extension is split at that
    folder; the most frequent left part is the prefix. The result is cached
    per library (path, size, mtime).
    """
    cache = _cache_file("prefix", lib)
    data = read_valid(cache, _PREFIX_SHAPE)
    if data:
        return BuildPrefix(data["prefix"], data["method"], tuple(data["source_paths"]))
    counts: Counter[bytes] = Counter()
    paths: dict[bytes, set[bytes]] = {}
    ranges = _rodata_ranges(lib)
    with lib.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        views = [mm[off : off + size] for off, size in ranges] if ranges else [mm[:]]
        for view in views:
            for mo in _SOURCE_RE.finditer(view):
                counts[mo.group(1)] += 1
                paths.setdefault(mo.group(1), set()).add(mo.group(2))
    where = "the .rodata section" if ranges else "the whole file"
    if not counts:
        result = BuildPrefix(None, f"no __FILE__ source paths found in {where} of {lib.name}")
    else:
        prefix, hits = counts.most_common(1)[0]
        result = BuildPrefix(
            prefix.decode(),
            f"most frequent folder before aten/src, c10, torch/csrc, third_party or build/ in "
            f"{hits} __FILE__ strings of {where} of {lib.name}",
            tuple(sorted(p.decode() for p in paths[prefix])),
        )
    write_json(cache, asdict(result))  # (a folder in its place is replaced: onboard.cache)
    return result


def has_debug_info(lib: Path) -> bool | None:
    """True when the library carries DWARF (``.debug_info``) or a debuglink."""
    try:
        from elftools.elf.elffile import ELFFile

        with lib.open("rb") as fh:
            elf = ELFFile(fh)
            names = {s.name for s in elf.iter_sections()}
    except Exception:  # noqa: BLE001 - unreadable or not ELF
        return None
    return ".debug_info" in names or ".gnu_debuglink" in names


# --- loader checks (onboard doctor: children/_loader_child.py) ---


@dataclass(frozen=True)
class LoaderCheck:
    """What the target interpreter's process can resolve.

    ``missing``: of the symbols asked about, those the interpreter (python
    binary plus its libpython) does not export. ``libraries``: for each
    library name, the file the dynamic loader picks in that process (None
    when it cannot load it).
    """

    missing: tuple[str, ...]
    libraries: dict[str, str | None]


def check_loader(
    python: str | None,
    symbols: list[str] | tuple[str, ...] = (),
    libraries: list[str] | tuple[str, ...] = (),
    *,
    cwd: str | os.PathLike[str] | None = None,
) -> LoaderCheck | None:
    """Ask ``python`` which ``symbols`` it lacks and where ``libraries`` load from.

    Runs a child of the target interpreter (its own environment, so
    LD_LIBRARY_PATH and a conda env's libstdc++ count). Returns None when the
    child cannot answer (no ctypes, not Linux).
    """
    exe = python or sys.executable
    try:
        data = proc.ask_child(
            exe, "_loader_child.py", json.dumps(list(symbols)), json.dumps(list(libraries)),
            **isolated(cwd), timeout=60, what=f"The loader check in {exe!r}",
        ).data  # fmt: skip
    except OnboardError:  # not started, no answer, or too slow: no ctypes, not Linux
        return None
    return LoaderCheck(tuple(data["missing"]), dict(data["libraries"]))
