"""A compiled-only steady measurement (test_steady_blocks.py): one request on stdin, the
model built and compiled as the forward kind does, then steady calls of the compiled model
alone (measure.steady_state), no eager call between them. Prints {"steady_median_s", "steady_p90_s"}."""

import json
import sys

from compatlab_probe.host.runtime import stack_info
from compatlab_probe.kinds.phases import ModelTest
from compatlab_probe.measure.timing import steady_state
from compatlab_probe.protocol.request import parse_request
from compatlab_probe.protocol.result import Result
from compatlab_probe.stacks import compiler
from compatlab_probe.worker.child import prepare_process


def main() -> int:
    import torch

    request = parse_request(json.load(sys.stdin))
    assert prepare_process(request) is None
    test = ModelTest(request, Result(stack_info()))
    built = test.build()
    compiled = compiler.compile_callable(built.model, request, test.target)

    def call():
        with torch.no_grad():
            return compiled(**built.inputs)

    call()
    median, p90, _, _ = steady_state(call, request.measure, test.target.sync)
    print(json.dumps({"steady_median_s": median, "steady_p90_s": p90}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
