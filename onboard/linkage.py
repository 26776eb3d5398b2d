"""What a shared object links against, read from its ELF headers with pyelftools.

`onboard doctor` reads this when torch's C extension will not import: the
dynamic section (DT_NEEDED, RPATH/RUNPATH), the undefined Python API symbols,
the symbol versions it needs from libstdc++ (``GLIBCXX_3.4.x``) and which
std::string ABI its C++ symbols are mangled with. That is what a person reads
with ``readelf -d``, ``readelf -V`` and ``nm -D`` to tell a Python mismatch
from a C++ ABI mismatch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from onboard import proc
from onboard.jsonable import spec

# The C++11 std::string/std::list ABI puts its types in the inline namespace
# std::__cxx11 (mangled "St7__cxx11" / "7__cxx11"); the old ABI has none.
CXX11_MARK = "__cxx11"
_LIBPYTHON_RE = re.compile(r"^libpython(\d+)\.(\d+)([a-z]*)\.so")
_PY_API_RE = re.compile(r"^_?Py[A-Z_a-z]")
# A CPython extension filename: _C.cpython-311-x86_64-linux-gnu.so, _C.abi3.so, _C.so
_EXT_TAG_RE = re.compile(r"^[^.]+\.(?P<tag>[^/]+)\.so$")
_CPYTHON_TAG_RE = re.compile(r"^cpython-(\d)(\d+)([a-z]*)-")


@dataclass(frozen=True)
class Linkage:
    path: str
    machine: str = field(metadata=spec(omit=True))
    elf_class: int = field(metadata=spec(omit=True))
    soname: str | None
    needed: tuple[str, ...]
    # In JSON one "runpath": the list the loader reads (RUNPATH, else RPATH), see json_extra.
    rpath: tuple[str, ...] = field(metadata=spec(omit=True))
    runpath: tuple[str, ...] = field(metadata=spec(omit=True))
    # undefined Py*/_Py* symbols: the CPython C API it calls (in JSON, how many)
    python_symbols: tuple[str, ...] = field(metadata=spec(convert=len))
    cxx11_undefined: int  # undefined C++ symbols mangled with std::__cxx11 (new ABI)
    cxx11_defined: int  # defined C++ symbols mangled with std::__cxx11
    version_needs: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def libpython(self) -> str | None:
        return next((n for n in self.needed if _LIBPYTHON_RE.match(n)), None)

    @property
    def libpython_version(self) -> str | None:
        """ "3.9" when the object has a DT_NEEDED on libpython3.9.so.1.0."""
        lib = self.libpython
        mo = _LIBPYTHON_RE.match(lib) if lib else None
        return f"{mo.group(1)}.{mo.group(2)}" if mo else None

    def search_dirs(self) -> list[Path]:
        """RUNPATH (or RPATH) entries with $ORIGIN expanded, as the loader reads them."""
        origin = str(Path(self.path).parent)
        entries = self.runpath or self.rpath
        return [Path(e.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)) for e in entries]

    def json_extra(self) -> dict[str, object]:
        return {"runpath": self.runpath or self.rpath, "libpython": self.libpython}


def version_key(name: str) -> tuple[int, ...]:
    """GLIBCXX_3.4.9 < GLIBCXX_3.4.32 (numeric, not string, order)."""
    return tuple(int(p) for p in re.findall(r"\d+", name))


def read_linkage(path: str | Path) -> Linkage | None:
    """The linkage of one ELF shared object; None when it is not a readable ELF file."""
    try:
        from elftools.common.exceptions import ELFError
        from elftools.elf.dynamic import DynamicSection
        from elftools.elf.elffile import ELFFile
        from elftools.elf.gnuversions import GNUVerNeedSection
    except ImportError:  # pragma: no cover - pyelftools is a dependency
        return None
    needed: list[str] = []
    rpath: list[str] = []
    runpath: list[str] = []
    soname = None
    py_syms: list[str] = []
    cxx11_undef = cxx11_def = 0
    needs: dict[str, tuple[str, ...]] = {}
    try:
        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            for section in elf.iter_sections():
                if isinstance(section, DynamicSection):
                    for tag in section.iter_tags():
                        tag = cast(Any, tag)  # pyelftools sets .needed/.soname/... per tag kind
                        if tag.entry.d_tag == "DT_NEEDED":
                            needed.append(tag.needed)
                        elif tag.entry.d_tag == "DT_SONAME":
                            soname = tag.soname
                        elif tag.entry.d_tag == "DT_RPATH":
                            rpath += tag.rpath.split(":")
                        elif tag.entry.d_tag == "DT_RUNPATH":
                            runpath += tag.runpath.split(":")
                elif isinstance(section, GNUVerNeedSection):
                    for verneed, aux in section.iter_versions():
                        needs[str(verneed.name)] = tuple(a.name for a in aux)
            dynsym = elf.get_section_by_name(".dynsym")
            if dynsym is not None:
                for sym in dynsym.iter_symbols():  # type: ignore[attr-defined]
                    name = sym.name
                    if not name:
                        continue
                    undefined = sym["st_shndx"] == "SHN_UNDEF"
                    if undefined and _PY_API_RE.match(name):
                        py_syms.append(name)
                    if CXX11_MARK in name and name.startswith("_Z"):
                        if undefined:
                            cxx11_undef += 1
                        else:
                            cxx11_def += 1
            machine = str(elf["e_machine"])
            elf_class = int(elf.elfclass)
    except (OSError, ELFError, ValueError):
        return None
    return Linkage(
        path=str(path),
        machine=machine,
        elf_class=elf_class,
        soname=soname,
        needed=tuple(needed),
        rpath=tuple(p for p in rpath if p),
        runpath=tuple(p for p in runpath if p),
        python_symbols=tuple(sorted(py_syms)),
        cxx11_undefined=cxx11_undef,
        cxx11_defined=cxx11_def,
        version_needs=needs,
    )


def defined_versions(path: str | Path, prefix: str) -> tuple[str, ...]:
    """Symbol versions a library defines (``readelf -V``: GLIBCXX_3.4 ... 3.4.30)."""
    try:
        from elftools.elf.elffile import ELFFile
        from elftools.elf.gnuversions import GNUVerDefSection

        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            names: list[str] = []
            for section in elf.iter_sections():
                if isinstance(section, GNUVerDefSection):
                    for _verdef, aux in section.iter_versions():
                        names += [a.name for a in aux if a.name.startswith(prefix)]
    except Exception:  # noqa: BLE001 - unreadable: the caller says "unknown"
        return ()
    return tuple(sorted(set(names), key=version_key))


def defines(path: str | Path, names: list[str]) -> set[str]:
    """Which of ``names`` the library defines in its dynamic symbol table."""
    wanted = set(names)
    found: set[str] = set()
    try:
        from elftools.elf.elffile import ELFFile

        with open(path, "rb") as fh:
            dynsym = ELFFile(fh).get_section_by_name(".dynsym")
            if dynsym is None:
                return found
            for sym in dynsym.iter_symbols():  # type: ignore[attr-defined]
                if sym.name in wanted and sym["st_shndx"] != "SHN_UNDEF":
                    found.add(sym.name)
    except Exception:  # noqa: BLE001
        return set()
    return found


# --- Python tags -------------------------------------------------------------


def extension_tag(filename: str) -> str | None:
    """``_C.cpython-39-x86_64-linux-gnu.so`` -> ``cpython-39-x86_64-linux-gnu``."""
    mo = _EXT_TAG_RE.match(Path(filename).name)
    return mo.group("tag") if mo else None


def tag_python_version(tag: str | None) -> str | None:
    """``cpython-39-x86_64-linux-gnu`` -> ``3.9`` (``cpython-313t-...`` -> ``3.13t``)."""
    mo = _CPYTHON_TAG_RE.match(tag or "")
    return f"{mo.group(1)}.{mo.group(2)}{mo.group(3)}" if mo else None


# --- C++ ABI twins ------------------------------------------------------------


def name_prefix(mangled: str) -> str | None:
    """The mangled qualified name before the signature: ``_ZN3c106detail14torchCheckFail``.

    Both std::string ABIs mangle the function's own name the same way; only
    the parameter types differ, so this prefix finds a symbol's other-ABI twin.
    """
    if mangled.startswith("_ZN"):
        i = 3
        while i < len(mangled) and mangled[i] in "rVKRO":
            i += 1
    elif mangled.startswith("_Z"):
        i = 2
    else:
        return None
    start = i
    while i < len(mangled) and mangled[i].isdigit():
        j = i
        while j < len(mangled) and mangled[j].isdigit():
            j += 1
        length = int(mangled[i:j])
        if length <= 0 or j + length > len(mangled):
            break
        i = j + length
    return mangled[:i] if i > start else None


def dynstr_names(path: str | Path, prefix: str) -> list[str]:
    """Names in the library's .dynstr that start with ``prefix`` (fast: a bytes scan)."""
    try:
        from elftools.elf.elffile import ELFFile

        with open(path, "rb") as fh:
            section = ELFFile(fh).get_section_by_name(".dynstr")
            if section is None:
                return []
            data = section.data()
    except Exception:  # noqa: BLE001
        return []
    pattern = re.compile(rb"(?<=\x00)" + re.escape(prefix.encode()) + rb"[^\x00]*")
    return sorted({m.group(0).decode(errors="replace") for m in pattern.finditer(data)})


def demangle(names: list[str]) -> dict[str, str]:
    """Demangle with binutils' ``c++filt``; names it cannot read map to themselves."""
    if not names:
        return {}
    if proc.which("c++filt") is None:
        return {n: n for n in names}
    result = proc.run(["c++filt"], input="\n".join(names) + "\n", check=False, timeout=60)
    lines = result.stdout.splitlines()
    if not result.ok or len(lines) != len(names):
        return {n: n for n in names}
    return dict(zip(names, lines, strict=True))


_STRING_FORMS = (
    "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >",
    "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
)


def abi_neutral(demangled: str) -> str:
    """Erase the std::string ABI from a demangled name, so twins compare equal."""
    text = demangled
    for form in _STRING_FORMS:
        text = text.replace(form, "std::string")
    return text.replace("std::__cxx11::", "std::").replace("[abi:cxx11]", "")


def readable(demangled: str) -> str:
    """Shorten the spelled-out std::string types, keeping which ABI they are."""
    return demangled.replace(_STRING_FORMS[0], "std::__cxx11::string").replace(
        _STRING_FORMS[1], "std::string"
    )


def uses_cxx11_abi(mangled: str, demangled: str | None = None) -> bool | None:
    """True: the symbol names std::__cxx11 types; False: it names the old std::string."""
    if CXX11_MARK in mangled:
        return True
    if demangled and demangled != mangled:
        return False if ("std::string" in demangled or "basic_string<char" in demangled) else None
    # Not demangled: "Ss" is the old ABI's abbreviation of std::string.
    return False if "Ss" in mangled else None


@dataclass(frozen=True)
class AbiTwin:
    """A symbol the loader could not find, and the other-ABI symbol a library has instead."""

    wanted: str
    wanted_demangled: str
    wanted_cxx11: bool | None
    found: str
    found_demangled: str
    found_in: str


def find_abi_twin(symbol: str, libraries: list[Path]) -> AbiTwin | None:
    """Look in ``libraries`` for ``symbol`` mangled with the other std::string ABI."""
    prefix = name_prefix(symbol)
    if prefix is None:
        return None
    for lib in libraries:
        candidates = [n for n in dynstr_names(lib, prefix) if n != symbol]
        if not candidates:
            continue
        names = demangle([symbol, *candidates])
        want = abi_neutral(names[symbol])
        matches = [c for c in candidates if abi_neutral(names[c]) == want]
        if names[symbol] == symbol:  # no c++filt: fall back to the mangled marker
            matches = [c for c in candidates if (CXX11_MARK in c) != (CXX11_MARK in symbol)]
        for cand in matches:
            if defines(lib, [cand]):
                return AbiTwin(
                    wanted=symbol,
                    wanted_demangled=names[symbol],
                    wanted_cxx11=uses_cxx11_abi(symbol, names[symbol]),
                    found=cand,
                    found_demangled=names[cand],
                    found_in=str(lib),
                )
    return None
