"""The memory this process may still allocate, for the guards that refuse a world or a run too large for it.

The least of three: what the machine has available (Linux MemAvailable), what the process's cgroup limit
leaves (a container's memory limit, its reclaimable page cache counted as free, the lowest limit up the
hierarchy) and what its address-space and data limits leave (``ulimit -v``, ``ulimit -d``). Reads
/proc and /sys only; changes nothing.
"""
from __future__ import annotations

import os


def _machine_available() -> int | None:
    """Bytes the machine has available to new allocations (Linux MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _read_int(path: str) -> int | None:
    try:
        with open(path) as fh:
            text = fh.read().strip()
        return None if text in ("", "max") else int(text)
    except (OSError, ValueError):
        return None


def _stat_field(path: str, key: str) -> int:
    """A field of a cgroup's memory.stat (0 where absent)."""
    try:
        with open(path) as fh:
            for line in fh:
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _cgroup_available() -> int | None:
    """Bytes left under the lowest cgroup memory limit over this process's cgroup and its ancestors (v2
    memory.max, or v1's limit), the reclaimable page cache (inactive files) counted as free; None where
    no limit is set."""
    try:
        with open("/proc/self/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    left = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        rel = parts[2].strip("/")
        if parts[0] == "0" and parts[1] == "":                                   # cgroup v2: walk up
            root, names = "/sys/fs/cgroup", ("memory.max", "memory.current", "memory.stat", "inactive_file")
        elif "memory" in parts[1].split(","):                                      # cgroup v1
            root = "/sys/fs/cgroup/memory"
            names = ("memory.limit_in_bytes", "memory.usage_in_bytes", "memory.stat", "total_inactive_file")
        else:
            continue
        steps = rel.split("/") if rel else []
        for depth in range(len(steps), -1, -1):
            base = os.path.join(root, *steps[:depth])
            limit = _read_int(os.path.join(base, names[0]))
            if limit is None or limit >= 1 << 60:                                  # none here (v1: "unlimited")
                continue
            used = (_read_int(os.path.join(base, names[1])) or 0) - _stat_field(os.path.join(base, names[2]), names[3])
            left.append(max(0, limit - max(used, 0)))
    return min(left) if left else None


def _rlimit_available() -> int | None:
    """Bytes left under this process's address-space and data limits (``ulimit -v``, ``ulimit -d``), None
    where unlimited."""
    try:
        import resource
    except ImportError:           # not a POSIX system
        return None
    sizes = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key in ("VmSize", "VmData"):
                    sizes[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    left = []
    for which, used in ((resource.RLIMIT_AS, sizes.get("VmSize")), (resource.RLIMIT_DATA, sizes.get("VmData"))):
        soft, _ = resource.getrlimit(which)
        if soft != resource.RLIM_INFINITY and soft > 0:
            left.append(max(0, soft - (used or 0)))
    return min(left) if left else None


def memory_available() -> int | None:
    """Bytes of memory available to this process's new allocations: the least of what the machine has
    available (Linux MemAvailable), what its cgroup's limit leaves (a container's memory limit) and what its
    address-space and data limits leave (``ulimit -v``); None where none is known."""
    known = [v for v in (_machine_available(), _cgroup_available(), _rlimit_available()) if v is not None]
    return min(known) if known else None


__all__ = ["memory_available"]
