"""A test-only torch.compile backend (tests/e2e/test_flex_attention.py, never in a suite): it
compiles for an hour, so that a test compiled by it passes its deadline inside the compile."""

import time


def stall(gm, example_inputs):
    time.sleep(3600)
    return gm.forward
