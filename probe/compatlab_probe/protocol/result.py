"""The result object a test child returns (doc/worker-protocol.md, "The result object")."""

from __future__ import annotations

import sys
import traceback
from typing import Any

from . import PROTOCOL_VERSION

# Statuses a child may decide for itself; timeout and crash are the supervisor's.
CHILD_STATUSES = (
    "pass", "fail_accuracy", "fail_to_load", "fail_to_compile", "fail_to_run",
    "oom", "skipped", "harness_error",
)
STAGES = ("import", "build", "compile", "export", "lower", "load", "prepare", "steady", "run", "compare", "harness")
TRACEBACK_LIMIT = 8 * 1024


def bounded_traceback(exc: BaseException) -> str:
    """The formatted traceback of `exc`, keeping its last TRACEBACK_LIMIT bytes."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    data = text.encode("utf-8", "replace")
    if len(data) > TRACEBACK_LIMIT:
        data = data[-TRACEBACK_LIMIT:]
    return data.decode("utf-8", "ignore")


def is_out_of_memory(exc: BaseException) -> bool:
    """An allocation refused: Python's MemoryError, torch's OutOfMemoryError (a
    RuntimeError of a refused device allocator), or torch's CPU allocator refused by the
    kernel (as under RLIMIT_AS)."""
    if isinstance(exc, MemoryError):
        return True
    torch = sys.modules.get("torch")
    oom = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    if oom is not None and isinstance(exc, oom):
        return True
    # torch's CPU allocator refused by the kernel (ENOMEM under RLIMIT_AS) raises a plain
    # RuntimeError from c10's enforce with this text.
    return isinstance(exc, RuntimeError) and "DefaultCPUAllocator: can't allocate memory" in str(exc)


class Result:
    """Builds one result object; `to_dict()` gives the wire form."""

    def __init__(self, stack: dict[str, str] | None = None):
        self.status = "pass"
        self.status_detail = ""
        self.stage = ""
        self.error_type = ""
        self.error_message = ""
        self.error_traceback = ""
        self.model_class = ""
        self.metrics = {}
        self.stack = stack or {}
        # Inductor's graph details of the first compiled call (stacks/graph_details.py), the
        # entry's form: kept with a compile-store entry, not reported (the run's own compact
        # form is the metric fx_graph_details).
        self.graph_details: dict[str, Any] | None = None

    def set_status(self, status: str, detail: str = "", stage: str = "") -> Result:
        if status not in CHILD_STATUSES:
            raise ValueError(f"a child cannot decide status {status!r}")
        self.status = status
        self.status_detail = detail
        self.stage = stage
        return self

    def fail(self, status: str, stage: str, exc: BaseException, detail: str = "") -> Result:
        """Records a failure caused by exception `exc` in `stage`."""
        self.set_status(status, detail, stage)
        self.error_type = type(exc).__name__
        self.error_message = str(exc)[:TRACEBACK_LIMIT]
        self.error_traceback = bounded_traceback(exc)
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL_VERSION,
            "status": self.status,
            "status_detail": self.status_detail,
            "stage": self.stage,
            "error_type": self.error_type,
            "error_message": self.error_message,
            "error_traceback": self.error_traceback,
            "model_class": self.model_class,
            "metrics": dict(self.metrics),
            "stack": dict(self.stack),
        }
