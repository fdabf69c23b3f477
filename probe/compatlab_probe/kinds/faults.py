"""Harness kinds: `noop` (harness overhead) and fault kinds that test the supervisor.

Where a fault kills the child (segfault, abort, oom under a cgroup, hang), the
supervisor decides the status from the wait status and its own counters; the
child decides only where it survives (noop, raise, flood, kill-zygote, oom
under an rlimit).
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from typing import TYPE_CHECKING

from ..protocol.request import TestRequest
from ..protocol.result import Result

CHUNK = 64 * 1024 * 1024

if TYPE_CHECKING:
    from .context import Context


def on_fault_rank(fault):
    """A fault kind over several ranks (doc/ranks.md): rank kind_params fault_rank (default
    the last) runs `fault`; the others go straight on to the group's closing barrier (stage
    barrier, stacks/parallel.run_rank), where they wait for it, as ranks blocked in a
    collective on a failing peer do."""

    def run(request: TestRequest, result: Result, context: Context) -> None:
        if request.rank == int(request.kind_params.given.get("fault_rank") or request.ranks - 1):
            fault(request, result, context)

    return run


def noop(request: TestRequest, result: Result, context: Context) -> None:
    """Does nothing: measures what the harness costs around a test."""


def _sleep_forever():
    while True:
        time.sleep(3600)


def hang(request: TestRequest, result: Result, context: Context) -> None:
    """Sleeps in stage `compile` (a stage mark) until the deadline's SIGTERM."""
    from .common import recorded

    with recorded(result, "compile", "fail_to_compile"):
        _sleep_forever()


def hang_hard(request: TestRequest, result: Result, context: Context) -> None:
    """Ignores SIGTERM and leaves a grandchild holding stdout/stderr open."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.fork() == 0:
        _sleep_forever()
    _sleep_forever()


def segfault(request: TestRequest, result: Result, context: Context) -> None:
    """Dereferences NULL in stage `load` (inside stage `export`: two stage marks)."""
    from .common import recorded

    with recorded(result, "export", "fail_to_compile"), recorded(result, "load", "fail_to_run"):
        ctypes.string_at(0)


def abort(request: TestRequest, result: Result, context: Context) -> None:
    os.abort()


def oom(request: TestRequest, result: Result, context: Context) -> None:
    """Allocates and touches 64 MiB chunks until killed, or until an rlimit refuses.

    Refuses to run without a memory limit: it would exhaust the host.
    """
    if not request.memory_limit.method:
        result.set_status("harness_error", "kind oom needs a memory_limit", "run")
        return
    chunks = []
    count = 0
    try:
        while True:
            chunks.append(b"\x01" * CHUNK)  # filled, so every page is touched
            count += 1
    except MemoryError as exc:
        chunks.clear()
        result.fail("oom", "run", exc, detail=f"allocation refused after {count} chunks of 64 MiB")


def raise_(request: TestRequest, result: Result, context: Context) -> None:
    def explode():
        raise RuntimeError("raised on purpose by kind 'raise'")

    try:
        explode()
    except RuntimeError as exc:
        result.fail("fail_to_run", "run", exc)


def flood(request: TestRequest, result: Result, context: Context) -> None:
    """Writes kind_params.bytes to stdout, then to stderr; then passes."""
    total = request.kind_params.bytes
    block = b"x" * 1023 + b"\n"
    for fd in (1, 2):
        left = total
        while left > 0:
            left -= os.write(fd, block[: min(len(block), left)])


def kill_zygote(request: TestRequest, result: Result, context: Context) -> None:
    """SIGKILLs the zygote (kind_params.pid, else the zygote that forked this child)."""
    pid = request.kind_params.pid or getattr(context, "zygote_pid", None)
    if not pid:
        result.set_status("harness_error", "no zygote pid to kill", "run")
        return
    os.kill(int(pid), signal.SIGKILL)
