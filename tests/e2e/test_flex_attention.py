"""The flex-attention suite (doc/flex-attention.md): its 96 cases, a few of them run through
the real binary in eager and compile mode, and a compile past its deadline as a timeout row at
stage compile."""

import collections
import json
import re

import pytest

from .conftest import REPO

FLEX = REPO / "suites" / "flex-attention" / "flex.py"
VARIANTS = ("causal", "sliding_window", "prefix_lm", "document", "alibi", "softcap")
CODE_ID = re.compile(r"code:flex\.(\w+)_d(64|128)@[0-9a-f]{16}")


def test_the_suite_expands_to_96_distinct_cases_in_each_mode(cli):
    listing = cli.run("suites", "flex-attention", "--format", "json")
    assert listing.returncode == 0, listing.stderr
    tests = json.loads(listing.stdout)
    assert len(tests) == 192 and len({t["test_id"] for t in tests}) == 192
    cases = collections.defaultdict(set)
    for t in tests:
        match = CODE_ID.fullmatch(t["model_id"])
        assert match, t["model_id"]
        assert t["target"] == "cpu" and t["batch_size"] == 1
        assert t["model_path"] == f"{FLEX}:{match.group(1)}_d{match.group(2)}"
        cases[t["mode"]].add((match.group(1), int(match.group(2)), t["dtype"], t["seq_len"], t["kind"]))
    assert set(cases) == {"eager", "compile"}
    expected = {(v, d, dt, s, k) for v in VARIANTS for d in (64, 128) for dt in ("float32", "bfloat16")
                for s in (256, 1024) for k in ("forward", "train")}
    assert len(expected) == 96
    assert cases["eager"] == expected and cases["compile"] == expected


def test_a_suite_file_given_by_path_may_not_name_code(cli, db):
    suite = cli.write_suite("mine", code_models=["flex.py:causal_d64"])
    (cli.workdir / "flex.py").write_text(FLEX.read_text())
    proc = cli.run("sweep", "--suite", suite, "--db", db)
    assert proc.returncode == 2
    assert proc.stderr.startswith("compatlab: error: mine: 'code_models' runs code in every test")
    assert not db.exists()


@pytest.fixture(scope="module")
def flex_rows(compatlab_bin, tmp_path_factory):
    """One suite case (sliding window, head dim 64, float32, seq 256) forward, eager and
    compiled (aot_eager: inductor's start-up and flex template compile cost a loaded machine a
    minute; the suite's inductor rows are doc/flex-attention.md's figures), through
    --model-code on the suite's own file (the same code model the suite plans). Backward on
    the CPU: probe/tests/test_code_model.py."""
    from .conftest import Compatlab

    tmp = tmp_path_factory.mktemp("flex")
    cli, db = Compatlab(compatlab_bin, tmp), tmp / "store.db"
    cli.sweep("--model-code", f"{FLEX}:sliding_window_d64", "--modes", "eager,compile", "--kinds", "forward",
              "--dtypes", "float32", "--seq-lens", "256", "--backend", "aot_eager", "--max-measure-s", "0",
              "--db", db, timeout=280)
    return {r["mode"]: r for r in cli.runs(db)}


def test_forward_cases_pass_eager_and_compiled_against_the_plain_attention_reference(flex_rows):
    assert set(flex_rows) == {"eager", "compile"}
    for mode, row in flex_rows.items():
        assert row["status"] == "pass", (mode, row["status"], row["status_detail"], row["error_message"])
        assert CODE_ID.fullmatch(row["model_id"]) and row["seq_len"] == 256
        assert row["model_class"] == "FlexAttentionCase"
        assert row["acc_ref_dtype"] == "float64"
    assert flex_rows["eager"]["acc_rule"] == "baseline"
    assert flex_rows["eager"]["ill_conditioned"] == 0  # flex eager agrees with the plain float64 attention
    assert flex_rows["compile"]["acc_rule"] in ("allclose", "rmse_ratio")
    assert flex_rows["compile"]["backend"] == "aot_eager"


def test_a_compile_past_its_deadline_is_a_timeout_at_stage_compile(cli, db):
    # The deadline leaves the eager first call before the compile time on a loaded machine
    # (12 s did not, under a load of 14 on 2 cores: a timeout at prepare).
    path = cli.write_test_backend_profile("stall", "stall_backend:stall")
    cli.sweep("--model-code", f"{FLEX}:causal_d64", "--targets", path, "--modes", "compile",
              "--kinds", "forward", "--seq-lens", "256", "--timeout", "30", "--db", db, timeout=200)
    (row,) = cli.runs(db)
    assert row["status"] == "timeout", (row["status"], row["status_detail"])
    assert row["stage"] == "compile", row["status_detail"]
