"""The release level: bisect released wheels before any commit.

Each release is installed into its own cached venv (nox-style: under the
workspace's ``.nox/``, or onboard's cache folder), never into the user's
environment, so the user's own torch is never touched. Releases come from
``--find-links`` (a folder of wheels; then nothing else is consulted) and/or
``--index-url``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from onboard import proc, torchenv
from onboard.errors import BadInput, OnboardError
from onboard.report import Reporter
from onboard.workflows.bisect.model import BISECT, PREFLIGHT, Step, WheelBisect
from onboard.workflows.bisect.preflight import no_gpu_error
from onboard.workflows.bisect.runner import (
    FAIL,
    NO_GPU,
    PASS,
    SKIP,
    ReproRunner,
    Verdict,
    repro_env,
)

_MARKER = "onboard-bisect.json"
_AVAILABLE = re.compile(r"^Available versions:\s*(.+)$", re.M)


def canonical(name: str) -> str:
    from packaging.utils import canonicalize_name

    return str(canonicalize_name(name))


def _versions_in_folder(folder: Path, package: str) -> list[str]:
    from packaging.utils import (
        InvalidSdistFilename,
        InvalidWheelFilename,
        parse_sdist_filename,
        parse_wheel_filename,
    )

    found: set[str] = set()
    for path in folder.iterdir():
        try:
            if path.name.endswith(".whl"):
                name, version, _build, _tags = parse_wheel_filename(path.name)
            elif path.name.endswith((".tar.gz", ".zip")):
                name, version = parse_sdist_filename(path.name)
            else:
                continue
        except (InvalidWheelFilename, InvalidSdistFilename):
            continue
        if canonical(name) == canonical(package):
            found.add(str(version))
    return list(found)


def pip_index_args(index_url: str | None, find_links: str | None) -> list[str]:
    args: list[str] = []
    if index_url:
        args += ["--index-url", index_url]
    if find_links:
        args += ["--find-links", find_links]
        if not index_url:
            # A folder of the user's own wheels must not be mixed with PyPI's
            # builds of the same version.
            args.append("--no-index")
    return args


def list_versions(
    package: str, index_url: str | None, find_links: str | None, python_version: str
) -> list[str]:
    """Every release of ``package`` the sources offer, oldest first."""
    from packaging.version import InvalidVersion, Version

    if find_links and Path(find_links).is_dir():
        versions = _versions_in_folder(Path(find_links), package)
    else:
        result = proc.run(
            [
                sys.executable,
                "-m",
                "pip",
                "index",
                "versions",
                package,
                "--pre",
                "--disable-pip-version-check",
                "--python-version",
                python_version,
                *pip_index_args(index_url, find_links),
            ],
            timeout=300,
            check=False,
            what=f"Listing the releases of {package}",
        )
        match = _AVAILABLE.search(result.stdout)
        if not match:
            raise OnboardError(
                f"Could not list the releases of {package} "
                f"({(result.stderr.strip().splitlines() or ['no output'])[-1]}).",
                next_step="Pass --find-links with a folder of wheels, or --index-url with an "
                "index that has them (e.g. https://download.pytorch.org/whl/cpu).",
            )
        versions = [v.strip() for v in match.group(1).split(",") if v.strip()]
    good: list[str] = []
    for v in versions:
        try:
            Version(v)
        except InvalidVersion:
            continue
        good.append(v)
    return sorted(set(good), key=Version)


def pick_range(versions: list[str], old: str, new: str) -> list[str]:
    """The releases from ``old`` to ``new`` inclusive (pre-releases only if a bound is one)."""
    from packaging.version import InvalidVersion, Version

    try:
        vo, vn = Version(old), Version(new)
    except InvalidVersion as exc:
        raise BadInput(
            f"With --wheels, --good and --bad are release versions (like 2.11.0): {exc}.",
            next_step="For example: `onboard bisect repro.py --wheels --good 2.11.0 --bad 2.13.0`.",
        ) from None

    def find(bound: Version, flag: str) -> Version:
        exact = [Version(v) for v in versions if Version(v) == bound]
        public = [Version(v) for v in versions if Version(Version(v).public) == bound]
        if exact or public:
            return (exact or public)[0]
        raise BadInput(
            f"{flag} {bound} is not among the available releases "
            f"({', '.join(versions[-12:]) or 'none found'}).",
            next_step="Pick versions from that list, or point --find-links/--index-url at a "
            "source that has them.",
        )

    lo, hi = find(vo, "--good"), find(vn, "--bad")
    if lo >= hi:
        raise BadInput(
            f"--good {old} must be an older release than --bad {new}.",
            next_step="Swap them (to find a fix, add --term-old broken --term-new fixed).",
        )
    pre = lo.is_prerelease or hi.is_prerelease
    keep = []
    seen: set[str] = set()
    for v in versions:
        ver = Version(v)
        if lo <= ver <= hi and (pre or not ver.is_prerelease or ver in (lo, hi)):
            if ver.public in seen and ver not in (lo, hi):
                continue
            seen.add(ver.public)
            keep.append(v)
    return keep


def python_version(python: str) -> str:
    return torchenv.find_packages(python, what=f"Asking {python} for its version").python_version


@dataclass
class VenvCache:
    """One venv per (package, version, python): created once, reused across runs."""

    root: Path
    package: str
    python: str
    py_version: str
    index_url: str | None
    find_links: str | None
    reporter: Reporter

    def path(self, version: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9.]+", "_", version)
        return self.root / f"bisect-{canonical(self.package)}-{safe}-py{self.py_version}"

    def python_of(self, venv: Path) -> Path:
        return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")

    def ensure(self, version: str) -> tuple[Path | None, str]:
        """(the venv's python, '') or (None, why it could not be installed)."""
        venv = self.path(version)
        py = self.python_of(venv)
        marker = venv / _MARKER
        want = {"package": self.package, "version": version}
        try:
            if py.exists() and json.loads(marker.read_text()) == want:
                return py, ""
        except (OSError, ValueError):
            pass
        self.reporter.step(f"installing {self.package}=={version} into {venv}")
        self.root.mkdir(parents=True, exist_ok=True)
        made = proc.run(
            [self.python, "-m", "venv", "--clear", "--without-pip", str(venv)],
            timeout=300,
            check=False,
        )
        if not made.ok:
            return None, f"`python -m venv` failed: {_last(made)}"
        # pip from onboard's interpreter installs into the venv (`pip --python`,
        # pip >= 22.3): no ensurepip per venv, and the user's site is untouched.
        install = proc.run(
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                str(py),
                "install",
                "--no-input",
                "--disable-pip-version-check",
                "-q",
                f"{self.package}=={version}",
                *pip_index_args(self.index_url, self.find_links),
            ],
            timeout=1800,
            check=False,
        )
        if not install.ok:
            return None, f"installing {self.package}=={version} failed: {_last(install)}"
        marker.write_text(json.dumps(want))
        return py, ""


def _last(result: proc.Result) -> str:
    lines = [ln for ln in (result.stderr + "\n" + result.stdout).splitlines() if ln.strip()]
    return lines[-1].strip() if lines else f"exit {result.returncode}"


@dataclass
class WheelBisector:
    package: str
    versions: list[str]
    venvs: VenvCache
    runner: ReproRunner
    reporter: Reporter
    repeat: int
    fix: bool  # custom terms: the repro fails at --good and passes at --bad
    gpu_why: str = ""

    def _state(self, verdict: str) -> str:
        if verdict == SKIP:
            return "skip"
        passes = verdict == PASS
        return ("new" if passes else "old") if self.fix else ("old" if passes else "new")

    def test(self, version: str, phase: str) -> Step:
        label = f"{self.package} {version}"
        py, why = self.venvs.ensure(version)
        if py is None:
            return Step(version, label, phase, "skip", None, why)
        saved = self.runner.python
        self.runner.python = str(py)
        try:
            env = repro_env(ONBOARD_BISECT_VERSION=version)
            env.pop("PYTHONPATH", None)  # the release alone, not a checkout
            verdict = self.runner.verdict(env, self.repeat)
        finally:
            self.runner.python = saved
        reason = verdict.reason if verdict.value == SKIP or verdict.flaky else ""
        return Step(version, label, phase, self._state(verdict.value), verdict, reason)

    def run(self) -> WheelBisect:
        vs = self.versions
        result = WheelBisect(self.package, list(vs), venvs=str(self.venvs.root))
        self.reporter.step(f"bisecting {len(vs)} releases of {self.package}: {vs[0]} .. {vs[-1]}")
        ends: dict[str, Verdict] = {}
        for flag, version in (("--good", vs[0]), ("--bad", vs[-1])):
            self.reporter.step(f"pre-flight: testing {flag} {self.package} {version}")
            step = self.test(version, PREFLIGHT)
            result.steps.append(step)
            if step.verdict is None:
                raise OnboardError(
                    f"Cannot test {flag} {version}: {step.reason}.",
                    next_step="Check --find-links/--index-url (the release and its dependencies "
                    "must be installable there).",
                )
            if any(r.outcome == NO_GPU for r in step.verdict.runs):
                raise no_gpu_error(f"{flag} {version}", step.verdict, self.gpu_why)
            if step.verdict.value == SKIP:
                raise OnboardError(
                    f"The repro gave no verdict with {self.package} {version}: {step.reason}.",
                    next_step="Raise --timeout, or use --on-crash bad for a crashing repro.",
                )
            ends[flag] = step.verdict
        states = (self._state(ends["--good"].value), self._state(ends["--bad"].value))
        if states != ("old", "new"):
            word = {PASS: "passes", FAIL: "fails"}
            raise OnboardError(
                f"The repro {word[ends['--good'].value]} with {self.package} {vs[0]} and "
                f"{word[ends['--bad'].value]} with {vs[-1]}; "
                + (
                    "with --term-old/--term-new it must fail at --good and pass at --bad."
                    if self.fix
                    else "it must pass at --good and fail at --bad."
                ),
                next_step="Pick other releases; to find a fix use --term-old broken "
                "--term-new fixed; to find a regression drop those terms.",
            )
        lo, hi = 0, len(vs) - 1
        skipped: set[int] = set()
        k = 0
        while True:
            left = [i for i in range(lo + 1, hi) if i not in skipped]
            if not left:
                break
            mid = (lo + hi) / 2
            i = min(left, key=lambda j: (abs(j - mid), j))
            k += 1
            self.reporter.step(
                f"release step {k} of ~{k + max(0, len(left) - 1).bit_length()}: "
                f"testing {self.package} {vs[i]}"
            )
            step = self.test(vs[i], BISECT)
            result.steps.append(step)
            detail = step.verdict.summary() if step.verdict else step.reason
            self.reporter.step(f"  {self.package} {vs[i]} is {step.mark}: {detail}")
            if step.mark == "skip":
                skipped.add(i)
            elif step.mark == "old":
                lo = i
            else:
                hi = i
        result.last_old, result.first_new = vs[lo], vs[hi]
        result.skipped = [vs[i] for i in sorted(skipped)]
        return result
