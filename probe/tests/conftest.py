"""pytest set-up for the probe tests: offline hub, fork-safe environment, import paths."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_DIR = os.path.dirname(HERE)

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
for path in (PROBE_DIR, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)
