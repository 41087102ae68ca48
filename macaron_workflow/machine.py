"""What machine a command runs on (recorded with measurements, and used to pick CPU kernels)."""

from __future__ import annotations

import platform


def _cpuinfo(field: str) -> str | None:
    """The value of the first ``field`` line of ``/proc/cpuinfo`` (None where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            return next((line.split(":", 1)[1] for line in cpuinfo if line.startswith(field)), None)
    except OSError:
        return None


def cpu_flags() -> set[str]:
    """The CPU's feature flags (``/proc/cpuinfo``; empty where there is none)."""
    return set((_cpuinfo("flags") or "").split())


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; ``platform`` elsewhere)."""
    model = _cpuinfo("model name")
    return model.strip() if model is not None else platform.processor() or platform.machine()
