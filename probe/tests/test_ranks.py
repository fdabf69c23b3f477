"""Tests over several ranks (doc/ranks.md): the request, the leader's rules, a real group.

The group's failures (a rank that crashes, hangs or runs out of memory) end the leader
itself: tests/e2e/test_ranks.py checks them through the real supervisor.
"""

import json
import os
import subprocess
import sys
import types

import pytest

from compatlab_probe.protocol import stage_marks
from compatlab_probe.protocol.request import BadRequest, parse_request
from compatlab_probe.stacks import parallel
from compatlab_probe.worker import group
from compatlab_probe.worker.child import run_child


def test_ranks_are_parsed_bounded_and_say_whether_the_test_is_a_group():
    assert parse_request({"kind": "noop"}).ranks == 1
    assert not parse_request({"kind": "noop"}).in_group
    assert parse_request({"kind": "noop", "ranks": 2}).in_group
    # A group of one: kind_params parallel with one rank (--parallel, doc/ranks.md).
    assert parse_request({"kind": "noop", "kind_params": {"parallel": "tp"}}).in_group
    with pytest.raises(BadRequest, match="ranks"):
        parse_request({"kind": "noop", "ranks": 65})
    with pytest.raises(BadRequest, match="ranks"):
        parse_request({"kind": "noop", "ranks": 0})


def test_the_rank_holding_the_group_up_is_the_oldest_stage_not_waiting_for_the_others():
    waiting = group._Rank(rank=0, pid=1, fd=-1, stage="barrier", stage_at=1.0)
    hung = group._Rank(rank=1, pid=2, fd=-1, stage="compile", stage_at=2.0)
    later = group._Rank(rank=2, pid=3, fd=-1, stage="steady", stage_at=3.0)
    assert group.holding_up([waiting, hung, later]) is hung
    # Every rank waiting: the one that began waiting first.
    assert group.holding_up([waiting, group._Rank(rank=1, pid=2, fd=-1, stage="rendezvous", stage_at=5.0)]) \
        is waiting
    done = group._Rank(rank=3, pid=4, fd=-1, stage="compile", stage_at=0.5, wait_status=0)
    assert group.holding_up([done, hung]) is hung


def test_a_rank_mark_names_its_rank(tmp_path):
    read_fd, write_fd = os.pipe()
    try:
        stage_marks.open_on(write_fd)
        stage_marks.write_mark("prepare", 1)
        stage_marks.enter("build")
        assert [json.loads(line) for line in os.read(read_fd, 4096).decode().splitlines()] == [
            {"stage": "prepare", "rank": 1}, {"stage": "build"}]
    finally:
        stage_marks.open_on(None)
        os.close(read_fd)
        os.close(write_fd)


def _model(model_type):
    return types.SimpleNamespace(config=types.SimpleNamespace(model_type=model_type))


def test_a_model_without_a_tensor_parallel_plan_is_skipped_with_its_reason():
    two = parse_request({"kind": "forward", "ranks": 2, "model_type": "bert"})
    assert "no tensor-parallel plan" in parallel.unsplittable_reason(_model("bert"), two)
    assert parallel.unsplittable_reason(_model("gpt2"), two) == ""  # compatlab's family plan
    one = parse_request({"kind": "forward", "kind_params": {"parallel": "tp"}})
    assert parallel.unsplittable_reason(_model("bert"), one) == ""  # one rank: nothing to split
    dp = parse_request({"kind": "forward", "ranks": 2, "kind_params": {"parallel": "dp"}})
    assert parallel.unsplittable_reason(_model("bert"), dp) == "--parallel dp takes kind train only, not forward"


def test_a_group_of_noop_ranks_forms_over_gloo_and_answers_once():
    result = run_child({"kind": "noop", "ranks": 2, "timeout_s": 60})
    assert result["status"] == "pass", result
    assert result["metrics"]["dist_backend"] == "gloo"


@pytest.mark.slow  # a compiled llama over 2 ranks: 31 s at load 8 on a 2-core machine
def test_a_dynamic_test_runs_every_shape_on_the_model_split_over_two_ranks():
    """sweep --dynamic with --ranks 2 is planned, not refused: each rank compiles its split
    model once (mark_dynamic on the varying dim) and runs every shape, each judged against
    the single-device reference; the collectives keep the ranks' calls in step."""
    request = {"kind": "forward", "mode": "compile", "backend": "aot_eager", "target": "cpu", "model_type": "llama",
               "dtype": "float32", "batch_size": 1, "seq_len": 8, "ranks": 2, "dynamic": "mark", "shapes": "1x8,1x16",
               "compile_options": {"dynamic": False}, "measure": {"warmup": 0, "min_iters": 2, "min_time_s": 0.0},
               "timeout_s": 600}
    # A fresh interpreter, as a sweep's zygote is: in this process, which has the test device
    # loaded (conftest.py), the cpu group fails at prepare ("No backend type associated with
    # device type ctest").
    proc = subprocess.run([sys.executable, "-m", "compatlab_probe.worker.run_one"], input=json.dumps(request),
                          capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["status"] == "pass", (result["stage"], result["status_detail"], result["error_message"])
    metrics = result["metrics"]
    assert metrics["parallel_plan"].startswith("tp: ") and metrics["dist_backend"] == "gloo"
    assert json.loads(metrics["dyn_recompiles"]) == [[0, 0], [1, 0]]
    assert json.loads(metrics["dyn_acc_passed"]) == [[0, 1], [1, 1]]
    assert len(json.loads(metrics["rank_steady_median"])) == 2
