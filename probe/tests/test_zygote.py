"""The zygote end to end, driven by a Python fake supervisor (fake_supervisor.py)."""

import hashlib
import json
import os
import signal
import time

import pytest
from fake_supervisor import FakeSupervisor


@pytest.fixture(scope="module")
def supervisor():
    sup = FakeSupervisor()
    ready = sup.preload(["llama", "no_such_model_type"])
    sup.ready = ready
    yield sup
    sup.close()


def test_preload_answers_ready_and_survives_a_failed_import(supervisor):
    ready = supervisor.ready
    assert ready["type"] == "ready" and ready["protocol"] == 1
    assert ready["pid"] == supervisor.proc.pid
    assert ready["threads"] == 1
    assert ready["import_s"] > 0
    assert "no_such_model_type" in ready["import_failures"]
    assert "llama" not in ready["import_failures"]
    assert supervisor.proc.poll() is None


def test_noop_child_is_reparented_and_passes(supervisor):
    answer, status, out, err, result = supervisor.run({"kind": "noop"}, request_id=7)
    assert answer["type"] == "forked" and answer["request_id"] == 7
    assert answer["pgid"] == answer["pid"]
    # waitpid worked, so the child was reparented to this (subreaper) process.
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    parsed = json.loads(result)
    assert parsed["status"] == "pass" and parsed["protocol"] == 1


def test_segfault_gives_the_real_sigsegv_wait_status(supervisor):
    answer, status, out, err, result = supervisor.run({"kind": "segfault"})
    assert answer["type"] == "forked"
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSEGV
    assert result == b'{"stage": "export"}\n{"stage": "load"}\n'  # its marks, no result
    assert b"Fatal Python error: Segmentation fault" in err


def test_abort_gives_sigabrt(supervisor):
    _, status, _, _, _ = supervisor.run({"kind": "abort"})
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGABRT


def test_child_output_goes_to_the_given_pipes(supervisor):
    _, status, out, err, result = supervisor.run({"kind": "flood", "kind_params": {"bytes": "2048"}})
    assert len(out) == 2048 and len(err) == 2048
    assert b'"status": "pass"' in result


def test_forward_runs_in_a_forked_child(supervisor):
    test = {"kind": "forward", "mode": "eager", "target": "cpu", "model_type": "llama",
            "dtype": "float32", "batch_size": 1, "seq_len": 8, "torch_num_threads": 1,
            "measure": {"warmup": 1, "min_iters": 2, "min_time_s": 0.0}}
    _, status, _, _, result = supervisor.run(test)
    *marks, last = result.split(b"\n")
    parsed = json.loads(last)
    assert parsed["status"] == "pass", parsed["error_message"]
    assert parsed["metrics"]["torch_num_threads"] == 1
    # The stage marks before it: each stage entered, and the one it is back in.
    stages = [json.loads(m)["stage"] for m in marks]
    assert stages[:2] == ["build", "import"] and "prepare" in stages and stages[-1] == "compare", stages


FROZEN_MODEL = """
import gc
from transformers import LlamaConfig, LlamaForCausalLM

def build():
    with open({out!r}, "w") as f:
        f.write(f"{{gc.get_freeze_count()}} {{len(gc.get_objects())}}")
    return LlamaForCausalLM(LlamaConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
                                        intermediate_size=64, vocab_size=128))
"""


def test_a_child_starts_with_the_zygotes_heap_frozen(supervisor, tmp_path):
    # A code model's build runs in the test child and reports what its collections see.
    out = tmp_path / "heap.txt"
    code = tmp_path / "frozen_model.py"
    code.write_text(FROZEN_MODEL.format(out=str(out)))
    digest = hashlib.sha256(code.read_bytes()).hexdigest()
    test = {"kind": "forward", "mode": "eager", "target": "cpu", "model_type": "llama",
            "model_id": f"code:frozen_model.build@{digest[:16]}", "model_path": f"{code}:build",
            "dtype": "float32", "batch_size": 1, "seq_len": 8, "torch_num_threads": 1,
            "measure": {"warmup": 0, "min_iters": 2, "min_time_s": 0.0}}
    _, status, _, _, result = supervisor.run(test)
    assert json.loads(result.split(b"\n")[-1])["status"] == "pass"
    frozen, tracked = map(int, out.read_text().split())
    # torch, transformers and llama's modelling module alone are over 100,000 objects: all
    # frozen in the zygote, so the child's collections walk only what the child made.
    assert frozen > 100_000
    assert tracked < frozen


def test_rlimit_oom_is_reported_by_the_child(supervisor):
    # RLIMIT_AS is the child's own address space plus the limit (memlimit.py).
    test = {"kind": "oom", "memory_limit": {"method": "rlimit", "bytes": 256 << 20}}
    _, status, _, _, result = supervisor.run(test)
    parsed = json.loads(result)
    assert parsed["status"] == "oom" and parsed["error_type"] == "MemoryError"


def test_hang_is_killed_with_its_process_group(supervisor):
    pipes = [os.pipe() for _ in range(3)]
    supervisor.send({"type": "fork", "request_id": 9,
                     "test": {"kind": "hang-hard", "supervisor_pid": os.getpid()}},
                    [w for _, w in pipes])
    for _r, w in pipes:
        os.close(w)
    answer = supervisor.receive()
    time.sleep(0.3)
    os.killpg(answer["pgid"], signal.SIGKILL)
    _, status = os.waitpid(answer["pid"], 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    for r, _ in pipes:
        os.close(r)
    # The grandchild was in the same group, so it died too; it was reparented to us: reap it.
    deadline = time.time() + 10
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        try:
            os.killpg(answer["pgid"], 0)
        except ProcessLookupError:
            break  # nothing is left in the group
        assert time.time() < deadline, "the test child's process group outlived the kill"
        time.sleep(0.02)


def test_fork_without_descriptors_fails_cleanly(supervisor):
    supervisor.send({"type": "fork", "request_id": 11, "test": {"kind": "noop"}})
    answer = supervisor.receive()
    assert answer == {"type": "fork_failed", "request_id": 11,
                      "error": "fork needs exactly 3 descriptors, got 0"}
    assert supervisor.proc.poll() is None


def test_kill_zygote_kills_the_zygote_and_the_child_still_reports():
    sup = FakeSupervisor()
    try:
        _, status, _, _, result = sup.run({"kind": "kill-zygote"})
        assert b'"status": "pass"' in result
        assert sup.proc.wait(timeout=30) == -signal.SIGKILL
        assert sup.sock.recv(1 << 20) == b""  # the control socket closed
    finally:
        sup.close()


_THREADS_AFTER_PYARROW = """
import os, sys
if sys.argv[1] == "fork-safe":
    from compatlab_probe.host.runtime import apply_env
    apply_env()
os.environ["OPENBLAS_NUM_THREADS"] = "1"
import pyarrow
pyarrow.allocate_buffer(1 << 20)
print(",".join(sorted(open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task"))))
"""


def test_the_fork_safe_environment_keeps_pyarrow_single_threaded():
    """transformers 5.17 imports pyarrow (through scikit-learn and pandas) at import, and
    pyarrow's jemalloc then starts a background thread: the zygote could fork no test."""
    import pathlib
    import subprocess
    import sys

    probe_dir = pathlib.Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(probe_dir))
    env.pop("JE_ARROW_MALLOC_CONF", None)

    def threads(mode):
        return subprocess.run([sys.executable, "-c", _THREADS_AFTER_PYARROW, mode], env=env,
                              capture_output=True, text=True, check=True, timeout=60).stdout.strip()

    assert "jemalloc_bg_thd" in threads("plain")  # what the variable is there for
    assert threads("fork-safe") == "python"
