"""The op batch's lines (compatlab_probe.ops.batch, doc/worker-protocol.md "Op batches"):
strict JSON a line each, one op_start and one op_case per op, even when a case's error
against the reference is not a finite number (empty_like's uninitialised memory under
check_skips), and compatlab's own failure on one op is that op's harness_error."""

import json
import os

import pytest

from compatlab_probe.ops import batch
from compatlab_probe.protocol import stage_marks
from compatlab_probe.protocol.request import parse_request
from compatlab_probe.protocol.result import Result


def _no_nan(token):
    raise ValueError(f"not JSON: {token}")


def run_batch(ops, **params):
    read_end, write_end = os.pipe()
    stage_marks.open_on(write_end)
    try:
        request = parse_request({"kind": "ops", "target": "cpu", "mode": "eager", "dtype": "float32",
                                 "kind_params": {"ops": ops, "max_samples": "2", **params}})
        result = Result()
        batch.run(request, result)
    finally:
        stage_marks.open_on(-1)
        stage_marks._fd = None
        os.close(write_end)
    with os.fdopen(read_end) as f:
        lines = [json.loads(line, parse_constant=_no_nan) for line in f.read().splitlines()]
    return result, lines


def test_non_finite_errors_are_written_as_null():
    assert batch._finite({"a": float("nan"), "b": [float("inf"), 1.5], "c": "x"}) == \
        {"a": None, "b": [None, 1.5], "c": "x"}


@pytest.mark.parametrize("check_skips", ["true", "false"])
def test_every_op_gets_its_start_and_its_case_as_strict_json(check_skips):
    result, lines = run_batch("empty_like,add,nope", check_skips=check_skips)
    assert result.status == "pass"
    assert [next(iter(line)) for line in lines] == ["op_start", "op_case"] * 3
    cases = {line["op_case"]["key"]: line["op_case"] for line in lines if "op_case" in line}
    assert cases["add"]["status"] == "pass"
    assert cases["empty_like"]["skip_source"] == "pytorch"
    assert cases["nope"]["status"] == "harness_error"


def test_compatlabs_own_failure_on_an_op_is_that_ops_harness_error(monkeypatch):
    real = batch.Batch.case

    def case(self, op, key):
        if key == "add":
            raise RuntimeError("compatlab broke")
        return real(self, op, key)

    monkeypatch.setattr(batch.Batch, "case", case)
    _, lines = run_batch("add,mul")
    cases = {line["op_case"]["key"]: line["op_case"] for line in lines if "op_case" in line}
    assert cases["add"]["status"] == "harness_error"
    assert cases["add"]["detail"] == "RuntimeError: compatlab broke"
    assert cases["mul"]["status"] == "pass"
