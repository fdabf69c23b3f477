"""`Context`: what a kind may know about the process that started it (the third argument of
every kind, after the request and the result). The worker makes one per test child."""

from __future__ import annotations


class Context:
    """What a kind may need to know about the process that started it."""

    def __init__(self, zygote_pid: int | None = None):
        self.zygote_pid = zygote_pid
