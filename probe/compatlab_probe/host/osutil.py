"""Linux process helpers: prctl, thread listing, descriptors, memory high-water mark."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_libc.prctl.restype = ctypes.c_int


def _prctl(option, arg):
    if _libc.prctl(option, arg, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def run_then_exit(work: Callable[[], int], failed: int) -> NoReturn:
    """A forked process's whole life: `work()` returns its exit code; any exception (even
    SystemExit) prints its traceback and the exit code is `failed`. stdout and stderr are
    flushed, then os._exit: no atexit handler or cleanup of the parent runs here."""
    code = failed
    try:
        code = work()
    except BaseException:  # noqa: BLE001 - the exit code and stderr tell
        try:
            traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def set_pdeathsig(sig: int = signal.SIGKILL) -> None:
    """Asks the kernel to send `sig` to this process when its parent dies."""
    _prctl(PR_SET_PDEATHSIG, int(sig))


def set_child_subreaper(enabled: bool = True) -> None:
    """Makes orphaned descendants of this process reparent to it (or stops doing so)."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1 if enabled else 0)


def thread_names() -> list[str]:
    """Names (comm) of this process's threads, one per thread, from /proc/self/task."""
    names = []
    for tid in sorted(os.listdir("/proc/self/task"), key=int):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:  # the thread ended meanwhile
            pass
    return names


def close_fds_except(keep: set[int]) -> None:
    """Closes every open descriptor >= 3 that is not in `keep`."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd >= 3 and fd not in keep:
            try:
                os.close(fd)
            except OSError:  # the descriptor of the listdir itself
                pass


def reset_peak_rss() -> bool:
    """Resets the kernel's RSS high-water mark (VmHWM). Returns False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _status_bytes(key: str) -> int | None:
    """A kB line of /proc/self/status (VmHWM, VmRSS, VmSize) in bytes, or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def peak_rss_bytes() -> int | None:
    """VmHWM of this process in bytes, or None when /proc does not say."""
    return _status_bytes("VmHWM")


def rss_bytes() -> int | None:
    """VmRSS (resident now) of this process in bytes, or None."""
    return _status_bytes("VmRSS")


def address_space_bytes() -> int | None:
    """VmSize (the whole virtual address space, what RLIMIT_AS bounds) in bytes, or None."""
    return _status_bytes("VmSize")
