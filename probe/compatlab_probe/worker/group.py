"""A test over several ranks (doc/ranks.md): one process group, supervised as one test.

The test child T (forked by the zygote, its own process group and memory cgroup) becomes
the group's leader. It forks the N rank processes at once, before any torch op, so each
starts from the zygote's image as any test child does; they stay in T's process group and
cgroup, so the supervisor's deadline (SIGTERM then SIGKILL to the group) and its clean-up
of the group and cgroup reach every rank. The leader runs no torch op itself:

  T (leader) --fork--> rank 0 .. rank N-1     each: rendezvous (FileStore in a temporary
                                              directory), the kind (run_test), a result
  rank r --pipe--> T: stage marks {"stage": S}, then one result object
  T --result pipe--> supervisor: {"stage": S, "rank": r} marks, then the combined result

A rank killed by a signal (a crash, or the OOM killer's SIGKILL) kills the others and then
the leader itself with that signal, after a mark naming the rank and its stage: the
supervisor decides crash (or oom from the cgroup's counter) as for one process, naming
the rank. At the deadline's SIGTERM the leader marks the rank that holds the group up (the
rank not waiting for the others whose stage began longest ago) before it dies of it.
Each rank's Python stacks at that SIGTERM (faulthandler) go to a file of its own, which
the leader copies onto the shared stderr rank by rank once the ranks have ended (at most
STACKS_WAIT_S): written by all at once onto stderr they came out interleaved, so that the
hung rank's frames could not be read.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from typing import Any

from ..host.runtime import stack_info
from ..kinds.context import Context
from ..protocol import stage_marks
from ..protocol.request import TestRequest
from ..protocol.result import Result

EXIT_NO_RESULT = 70
# At the deadline the leader waits this long for the ranks' stack dumps (the supervisor's
# SIGKILL follows its SIGTERM after --grace, 2 s by default); each is copied up to
# STACKS_BYTES.
STACKS_WAIT_S = 1.0
STACKS_BYTES = 32 << 10
# Stages in which a rank waits for the others (stacks/parallel.py): a hang is not theirs.
WAIT_STAGES = ("rendezvous", "barrier")


@dataclass
class _Rank:
    rank: int
    pid: int
    fd: int
    buffer: bytes = b""
    stage: str = "rendezvous"
    stage_at: float = field(default_factory=time.monotonic)
    result: dict[str, Any] | None = None
    wait_status: int | None = None


def run_group(request: TestRequest, context: Context | None, prepare: Any, run: Any) -> dict[str, Any]:
    """The leader's whole work: `prepare(request)` (the memory limit, applied once in the
    leader and inherited by the ranks; a result dict when it failed), the ranks forked, each
    running `run(request, context)` (child.run_test), waited for, their results combined.
    Never returns when a rank died of a signal."""
    problem = prepare(replace(request, torch_num_threads=0))
    if problem:
        return problem
    workdir = tempfile.mkdtemp(prefix="compatlab-ranks-", dir=request.compile.cache_dir or None)
    ranks: list[_Rank] = []
    try:
        for r in range(request.ranks):
            ranks.append(_fork_rank(replace(request, rank=r), os.path.join(workdir, "store"),
                                    lambda req: run(req, context), ranks))
        _on_deadline(ranks, workdir)
        failed = _wait(ranks)
        if failed is not None:
            return _rank_failed(ranks, failed, workdir)
        return _combined(ranks)
    finally:
        _kill(ranks)
        shutil.rmtree(workdir, ignore_errors=True)


def _stacks_path(workdir: str, rank: int) -> str:
    return os.path.join(workdir, f"rank{rank}.stacks")


def _fork_rank(request: TestRequest, store_path: str, run: Any, forked: list[_Rank]) -> _Rank:
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        for other in forked:
            os.close(other.fd)
        _rank_main(request, write_fd, store_path, run)
    os.close(write_fd)
    return _Rank(rank=request.rank, pid=pid, fd=read_fd)


def _rank_main(request: TestRequest, fd: int, store_path: str, run: Any) -> None:
    """A rank process (never returns): threads, rendezvous, the kind, its result on `fd`."""
    from ..host.osutil import run_then_exit

    def work() -> int:
        import faulthandler

        from ..stacks import parallel

        # The deadline's SIGTERM dumps this rank's stacks into its own file (the leader
        # copies it onto stderr); the signal then takes its course as before.
        stacks = open(_stacks_path(os.path.dirname(store_path), request.rank), "w")  # noqa: SIM115 - kept for the dump
        faulthandler.register(signal.SIGTERM, file=stacks, chain=True)
        stage_marks.open_on(fd)
        result = parallel.run_rank(request, store_path, run)
        sys.stdout.flush()
        sys.stderr.flush()
        data = json.dumps(result).encode()
        while data:
            data = data[os.write(fd, data):]
        return 0

    run_then_exit(work, EXIT_NO_RESULT)


def _read(rank: _Rank) -> bool:
    """Reads what `rank` wrote; forwards each complete stage mark; False at EOF."""
    try:
        chunk = os.read(rank.fd, 1 << 16)
    except OSError:
        chunk = b""
    if not chunk:
        return False
    rank.buffer += chunk
    while b"\n" in rank.buffer:
        line, rank.buffer = rank.buffer.split(b"\n", 1)
        try:
            name = json.loads(line)["stage"]
        except (ValueError, KeyError, TypeError):
            continue
        rank.stage, rank.stage_at = str(name), time.monotonic()
        stage_marks.write_mark(rank.stage, rank.rank)
    return True


def _wait(ranks: list[_Rank]) -> _Rank | None:
    """Until every rank has exited: reads their pipes and reaps them. Returns the first rank
    that ended without a result (a signal, or an exit without one), else None."""
    open_fds = {r.fd: r for r in ranks}
    while True:
        if open_fds:
            ready, _, _ = select.select(list(open_fds), [], [], 0.1)
            for fd in ready:
                if not _read(open_fds[fd]):
                    del open_fds[fd]
        else:
            time.sleep(0.01)
        for rank in ranks:
            if rank.wait_status is not None:
                continue
            pid, status = os.waitpid(rank.pid, os.WNOHANG)
            if pid == 0:
                continue
            rank.wait_status = status
            while rank.fd in open_fds and _read(rank):
                pass
            open_fds.pop(rank.fd, None)
            _parse_result(rank)
            if rank.result is None or os.WIFSIGNALED(status):
                return rank
        if all(r.wait_status is not None for r in ranks):
            return None


def _parse_result(rank: _Rank) -> None:
    try:
        value = json.loads(rank.buffer) if rank.buffer.strip() else None
    except ValueError:
        value = None
    rank.result = value if isinstance(value, dict) and "status" in value else None


def _kill(ranks: list[_Rank]) -> None:
    """SIGKILLs and reaps every rank still running; closes the pipes."""
    for rank in ranks:
        if rank.wait_status is None:
            try:
                os.kill(rank.pid, signal.SIGKILL)
                _, rank.wait_status = os.waitpid(rank.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                rank.wait_status = -1
        try:
            os.close(rank.fd)
        except OSError:
            pass


def _rank_failed(ranks: list[_Rank], failed: _Rank, workdir: str) -> dict[str, Any]:
    """A rank ended without a result: the group is killed; a signal is passed on to the
    leader itself (crash, or oom by the cgroup's counter), else a harness_error naming it."""
    stage_marks.write_mark(failed.stage, failed.rank)
    _kill(ranks)
    status = failed.wait_status or 0
    if os.WIFSIGNALED(status):
        _die_of(os.WTERMSIG(status), workdir)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    result = Result(stack_info()).set_status(
        "harness_error", f"rank {failed.rank} of {len(ranks)} exited with code {code} without a result "
                         f"(in stage {failed.stage})", "harness")
    result.error_type = "RankFailed"
    result.error_message = result.status_detail
    return result.to_dict()


def _die_of(sig: int, workdir: str) -> None:
    """The leader ends by `sig` (its default action), as the rank did; the group's
    `workdir` is removed first (run_group's finally never runs)."""
    import faulthandler

    shutil.rmtree(workdir, ignore_errors=True)
    sys.stdout.flush()
    sys.stderr.flush()
    faulthandler.disable()
    if sig != signal.SIGKILL:
        signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    time.sleep(5)
    os._exit(EXIT_NO_RESULT)


def holding_up(ranks: list[_Rank]) -> _Rank | None:
    """The rank that holds the group up: among those still running, the ones not waiting for
    the others (WAIT_STAGES) if any, the one whose stage began longest ago."""
    running = [r for r in ranks if r.wait_status is None and r.result is None]
    working = [r for r in running if r.stage not in WAIT_STAGES] or running
    return min(working, key=lambda r: r.stage_at, default=None)


def _on_deadline(ranks: list[_Rank], workdir: str) -> None:
    """At the supervisor's SIGTERM: a mark naming the rank that holds the group up, the
    ranks' stacks onto stderr rank by rank (_copy_stacks), then the leader dies of SIGTERM
    (the ranks got it from the group's signal too)."""

    def handler(signum, frame):
        rank = holding_up(ranks)
        if rank is not None:
            stage_marks.write_mark(rank.stage, rank.rank)
        _copy_stacks(ranks, workdir)
        _die_of(signal.SIGTERM, workdir)

    signal.signal(signal.SIGTERM, handler)


def _copy_stacks(ranks: list[_Rank], workdir: str) -> None:
    """Waits up to STACKS_WAIT_S for the ranks to end (their dumps then complete), then
    writes each rank's stack file onto stderr under a line naming it, in rank order."""
    deadline = time.monotonic() + STACKS_WAIT_S
    while time.monotonic() < deadline:
        for rank in ranks:
            if rank.wait_status is None:
                try:
                    pid, status = os.waitpid(rank.pid, os.WNOHANG)
                except ChildProcessError:
                    pid, status = rank.pid, -1
                if pid != 0:
                    rank.wait_status = status
        if all(r.wait_status is not None for r in ranks):
            break
        time.sleep(0.02)
    sys.stderr.flush()
    for rank in ranks:
        try:
            with open(_stacks_path(workdir, rank.rank), "rb") as f:
                dump = f.read(STACKS_BYTES)
        except OSError:
            continue
        if dump:
            os.write(2, f"compatlab: rank {rank.rank}'s Python stacks at the deadline:\n".encode() + dump)


def _combined(ranks: list[_Rank]) -> dict[str, Any]:
    """Rank 0's result, with each rank's memory and steady time as lists; a rank whose status
    is not rank 0's (rank 0 passed, another did not) gives its status, named."""
    results = [r.result or {} for r in ranks]
    combined = dict(results[0])
    metrics = dict(combined.get("metrics") or {})

    def per_rank(key: str, fallback: str = "") -> str | None:
        values = [(res.get("metrics") or {}).get(key) or (res.get("metrics") or {}).get(fallback) for res in results]
        return json.dumps(values) if any(v is not None for v in values) else None

    metrics["rank_host_mem"] = per_rank("host_mem_bytes")
    metrics["rank_steady_median"] = per_rank("steady_median_s", "train_steady_step_s")
    combined["metrics"] = metrics
    if combined.get("status") == "pass":
        for rank, res in zip(ranks, results, strict=True):
            if res.get("status") != "pass":
                combined.update({k: res.get(k) for k in ("status", "stage", "error_type", "error_message",
                                                         "error_traceback")})
                combined["status_detail"] = f"rank {rank.rank}: {res.get('status_detail') or res.get('status')}"
                break
    return combined
