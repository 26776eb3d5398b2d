# Runs INSIDE the interpreter a bisect runs its repro with: does its torch see a usable
# GPU (torch.cuda.is_available() and a device), and was it built with CUDA at all.
# Standard library + torch only. Answers one JSON object (onboard_answer).
import onboard_answer

try:
    import torch
except Exception as exc:  # noqa: BLE001 - no torch is an answer
    onboard_answer.finish({"torch": False, "error": repr(exc)})

info = {"torch": True, "compiled": torch.version.cuda, "available": False, "error": ""}
try:
    info["available"] = bool(torch.cuda.is_available()) and torch.cuda.device_count() > 0
except Exception as exc:  # noqa: BLE001 - a driver that fails to initialise says why
    info["error"] = repr(exc)
onboard_answer.finish(info)
