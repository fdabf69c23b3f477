"""A probe command's answer on stdout: one JSON line, the answer object or, when the
command fails, {"error": REASON} with the command's exit code."""

from __future__ import annotations

import json
import sys
from typing import Any


def answer(out: dict[str, Any]) -> int:
    """Writes `out` as one JSON line (keys sorted); returns exit code 0."""
    json.dump(out, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


def refuse(reason: str, code: int) -> int:
    """Writes {"error": reason} as one JSON line; returns `code`, the command's exit code."""
    json.dump({"error": reason}, sys.stdout)
    sys.stdout.write("\n")
    return code


def failure_reason(exc: BaseException, own: type[BaseException]) -> str:
    """The one-line reason of `exc`: an `own` exception's text as it is (its reason is
    already one line), any other's type and first line (the type alone when it is empty)."""
    if isinstance(exc, own):
        return str(exc)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else type(exc).__name__}"
