"""The limit of bench/compile: the same probe work as compatlab's compiled forward tests, for
the same models one after another in ONE process that has already compiled one unrelated
function, with torch._dynamo.reset() and a fresh cache directory per model.

    python bench/compile_limit.py THREADS MODEL...   # prints one JSON object per model

Each model runs child.run_test on the request a compatlab sweep sends (kind forward, mode
compile, the cpu profile's backend and options, batch 1, seq_len 32, float32, the default
measure settings, THREADS torch threads): build, one eager call, compile + first call,
steady, the reference. Its wall time is the test's limit.
"""

import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "probe"))

from compatlab_probe.host.runtime import apply_env  # noqa: E402

apply_env()

import torch  # noqa: E402
import transformers  # noqa: E402, F401

from compatlab_probe.models import heads  # noqa: E402
from compatlab_probe.stacks import target  # noqa: E402
from compatlab_probe.stacks.compiler import single_threaded_compile  # noqa: E402
from compatlab_probe.worker.child import run_test  # noqa: E402


def unrelated(x):
    return torch.tanh(x) * 2 - x.mean()


def main() -> int:
    threads, models = int(sys.argv[1]), sys.argv[2:]
    torch.set_num_threads(threads)
    for model in models:
        __import__(heads.modeling_module_name(model))
    profile = target.load_profile("cpu")
    root = tempfile.mkdtemp(prefix="compatlab-bench-limit-")
    try:
        single_threaded_compile()
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(root, "unrelated")
        torch.compile(unrelated, backend="inductor", dynamic=False)(torch.ones(3, 5))
        for model in models:
            torch._dynamo.reset()
            request = {"kind": "forward", "mode": "compile", "target": "cpu", "target_profile": profile,
                       "model_type": model, "model_id": f"hf:{model}", "dtype": "float32", "batch_size": 1,
                       "seq_len": 32, "torch_num_threads": threads, "compile_cache_dir": os.path.join(root, model),
                       "cache_phase": "cold", "measure": {"warmup": 3, "min_iters": 10, "min_time_s": 1.0}}
            start = time.perf_counter()
            result = run_test(request)
            wall = time.perf_counter() - start
            m = result["metrics"]
            print(json.dumps({"model": model, "status": result["status"], "wall_s": wall,
                              **{k: m.get(k) for k in ("build_s", "prepare_s", "steady_median_s",
                                                       "eager_steady_median_s")}}), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
