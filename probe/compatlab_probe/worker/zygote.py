"""`python -m compatlab_probe.worker.zygote`: the fork server of doc/worker-protocol.md (version 1).

The zygote imports torch and transformers once, runs no torch op, and forks one
test child T per `fork` message, through an intermediate process I so that T is
reparented to the supervisor (a child subreaper) that waits for it:

  zygote --fork--> I --fork--> T      I: setpgid(T, T), sends T's pid, exits
  zygote reaps I, closes its copies of T's pipes, answers `forked`

T redirects stdout/stderr to the given pipes, keeps only the result pipe,
waits to be reparented, sets PR_SET_PDEATHSIG, applies its limits, runs the
test and writes one JSON result object to the result pipe.
"""

from __future__ import annotations

import faulthandler
import gc
import importlib
import json
import os
import signal
import socket
import sys
import time
import traceback
from typing import Any

from ..host.runtime import apply_env
from ..protocol import PROTOCOL_VERSION
from ..protocol.request import supervisor_pid_of

MAX_DATAGRAM = 1 << 20
FORK_FDS = 3  # stdout, stderr, result
EXIT_ORPHANED = 3  # T found the supervisor gone before it started
EXIT_NO_RESULT = 70  # T could not write its result


def log(message: str) -> None:
    print(f"compatlab zygote[{os.getpid()}]: {message}", file=sys.stderr, flush=True)


def _supervisor_pid(test: Any) -> int:
    """The request's supervisor_pid, else COMPATLAB_SUPERVISOR_PID, else 0 (no check)."""
    return supervisor_pid_of(test) or int(os.environ.get("COMPATLAB_SUPERVISOR_PID") or 0)


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


class Zygote:
    """Serves the control socket until EOF or `shutdown`."""

    def __init__(self, sock: socket.socket, import_s: float):
        self.sock = sock
        self.import_s = import_s

    def send(self, message: dict[str, Any]) -> None:
        self.sock.send(json.dumps(message).encode())

    def serve(self) -> int:
        while True:
            data, fds, flags, _ = socket.recv_fds(self.sock, MAX_DATAGRAM, FORK_FDS)
            if not data:
                return 0  # the supervisor closed the socket
            try:
                if self.handle(data, fds, flags) == "shutdown":
                    return 0
            except Exception:  # never die on one bad message
                log("error handling a message:\n" + traceback.format_exc())
                _close(fds)

    def handle(self, data: bytes, fds: list[int], flags: int) -> str | None:
        try:
            message = json.loads(data)
            kind = message.get("type")
        except (ValueError, AttributeError):
            log(f"ignoring a message that is not a JSON object: {data[:200]!r}")
            _close(fds)
            return None
        if kind == "fork":
            truncated = bool(flags & socket.MSG_CTRUNC)
            self.fork(message, fds, truncated)
            return None
        _close(fds)
        if kind == "preload":
            self.preload(message.get("model_types") or [], message.get("compile_calibration"),
                         message.get("modules"))
        elif kind == "shutdown":
            return "shutdown"
        else:
            log(f"ignoring unknown message type {kind!r}")
        return None

    # ----------------------------------------------------------------- preload

    def preload(self, model_types: list[str], calibration: Any = None, modules: Any = None) -> None:
        """Imports the modelling modules of `model_types`, then `modules` (module names: an op
        sweep's OpInfo database, doc/worker-protocol.md); with `calibration`
        ({"seed_dir": DIR}), then runs the sweep's calibration compile
        (compiler.calibrate); answers `ready`."""
        from ..host.osutil import thread_names
        from ..host.runtime import stack_info
        from ..models import heads

        failures = {}
        start = time.perf_counter()
        for model_type in model_types:
            try:
                importlib.import_module(heads.modeling_module_name(str(model_type)))
            except (Exception, SystemExit) as exc:
                failures[str(model_type)] = f"{type(exc).__name__}: {exc}"
        for module in modules if isinstance(modules, list) else []:
            try:
                importlib.import_module(str(module))
            except (Exception, SystemExit) as exc:
                failures[str(module)] = f"{type(exc).__name__}: {exc}"
        self.import_s += time.perf_counter() - start
        ready = {"type": "ready", "protocol": PROTOCOL_VERSION, "pid": os.getpid()}
        if isinstance(calibration, dict) and isinstance(calibration.get("seed_dir"), str) \
                and calibration["seed_dir"]:
            from ..stacks.compiler import calibrate

            ready.update(calibrate(calibration["seed_dir"]))
        ready.update(stack_info())
        ready.update(import_s=round(self.import_s, 3), threads=len(thread_names()),
                     import_failures=failures)
        self.send(ready)

    # ----------------------------------------------------------------- fork

    def fork(self, message: dict[str, Any], fds: list[int], truncated: bool) -> None:
        from ..host.osutil import thread_names

        request_id = message.get("request_id")
        test = message.get("test")
        try:
            if len(fds) != FORK_FDS or truncated:
                raise ForkRefused(f"fork needs exactly {FORK_FDS} descriptors, got {len(fds)}")
            if not isinstance(test, dict):
                raise ForkRefused("fork needs a test object")
            names = thread_names()
            if len(names) != 1:
                raise ForkRefused(f"zygote has {len(names)} threads: {', '.join(names)}")
            pid, go = self._double_fork(test, fds)
        except ForkRefused as exc:
            self.send({"type": "fork_failed", "request_id": request_id, "error": str(exc)})
            return
        finally:
            _close(fds)
        try:
            self.send({"type": "forked", "request_id": request_id, "pid": pid, "pgid": pid})
        finally:
            # T starts its test only once the supervisor knows its pid: a test
            # that kills the zygote (kind kill-zygote) must not beat this answer.
            os.close(go)

    def _double_fork(self, test, fds):
        """Forks I, which forks T; returns (T's pid, the write end of T's go pipe).

        T waits for EOF on its go pipe before it runs the test; the caller closes
        the returned write end once the supervisor has T's pid. Raises ForkRefused.
        """
        sys.stdout.flush()
        sys.stderr.flush()
        # Every object the zygote holds (torch, transformers, the modelling modules, the
        # started compiler: half a million tracked objects) goes to the permanent generation
        # first, so that T's full collections never traverse them: a model-cold compile of
        # llama spent 0.37 s in T's collections, 0.09 s frozen (doc/probe.md, "Compiler
        # start-up"); nor do they write to those objects' pages, which stay shared.
        gc.freeze()
        zygote_pid = os.getpid()
        read_end, write_end = os.pipe()
        go_read, go_write = os.pipe()
        try:
            intermediate = os.fork()
        except OSError as exc:
            _close((read_end, write_end, go_read, go_write))
            raise ForkRefused(f"fork: {exc}") from exc
        if intermediate == 0:
            os.close(go_write)
            _intermediate(test, fds + [go_read], read_end, write_end, zygote_pid, self.sock)
        os.close(write_end)
        os.close(go_read)
        chunks = []
        while chunk := os.read(read_end, 4096):
            chunks.append(chunk)
        os.close(read_end)
        os.waitpid(intermediate, 0)
        answer = b"".join(chunks).decode()
        if answer.startswith("pid "):
            return int(answer[4:]), go_write
        os.close(go_write)
        raise ForkRefused(answer or "intermediate process died without forking")


class ForkRefused(Exception):
    """The zygote answers fork_failed with this message."""


def _close(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _intermediate(test, fds, read_end, write_end, zygote_pid, sock):
    """Process I: forks T, puts T in its own process group, reports T's pid, exits."""
    try:
        os.close(read_end)
        my_pid = os.getpid()
        child = os.fork()
        if child == 0:
            _test_child(test, fds, write_end, my_pid, zygote_pid, sock)
        try:
            os.setpgid(child, child)
        except OSError:  # T did it first, or is already gone: both fine
            pass
        _write_all(write_end, f"pid {child}".encode())
        os._exit(0)
    except BaseException as exc:
        try:
            _write_all(write_end, f"intermediate: {type(exc).__name__}: {exc}".encode())
        finally:
            os._exit(1)


def _test_child(test, fds, pid_pipe, intermediate_pid, zygote_pid, sock):
    """Process T (never returns)."""
    from ..host.osutil import run_then_exit

    run_then_exit(lambda: _test_child_work(test, fds, pid_pipe, intermediate_pid, zygote_pid, sock),
                  EXIT_NO_RESULT)


def _test_child_work(test, fds, pid_pipe, intermediate_pid, zygote_pid, sock) -> int:
    """T's work; returns its exit code."""
    result_fd = fds[2]
    os.close(pid_pipe)
    os.read(fds[3], 1)  # EOF once the zygote has told the supervisor T's pid
    os.close(fds[3])
    sock.detach()
    os.setpgid(0, 0)
    os.dup2(fds[0], 1)
    os.dup2(fds[1], 2)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    from ..host.osutil import close_fds_except, set_pdeathsig

    close_fds_except({result_fd})
    while os.getppid() == intermediate_pid:
        time.sleep(0.0005)
    set_pdeathsig(signal.SIGKILL)
    supervisor = _supervisor_pid(test)
    if supervisor and os.getppid() != supervisor:
        return EXIT_ORPHANED
    from ..kinds.context import Context
    from ..protocol import stage_marks
    from .child import run_child

    # A fatal signal (SIGSEGV in an extension, SIGABRT) and the supervisor's SIGTERM at
    # the deadline print every thread's Python stack into the stderr tail first; the
    # signal then takes its course (the wait status stays the signal's).
    faulthandler.enable()
    faulthandler.register(signal.SIGTERM, chain=True)
    stage_marks.open_on(result_fd)
    result = run_child(test, Context(zygote_pid=zygote_pid))
    sys.stdout.flush()
    sys.stderr.flush()
    _write_all(result_fd, json.dumps(result).encode())
    os.close(result_fd)
    return 0


def main() -> int:
    apply_env()
    from ..host.osutil import set_pdeathsig

    set_pdeathsig(signal.SIGKILL)
    start = time.perf_counter()
    import torch  # noqa: F401  (imported once here, inherited by every test child)
    import transformers  # noqa: F401

    from .. import kinds  # noqa: F401
    from ..models import factory, heads, inputs  # noqa: F401
    from . import child  # noqa: F401
    import_s = time.perf_counter() - start
    sock = socket.socket(fileno=int(os.environ.get("COMPATLAB_CONTROL_FD", "3")))
    return Zygote(sock, import_s).serve()


if __name__ == "__main__":
    sys.exit(main())
