"""The version the build reports: ``PYTORCH_BUILD_VERSION`` and ``PYTORCH_BUILD_NUMBER``.

Without them ``torch.__version__`` comes from ``version.txt`` (``X.Y.Za0``, a
pre-release that pins like ``torch==X.Y.Z`` reject); with the installed
release's public version plus a ``+git<sha>`` label, such pins keep working.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from onboard.workflows.build.parts import Choice, Part

if TYPE_CHECKING:
    from onboard.torchenv import TorchEnv


def choose(env_probe: TorchEnv | None, head: str | None, checkout: Path) -> Part:
    """The installed torch's release plus ``+git<sha of head>``; a note when it cannot be."""
    from packaging.version import InvalidVersion, Version

    torch = env_probe.torch if env_probe else None
    if torch is None:
        return Part(
            notes=(
                "No installed torch could be probed, so PYTORCH_BUILD_VERSION is left to "
                "version.txt (the build will be `X.Y.Za0+git<sha>`, which pins like "
                "`torch==X.Y.Z` do not accept).",
            )
        )
    try:
        public = Version(torch.version).public
    except InvalidVersion:
        return Part(
            notes=(
                f"The installed torch version {torch.version!r} is not PEP 440; "
                "PYTORCH_BUILD_VERSION is not set.",
            )
        )
    local = f"+git{head[:7]}" if head else ""
    try:
        txt = (checkout / "version.txt").read_text(encoding="utf-8").strip()
        pre = Version(txt).is_prerelease
    except (OSError, InvalidVersion):
        txt, pre = "X.Y.Za0", True
    from_txt = (
        f"version.txt alone would give `{txt}{local}`, a pre-release that such pins reject"
        if pre
        else f"version.txt alone would give `{txt}{local}`; set here so the two never drift"
    )
    version = Choice(
        "PYTORCH_BUILD_VERSION",
        public + local,
        f"the installed release {torch.version} without its wheel label, plus "
        f"`{local or '(no sha)'}` to mark a source build: pins like `torch=={public}` keep "
        f"working (PEP 440 ignores a candidate's local label when the pin has none); "
        f"{from_txt}",
    )
    number = Choice(
        "PYTORCH_BUILD_NUMBER",
        "0",
        "required with PYTORCH_BUILD_VERSION; a number above 1 would append `.postN`, "
        f"which `torch=={public}` does not match",
    )
    return Part(env=(version, number))
