"""onboard's cache folder and its JSON files.

Everything cached (the build prefix of a library, harvest's per-file scan,
where/locate's indexes, bisect's release venvs) lives under
``$XDG_CACHE_HOME/onboard`` (default ``~/.cache/onboard``). A cache can
always be rebuilt, so failing to read or write one only costs time, and a
file whose values are not what its reader expects (an older format, a hand
edit, a half-synced home) counts as missing: ``read_valid`` checks the shape
on read, so the caller rebuilds instead of failing on it later.
"""

from __future__ import annotations

import json
import operator
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any


def sha1_hex(data: bytes) -> str:
    """``hashlib.sha1(data).hexdigest()`` (the same digest) for short keys: cache file
    names, ids. CPython's own SHA-1 loads in a tenth of a millisecond; hashlib
    loads OpenSSL first (~2 ms of every start that needs a key)."""
    try:
        from _sha1 import sha1
    except ImportError:  # an interpreter built without it
        from hashlib import sha1
    return sha1(data).hexdigest()


def cache_dir(*parts: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "onboard", *parts)


def writable_cache_dir(*parts: str) -> Path:
    """``cache_dir(*parts)`` when onboard can write there, else a private folder
    in the system's temp folder (`$TMPDIR/onboard-<uid>/...`, mode 0700, reused
    by later runs), so a read-only home or XDG_CACHE_HOME costs speed, not the
    command. For what must be written to be used (generated sources, venvs).
    """
    preferred = cache_dir(*parts)
    if _can_write(preferred):
        return preferred
    return _temp_cache_base().joinpath(*parts)


def _can_write(folder: Path) -> bool:
    # Tried, not os.access(): root passes access() on a read-only mount.
    import tempfile  # (here: the readers of a cache need none of it)

    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def _temp_cache_base() -> Path:
    import tempfile

    uid = os.getuid() if hasattr(os, "getuid") else 0
    shared = Path(tempfile.gettempdir()) / f"onboard-{uid}"
    try:
        shared.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(shared)
        # Only a folder that is really ours and private (a name in /tmp can be
        # taken first by anyone).
        if stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & 0o077:
            return shared / "cache"
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="onboard-cache-"))


def read_json(path: Path) -> dict[str, Any]:
    """The file's JSON object, or {} when it is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class Row:
    """A shape for a fixed-length JSON list: ``Row(str, int)`` is ``["a.cpp", 12]``."""

    def __init__(self, *shapes: Any) -> None:
        self.shapes = shapes


def matches(data: Any, shape: Any) -> bool:
    """Whether JSON ``data`` has ``shape``.

    A shape is: a type (``str``, ``int``: not a bool, ``float``: an int too,
    ``bool``), ``None``, ``object`` (anything), a tuple of shapes (any one of
    them), ``[shape]`` (a list of them), ``Row(a, b)`` (a list of exactly
    those), ``{str: shape}`` (an object with any keys), or
    ``{"key": shape, "other?": shape}`` (an object with those keys, ``?``
    marking one that may be absent; other keys are allowed).
    """
    return _checker(shape)(data)


# Shapes are module constants: each is turned into nested closures once, so
# checking a cache of a few MB costs a fraction of parsing it.
_CHECKERS: dict[int, tuple[Any, Callable[[Any], bool]]] = {}


def _checker(shape: Any) -> Callable[[Any], bool]:
    found = _CHECKERS.get(id(shape))
    if found is not None and found[0] is shape:
        return found[1]
    check = _compile(shape)
    _CHECKERS[id(shape)] = (shape, check)  # keeps the shape alive, so its id stays its own
    return check


def _scalar_types(shape: Any) -> frozenset[type] | None:
    """The exact types a scalar shape allows (str, int, float, bool, None and
    tuples of them), or None for a shape with structure."""
    if shape is None:
        return frozenset({type(None)})
    if shape is float:
        return frozenset({int, float})
    if shape in (str, int, bool):
        return frozenset({shape})
    if isinstance(shape, tuple):
        parts = [_scalar_types(s) for s in shape]
        if all(p is not None for p in parts):
            return frozenset().union(*parts)  # type: ignore[arg-type]
    return None


def _compile(shape: Any) -> Callable[[Any], bool]:
    # Scalars are checked as sets of exact types, and collections of scalars in
    # one C-level pass (`set(map(type, items)) <= allowed`): a few MB of cache
    # cost a fraction of parsing them, not a Python call per value.
    allowed = _scalar_types(shape)
    if allowed is not None:
        return lambda d: type(d) in allowed
    if shape is object:
        return lambda d: True
    if isinstance(shape, tuple):
        options = [_compile(s) for s in shape]
        return lambda d: any(c(d) for c in options)
    if isinstance(shape, type):
        return lambda d: isinstance(d, shape)
    if isinstance(shape, Row):
        return _compile_row(shape)
    if isinstance(shape, list):
        inner = _scalar_types(shape[0])
        if inner is not None:
            return lambda d: type(d) is list and set(map(type, d)) <= inner
        item = _compile(shape[0])
        return lambda d: type(d) is list and all(map(item, d))
    if isinstance(shape, dict):
        if list(shape) == [str]:
            return _compile_mapping(shape[str])
        return _compile_object(shape)
    raise TypeError(f"not a shape: {shape!r}")


_STR = frozenset({str})


def _compile_mapping(shape: Any) -> Callable[[Any], bool]:
    inner = _scalar_types(shape)
    if inner is not None:
        return lambda d: (
            type(d) is dict and set(map(type, d)) <= _STR and set(map(type, d.values())) <= inner
        )
    value = _compile(shape)
    return lambda d: type(d) is dict and set(map(type, d)) <= _STR and all(map(value, d.values()))


def _compile_row(shape: Row) -> Callable[[Any], bool]:
    n = len(shape.shapes)
    scalars = [_scalar_types(s) for s in shape.shapes]
    if all(t is not None for t in scalars):
        types = tuple(scalars)
        return lambda d: (
            type(d) is list
            and len(d) == n
            and all(map(frozenset.__contains__, types, map(type, d)))  # type: ignore[arg-type]
        )
    # Mixed: the scalar cells at once, the others one by one.
    at = [i for i, t in enumerate(scalars) if t is not None]
    fetch = operator.itemgetter(*at) if len(at) > 1 else None
    types = tuple(scalars[i] for i in at)
    nested = [(i, _compile(shape.shapes[i])) for i, t in enumerate(scalars) if t is None]

    def check(d: Any) -> bool:
        if type(d) is not list or len(d) != n:
            return False
        got = fetch(d) if fetch is not None else tuple(d[i] for i in at)
        if not all(map(frozenset.__contains__, types, map(type, got))):  # type: ignore[arg-type]
            return False
        return all(c(d[i]) for i, c in nested)

    return check


def _compile_object(shape: dict[str, Any]) -> Callable[[Any], bool]:
    missing = object()
    # Required scalar fields are fetched and checked at once (itemgetter, map);
    # the rest (structured or optional) one by one.
    plain = [(k, t) for k, v in shape.items() if not k.endswith("?") and (t := _scalar_types(v))]
    rest = [
        (k.removesuffix("?"), k.endswith("?"), _compile(v))
        for k, v in shape.items()
        if k.endswith("?") or _scalar_types(v) is None
    ]
    names = [k for k, _t in plain]
    types = tuple(t for _k, t in plain)
    fetch = operator.itemgetter(*names) if names else None
    single = len(names) == 1

    def check(d: Any) -> bool:
        if type(d) is not dict:
            return False
        if fetch is not None:
            try:
                got = fetch(d)
            except KeyError:
                return False
            if not all(map(frozenset.__contains__, types, map(type, (got,) if single else got))):
                return False
        for name, optional, sub in rest:
            value = d.get(name, missing)
            if value is missing:
                if not optional:
                    return False
            elif not sub(value):
                return False
        return True

    return check


def read_valid(path: Path, shape: Any) -> dict[str, Any]:
    """The file's JSON object when it has ``shape``, else {} (as if missing)."""
    data = read_json(path)
    return data if data and matches(data, shape) else {}


def write_json(path: Path, data: dict[str, Any], *, compact: bool = False) -> None:
    """Replace the file atomically (readers never see half a file; a folder in its place
    is removed first); an error leaves a line for ``take_notes``."""
    separators = (",", ":") if compact else None
    _replace(path, json.dumps(data, separators=separators).encode())


# Entries this run could not write, one line each (``take_notes``): a cache that is not
# used is said, not felt as every run being slow.
_NOT_WRITTEN: dict[str, str] = {}


def make_room(path: Path) -> bool:
    """Remove a folder where the cache file ``path`` belongs (a stray mkdir, a copy gone
    wrong): it reads as missing on every run, and left there the entry would be rebuilt,
    and the rebuild lost, every time. False, with a line for ``take_notes``, when it
    cannot be removed."""
    import shutil

    if not path.is_dir() or path.is_symlink():
        return True
    try:
        shutil.rmtree(path)
    except OSError as exc:
        _NOT_WRITTEN[str(path)] = f"a folder is in its place: {exc.strerror or exc}"
        return False
    return True


def _replace(path: Path, data: bytes) -> None:
    from onboard import files

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not make_room(path):
            return
        # Beside the target, removed on any failure (a full disk included).
        files.write_bytes(path, data, journal=False)
    except OSError as exc:
        _NOT_WRITTEN[str(path)] = exc.strerror or type(exc).__name__


def take_notes() -> list[str]:
    """What the cache could not keep since last asked, and what that costs (a line each
    for the answer)."""
    lines = []
    taken = dict(_NOT_WRITTEN)
    _NOT_WRITTEN.clear()
    for path, why in taken.items():
        lines.append(
            f"the cache entry {path} could not be written ({why}), so the cache is not used "
            "for it: every run rebuilds what it holds, which is slower. Remove that path "
            "(or free the disk) to let onboard keep it again."
        )
    return lines


# --------------------------------------------------------------------------
# Sealed files: a large cache read on every run of a fast command.
#
# Checking a few MB of values against a shape costs more than parsing them.
# A sealed file is one line of JSON (the header: small, shape-checked as
# usual), one line of JSON (the body), then raw bytes the body points into
# (the attachment: what a reader parses only in part, such as harvest's
# per-file rows). The header holds the digest of body and attachment. Only
# ``write_sealed`` makes such a file, from values its caller built, so a file
# that matches its digest has the shape that caller wrote; a hand edit, a
# torn copy or another format does not match and counts as missing.

DIGEST_KEY = "body_crc32"


def _digest(body: bytes) -> str:
    # A CRC, not a cryptographic hash: it guards against torn copies and edits,
    # not against someone forging the user's own cache, and costs a fifth of
    # SHA-1 on a megabyte (and no OpenSSL to load).
    import zlib

    return f"{zlib.crc32(body):08x}"


def write_sealed(path: Path, header: dict[str, Any], body: Any, attachment: bytes = b"") -> None:
    """Replace ``path`` atomically with ``header``, ``body`` and ``attachment`` (errors
    ignored)."""
    raw = json.dumps(body, separators=(",", ":")).encode() + b"\n" + attachment
    top = json.dumps({**header, DIGEST_KEY: _digest(raw)}, separators=(",", ":")).encode()
    _replace(path, top + b"\n" + raw)


class Sealed:
    """A sealed file as read: its header now, its body when asked for."""

    def __init__(self, header: dict[str, Any], raw: bytes) -> None:
        self.header = header
        self._raw = raw
        self.attachment = b""  # set by ``body()`` once the file is known whole

    def body(self) -> Any:
        """The body's JSON, or None when the file is not what was written (see above)."""
        if _digest(self._raw) != self.header.get(DIGEST_KEY):
            return None
        line, newline, attachment = self._raw.partition(b"\n")
        if not newline:
            return None
        try:
            data = json.loads(line)
        except ValueError:
            return None
        self.attachment = attachment
        return data


def read_sealed(path: Path, header_shape: Any) -> Sealed | None:
    """The sealed file when it exists and its header has ``header_shape``."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    top, newline, body = raw.partition(b"\n")
    try:
        header = json.loads(top) if newline else None
    except ValueError:
        return None
    if type(header) is not dict or type(header.get(DIGEST_KEY)) is not str:
        return None
    if not matches(header, header_shape):
        return None
    return Sealed(header, body)
