"""Stage marks (doc/worker-protocol.md, "Stage marks"): before the result object, a test
child writes to its result pipe one line `{"stage": NAME}` each time it enters a stage
(`kinds.common.recorded`) and, when it leaves one, the stage it is back in. A child that
dies (a signal, the deadline, the OOM killer) leaves no result, and its last mark tells
the supervisor where it was: the row's `stage`.

    stage_marks.open_on(result_fd)   # the zygote's test child; run_one writes none
"""

from __future__ import annotations

import json
import os

_fd: int | None = None
_stack: list[str] = []


def open_on(fd: int) -> None:
    """Marks go to `fd` from now on (the result pipe, before the result object)."""
    global _fd
    _fd = fd
    _stack.clear()


def enter(name: str) -> None:
    _stack.append(name)
    _write(name)


def leave() -> None:
    if _stack:
        _stack.pop()
    if _stack:
        _write(_stack[-1])


def at(name: str) -> None:
    """The child is in stage `name` now, with no stage to go back to (a rank past its
    rendezvous is at `run`, the supervisor's own name for a child without marks)."""
    _stack.clear()
    _write(name)


def write_mark(name: str, rank: int) -> None:
    """A test over several ranks: the leader passes on rank `rank`'s mark (worker/group.py)."""
    _write(name, rank)


def _write(name: str, rank: int | None = None) -> None:
    if _fd is None:
        return
    mark = {"stage": name} if rank is None else {"stage": name, "rank": rank}
    line = (json.dumps(mark) + "\n").encode()
    try:
        os.write(_fd, line)  # one write of a short line: atomic on a pipe (PIPE_BUF)
    except OSError:
        pass  # the supervisor reads it to the end; a broken pipe only loses the mark
