"""The doctor's result: the probed facts and the findings (drawn by
``onboard/views/doctor.py``; ``onboard.jsonable.to_json`` for --json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onboard.jsonable import spec
from onboard.torchenv import TorchEnv

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)
# Errors and warnings ask the user to do something (exit 1); info only explains.
NEEDS_ACTION = (ERROR, WARNING)

# BUILD_TYPE / USE_* worth a row of their own in the table (torch.__config__.show()).
HIGHLIGHTS = (
    "USE_CUDA",
    "USE_CUDNN",
    "USE_ROCM",
    "USE_XPU",
    "USE_MKL",
    "USE_MKLDNN",
    "USE_OPENMP",
    "USE_NCCL",
    "USE_GLOO",
    "USE_MPI",
)


@dataclass(frozen=True)
class Finding:
    """One diagnosis: what is wrong (title), why it matters (why), what to run (fix)."""

    id: str
    severity: str
    title: str
    why: str
    fix: str
    details: tuple[str, ...] = ()  # evidence lines (shown with -v and in JSON)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")

    @property
    def needs_action(self) -> bool:
        return self.severity in NEEDS_ACTION


@dataclass(frozen=True)
class DoctorReport:
    env: TorchEnv = field(metadata=spec(omit=True))  # what JSON needs of it is in facts
    facts: dict[str, Any]
    findings: tuple[Finding, ...]
    workspace: dict[str, Any] | None = field(default=None, metadata=spec(omit=True))

    @property
    def ok(self) -> bool:
        return not any(f.needs_action for f in self.findings)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def finding(self, finding_id: str) -> Finding | None:
        return next((f for f in self.findings if f.id == finding_id), None)

    def json_extra(self) -> dict[str, object]:
        return {"ok": self.ok}

    def rows(self) -> list[tuple[str, str]]:
        return fact_rows(self.facts)


def short_message(message: str, limit: int = 240) -> str:
    """The loader's message on one line, ending with a period (the full one is in the JSON)."""
    text = " ".join(message.split())
    if len(text) > limit:
        text = text[: limit - 3].rstrip() + "..."
    return text.rstrip(".") + "."


# --- facts ---------------------------------------------------------------------


def cuda_summary(env: TorchEnv) -> str:
    t = env.torch
    if t is None:
        return "unknown (torch did not import)"
    if t.hip:
        base = f"ROCm/HIP {t.hip}"
    elif t.cuda:
        base = f"CUDA {t.cuda}"
    else:
        return "no CUDA (CPU-only build)"
    if not t.cuda_available:
        return f"{base} build, but no GPU is usable here"
    devices = ", ".join(f"{d['name']} (sm {d['capability']})" for d in t.devices)
    return f"{base}, {len(t.devices)} device(s): {devices}"


def debug_info_summary(env: TorchEnv) -> str:
    if env.has_debug_info is None:
        return "unknown (no torch library to read)"
    if env.has_debug_info:
        return "yes: C++ frames can be stepped into with gdb/lldb"
    return "none (release wheels carry no DWARF): stepping into C++ needs `onboard build`"


def build_facts(env: TorchEnv) -> dict[str, Any]:
    """The stable JSON ``facts`` object (documented in docs/guide/doctor.md)."""
    py = env.python
    facts: dict[str, Any] = {
        "python": {
            "executable": py.executable,
            "version": py.version,
            "implementation": py.implementation,
            "abiflags": py.abiflags,
            "soabi": py.soabi,
            "ext_suffix": py.ext_suffix,
            "cwd": py.cwd,
        },
        "torch": None,
        "torch_location": str(_torch_dir(env)) if _torch_dir(env) else None,
        "import_error": _import_error_json(env),
        "candidates": list(env.candidates),
        "numpy": env.numpy,
        "sys_path": list(env.sys_path),
        "workspace": None,
    }
    t = env.torch
    if t is not None:
        bs = t.build_settings
        dist = env.dist or {}
        facts["torch"] = {
            "version": t.version,
            "git_version": t.git_version,
            "commit": {
                "kind": env.commit.kind,
                "sha": env.commit.sha,
                "tag": env.commit.tag,
                "note": env.commit.note,
            },
            "cuda": {
                "version": t.cuda,
                "hip": t.hip,
                "available": t.cuda_available,
                "devices": [dict(d) for d in t.devices],
                "error": t.cuda_error,
                "summary": cuda_summary(env),
            },
            "cudnn": t.cudnn,
            "cxx11_abi": t.cxx11_abi,
            "debug": t.debug,
            "build_type": bs.get("BUILD_TYPE"),
            "compiler": bs.get("COMPILER"),
            "cxx_compiler": bs.get("CXX_COMPILER"),
            "cxx_standard": bs.get("CXX_VERSION"),
            "use": {k: v for k, v in bs.items() if k.startswith("USE_")},
            "wheel_tags": list(dist.get("wheel_tags") or []),
            "dist_version": dist.get("version"),
            "installer": dist.get("installer"),
            "location": str(t.package_dir),
            "editable": env.editable,
            "build_prefix": {
                "prefix": env.build_prefix.prefix,
                "method": env.build_prefix.method,
                "source_paths": len(env.build_prefix.source_paths),
            },
            "debug_info": env.has_debug_info,
            "debug_info_summary": debug_info_summary(env),
        }
    return facts


def _torch_dir(env: TorchEnv) -> Any:
    if env.torch is not None:
        return env.torch.package_dir
    if env.spec_origin:
        from pathlib import Path

        return Path(env.spec_origin).parent
    return None


def _import_error_json(env: TorchEnv) -> dict[str, Any] | None:
    err = env.import_error
    if not err:
        return None
    return {"type": err.get("type"), "message": err.get("message")}


def fact_rows(facts: dict[str, Any]) -> list[tuple[str, str]]:
    py = facts["python"]
    rows = [
        ("Python", f"{py['version']} ({py['implementation']}, SOABI {py['soabi'] or '-'})"),
        ("interpreter", py["executable"]),
    ]
    t = facts.get("torch")
    if t is None:
        err = facts.get("import_error")
        if facts.get("torch_location"):
            rows.append(("torch", f"at {facts['torch_location']}, but it does not import"))
            if err:
                first = (str(err["message"]).strip().splitlines() or [""])[0]
                rows.append(("import error", f"{err['type']}: {first}"))
        else:
            rows.append(("torch", "not installed in this interpreter"))
        rows.append(("numpy", facts.get("numpy") or "not installed"))
        return rows
    commit = t["commit"]
    kind = commit["kind"] + (f" {commit['tag']}" if commit.get("tag") else "")
    rows += [
        ("torch", t["version"]),
        ("git_version", f"{t['git_version']} ({kind})"),
        ("CUDA", t["cuda"]["summary"]),
        ("cuDNN", str(t["cudnn"]) if t["cudnn"] else "none"),
        ("CXX11 ABI", "yes (_GLIBCXX_USE_CXX11_ABI=1)" if t["cxx11_abi"] else "no (=0)"),
        ("BUILD_TYPE", t["build_type"] or "unknown"),
        ("compiler", t["compiler"] or t["cxx_compiler"] or "unknown"),
    ]
    use = t["use"]
    highlights = [f"{k}={use[k]}" for k in HIGHLIGHTS if k in use]
    if highlights:
        rows.append(("USE_*", ", ".join(highlights)))
    rows += [
        ("wheel tag", ", ".join(t["wheel_tags"]) or "none (not installed from a wheel)"),
        ("location", t["location"]),
        ("editable", "yes" if t["editable"] else "no"),
        ("numpy", facts.get("numpy") or "not installed"),
    ]
    bp = t["build_prefix"]
    rows.append(("build prefix", f"{bp['prefix'] or 'not found'} ({bp['method']})"))
    rows.append(("debug info", t["debug_info_summary"]))
    ext = facts.get("extension")
    if ext:
        state = (
            "works"
            if ext["ok"]
            else f"{ext['error']['type']}: "
            + (str(ext["error"]["message"]).strip().splitlines() or [""])[0]
        )
        rows.append((ext["what"], state))
    ws = facts.get("workspace")
    if ws:
        rows.append(("workspace", f"{ws['root']} (checkout {ws.get('head') or 'missing'})"))
    return rows


@dataclass
class Findings:
    """Collects findings in the order checks run."""

    items: list[Finding] = field(default_factory=list)

    def add(self, *findings: Finding) -> None:
        self.items.extend(findings)

    def has(self, finding_id: str) -> bool:
        return any(f.id == finding_id for f in self.items)
