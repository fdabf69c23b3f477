"""Issue 18: the compiled steady median of a forward test (compiled and eager calls in
alternating blocks) is within 10 % of a compiled-only measurement of the same model in a
separate child. Slow (two inductor compiles), and skipped on a loaded machine: it compares
timings, which a busy machine makes meaningless.

The rule that decides (QUIET_LOAD, NOISY_P90): the machine is quiet when its 1-minute load
average, before and after, is at most half its cores; a measurement is noisy when its p90 is
more than 1.5 times its median. Loaded or noisy: skipped with the figures, never passed.
"""

import json
import os
import subprocess
import sys

import pytest

from compatlab_probe.stacks import target

ROOT = target.ROOT
HERE = os.path.dirname(os.path.abspath(__file__))
QUIET_LOAD = 0.5  # load average per core
NOISY_P90 = 1.5
MEASURE = {"warmup": 3, "min_iters": 10, "min_time_s": 1.0}


def _loaded() -> str:
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    return f"load average {load:.2f} on {cores} cores" if load > QUIET_LOAD * cores else ""


def _child(args, request, tmp_path, name):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "probe"), HERE]), HF_HUB_OFFLINE="1")
    request = dict(request, compile_cache_dir=str(tmp_path / name))
    proc = subprocess.run([sys.executable, *args], input=json.dumps(request), capture_output=True, text=True,
                          env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("model_type", ["llama", "gpt2"])
def test_compiled_steady_median_matches_a_compiled_only_run(model_type, tmp_path):
    if reason := _loaded():
        pytest.skip(f"machine loaded ({reason}): timings not comparable")
    request = {"kind": "forward", "mode": "compile", "backend": "inductor", "target": "cpu",
               "model_type": model_type, "dtype": "float32", "batch_size": 1, "seq_len": 32,
               "torch_num_threads": 1, "cache_phase": "cold", "measure": MEASURE}
    test = _child(["-m", "compatlab_probe.worker.run_one"], request, tmp_path, "test")
    assert test["status"] == "pass", (test["stage"], test["error_message"][-2000:])
    alone = _child([os.path.join(HERE, "compiled_only.py")], request, tmp_path, "alone")
    m = test["metrics"]
    figures = (f"compiled median {m['steady_median_s'] * 1e3:.3f} ms (p90 {m['steady_p90_s'] * 1e3:.3f}), "
               f"compiled-only {alone['steady_median_s'] * 1e3:.3f} ms (p90 {alone['steady_p90_s'] * 1e3:.3f})")
    if reason := _loaded():
        pytest.skip(f"machine loaded by the end ({reason}): {figures}")
    for median, p90 in ((m["steady_median_s"], m["steady_p90_s"]), (alone["steady_median_s"], alone["steady_p90_s"])):
        if p90 > NOISY_P90 * median:
            pytest.skip(f"noisy measurement (p90 > {NOISY_P90} x median): {figures}")
    print(f"{model_type}: {figures}")  # shown with pytest -s: the figures the note quotes
    assert m["steady_median_s"] == pytest.approx(alone["steady_median_s"], rel=0.10), figures
