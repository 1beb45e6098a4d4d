"""What the machine gbbot runs on has: usable cores, available memory, an NVIDIA GPU."""

from __future__ import annotations

import os
from pathlib import Path

from gbbot.core.jobs import Machine

MEMINFO = Path("/proc/meminfo")
GPU_DEVICE = Path("/dev/nvidiactl")  # there whenever the NVIDIA driver can reach a GPU


def this_machine(config_asks_for_gpu: bool) -> Machine:
    return Machine(cpus=cores(), available_bytes=_available_memory(), gpu=config_asks_for_gpu or GPU_DEVICE.exists())


def cores() -> int:
    """The cores this process may run on (a container's or a taskset's limit, not the host's)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _available_memory() -> int | None:
    try:
        for line in MEMINFO.read_text(encoding="ascii").splitlines():
            name, _, value = line.partition(":")
            if name == "MemAvailable":
                return int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
