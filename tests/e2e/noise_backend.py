"""A test-only torch.compile backend (tests/e2e/test_noise.py, never in a suite): the graph
runs as dynamo captured it, after sleeping COMPATLAB_TEST_SLEEP_S seconds (unset or 0: no
sleep). It plants a known slowdown of the steady calls without changing the test's identity."""

import os
import time


def sleepy(gm, example_inputs):
    seconds = float(os.environ.get("COMPATLAB_TEST_SLEEP_S") or 0)
    if seconds <= 0:
        return gm.forward

    def run(*args):
        time.sleep(seconds)
        return gm.forward(*args)

    return run
