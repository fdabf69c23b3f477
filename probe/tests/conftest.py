"""pytest set-up for the probe tests: offline hub, fork-safe environment, import paths."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_DIR = os.path.dirname(HERE)

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
for path in (PROBE_DIR, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)

# torch's autograd engine sizes its per-device queues at its first backward: a
# test process that ran a CPU backward before loading the ctest device would then
# fail a ctest backward ("device_ready_queues_" assert). A test child never does
# (the zygote runs no torch op; the child loads its target first), so the probe
# tests load the test device, when it is built, before any test runs.
_CTEST_LIB = os.path.join(os.path.dirname(PROBE_DIR), "build", "testdevice", "compatlab_testdevice.so")
if os.path.isfile(_CTEST_LIB) or os.environ.get("COMPATLAB_TESTDEVICE_LIB"):
    sys.path.insert(0, os.path.join(os.path.dirname(PROBE_DIR), "testdevice"))
    import compatlab_testdevice

    compatlab_testdevice.load()


@pytest.fixture
def standin_hub(tmp_path):
    """(server, env): a stand-in Hub API on 127.0.0.1 with no repositories, and the
    environment of a probe helper command that talks to it (online, hf_xet off, a token,
    its own Hub cache under tmp_path)."""
    import hubfake

    server = hubfake.StandInHub({})
    env = dict(os.environ, PYTHONPATH=PROBE_DIR, HF_HUB_CACHE=str(tmp_path / "cache"),
               HF_ENDPOINT=server.url, HF_HUB_DISABLE_XET="1", HF_TOKEN="hf_test")
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("TRANSFORMERS_OFFLINE", None)  # huggingface_hub reads it as HF_HUB_OFFLINE too
    yield server, env
    server.close()
