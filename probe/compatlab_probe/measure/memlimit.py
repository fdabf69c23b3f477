"""The test child's side of the memory limit (doc/results-schema.md, "Host memory").

`--mem-limit` bounds what the test itself adds, the same quantity as host_mem_bytes,
not the interpreter it was forked with:

  cgroup_v1 / cgroup_v2  the child joins its own cgroup first thing (apply), so its charge
                         holds only the pages it touches itself (those shared with the
                         zygote stay charged to the zygote); at the baseline (rebase) the
                         limit becomes that charge plus the limit's bytes
  rlimit                 RLIMIT_AS's soft limit becomes the current address space (VmSize)
                         plus the bytes at the baseline (rebase); a kind without one (the
                         fault kinds) gets it at its start (apply with at_start_rlimit).
                         Not before: a child that still imports (run_one, a reproduction
                         script) would meet it in its imports (OpenBLAS's start-up spins on
                         a refused mmap instead of failing)

Only the soft RLIMIT_AS is set (the hard one stays), so the baseline can raise it again.
"""

from __future__ import annotations

import os
import resource

from ..host import osutil
from ..protocol.request import MemoryLimit

# (usage file, limit file) of a cgroup's memory controller, per method.
_CGROUP_FILES = {"cgroup_v1": ("memory.usage_in_bytes", "memory.limit_in_bytes"),
                 "cgroup_v2": ("memory.current", "memory.max")}


def _set_soft_as(limit: MemoryLimit) -> None:
    size = osutil.address_space_bytes()
    if size is None:
        raise OSError("cannot read VmSize from /proc/self/status for RLIMIT_AS")
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = size + limit.bytes
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def apply(limit: MemoryLimit, at_start_rlimit: bool = True) -> None:
    """At the child's start: joins the cgroup, or (`at_start_rlimit`: a kind that takes no
    memory baseline) sets RLIMIT_AS. No method: nothing. Raises OSError when it cannot."""
    if limit.method in _CGROUP_FILES:
        with open(limit.cgroup_procs, "w") as f:
            f.write(str(os.getpid()))
    elif limit.method == "rlimit" and at_start_rlimit:
        _set_soft_as(limit)


def rebase(limit: MemoryLimit) -> None:
    """At the memory baseline (before the build): the limit becomes what the child uses now
    plus the limit's bytes (cgroup: its charge; rlimit: its address space). Raises OSError."""
    if limit.method in _CGROUP_FILES:
        usage_name, limit_name = _CGROUP_FILES[limit.method]
        directory = os.path.dirname(limit.cgroup_procs)
        with open(os.path.join(directory, usage_name)) as f:
            value = str(int(f.read().split()[0]) + limit.bytes)
        names = [limit_name]
        swap = os.path.join(directory, "memory.memsw.limit_in_bytes")
        if limit.method == "cgroup_v1" and os.path.exists(swap):
            # v1 keeps limit_in_bytes <= memsw.limit_in_bytes (the supervisor sets both, no
            # swap): raising, memsw goes first.
            names = ["memory.memsw.limit_in_bytes", limit_name]
        for name in names:
            with open(os.path.join(directory, name), "w") as f:
                f.write(value)
    elif limit.method == "rlimit":
        _set_soft_as(limit)
