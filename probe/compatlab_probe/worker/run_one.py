"""`python -m compatlab_probe.worker.run_one`: one test request (JSON) on stdin, its result on stdout.

Same code path as the zygote's test child minus the descriptor plumbing and
the reparenting. Whatever the model prints goes to stderr, so stdout carries
only the result object.
"""

from __future__ import annotations

import json
import os
import sys

from ..host.runtime import apply_env


def main() -> int:
    apply_env()
    request = json.load(sys.stdin)
    result_fd = os.dup(1)
    sys.stdout.flush()
    os.dup2(2, 1)  # the test's own prints go to stderr
    from ..kinds.context import Context
    from .child import run_child

    result = run_child(request, Context())
    sys.stdout.flush()
    with os.fdopen(result_fd, "w") as out:
        json.dump(result, out)
        out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
