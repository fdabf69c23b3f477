"""Targets, compile mode, accuracy, the fallback audit and warm compile caches, end to end.

Tiny gpt2 forward tests through the real binary on the cpu target, the `ctest`
test device (testdevice/, doc/test-device.md) and the unverified neuron profile.
Compile mode uses aot_eager here (inductor's cold/warm cache is covered by
tests/e2e/test_compile_startup.py): fast, and it runs on every target.
"""

import json
import pathlib
import subprocess
import tempfile

import pytest

from .conftest import Compatlab

REPO = pathlib.Path(__file__).resolve().parents[2]
MODEL = "gpt2"
# Ops ctest runs with its own kernels (testdevice/csrc/kernels.cpp): never fallbacks.
CTEST_KERNELS = {"aten::mm", "aten::addmm", "aten::add.Tensor", "aten::mul.Tensor",
                 "aten::copy_", "aten::view", "aten::empty.memory_format", "aten::empty_strided"}


@pytest.fixture(scope="module")
def matrix(compatlab_bin, tmp_path_factory):
    """(cli, db, sweep_id, {(target, mode): row}) of gpt2 forward on cpu, ctest and neuron."""
    tmp = tmp_path_factory.mktemp("targets")
    cli = Compatlab(compatlab_bin, tmp)
    db = tmp / "store.db"
    sweep_id, _ = cli.sweep("--models", MODEL, "--targets", "cpu,ctest,neuron",
                            "--modes", "eager,compile", "--backend", "aot_eager",
                            "--kinds", "forward", "--seq-lens", "16", "--warm", "--db", db,
                            timeout=600)
    rows = {(r["target"], r["mode"]): r for r in cli.runs(db)}
    assert len(rows) == 6
    return cli, db, sweep_id, rows


def test_compiled_forward_on_cpu_stores_timings_accuracy_and_dynamo_counters(matrix):
    _, _, _, rows = matrix
    eager, compiled = rows[("cpu", "eager")], rows[("cpu", "compile")]
    for row in (eager, compiled):
        assert row["status"] == "pass", row["error_message"]
        assert row["build_s"] > 0 and row["prepare_s"] > 0 and row["steady_median_s"] > 0
        assert row["acc_ref_dtype"] == "float64"
        assert row["acc_max_abs_err"] is not None and row["acc_cosine"] > 0.99
        assert row["fallback_audit"] == "not_applicable"
        assert row["host_peak_rss_bytes"] > 0 and row["device_peak_bytes"] is None
        assert row["tokens_per_s"] > 0
    # CPU eager is the baseline (the float32-vs-float64 gap), the compiled row a verdict.
    assert eager["acc_rule"] == "baseline" and eager["ill_conditioned"] == 0
    assert compiled["acc_rule"] in ("allclose", "rmse_ratio", "cosine"), compiled["acc_rule"]
    assert eager["speedup"] is None and eager["graph_breaks"] is None
    assert eager["backend"] == "" and eager["compile_options"] == ""
    assert compiled["backend"] == "aot_eager"
    assert json.loads(compiled["compile_options"])["dynamic"] is False
    assert compiled["eager_steady_median_s"] > 0
    # The ratio of the blocks' medians (doc/probe.md, "Steady state in compile mode"), not of
    # the two overall medians; how near the two are depends on the machine's noise (a fresh
    # clone's make test once saw 0.50 against 1.46), so only its presence is checked here:
    # probe/tests/test_phases.py tests the rule itself on a clock of its own.
    assert compiled["speedup"] > 0
    assert compiled["captured_calls"] > 0 and compiled["unique_graphs"] >= 1
    assert compiled["graph_breaks"] is not None
    json.loads(compiled["graph_break_reasons"] or "[]")


def test_warm_rerun_is_recorded_and_the_cache_directories_are_removed(matrix):
    _, _, sweep_id, rows = matrix
    compiled = rows[("cpu", "compile")]
    # aot_eager has no compiled-artifact cache to hit: the warm run says so
    # rather than pretending to be warm.
    assert compiled["warm_state"] in ("warm", "no_cache_hits"), compiled["warm_state"]
    assert compiled["warm_prepare_s"] > 0
    assert compiled["warm_cache_hits"] is not None
    if compiled["warm_state"] == "no_cache_hits":
        assert compiled["warm_cache_hits"] == 0
    assert rows[("cpu", "eager")]["warm_state"] == ""
    # Per-test directories go as each test is reported (SupervisorTest); the
    # sweep's cache root goes at its end.
    leftovers = list(pathlib.Path(tempfile.gettempdir()).glob(f"compatlab-cache-{sweep_id}*"))
    assert leftovers == []


def test_test_device_audit_names_fallback_ops_and_never_its_own_kernels(matrix):
    _, _, _, rows = matrix
    for mode in ("eager", "compile"):
        row = rows[("ctest", mode)]
        assert row["status"] == "pass", (mode, row["status"], row["error_message"])
        assert row["fallback_audit"] == "audited", row["fallback_audit"]
        fallbacks = json.loads(row["fallback_ops"])
        assert fallbacks, "gpt2 runs ops (gelu, softmax, ...) that ctest has no kernel for"
        assert all(count > 0 for count in fallbacks.values())
        assert not set(fallbacks) & CTEST_KERNELS, set(fallbacks) & CTEST_KERNELS
        assert row["ops_executed"] > len(fallbacks)
        assert json.loads(row["backend_fallback_counts"]), "the device's own counters"
        assert row["device_peak_bytes"] > 0
        assert row["device_memory_method"] == "ctest_allocator"


def test_unavailable_target_is_skipped_with_the_reason(matrix):
    _, _, _, rows = matrix
    for mode in ("eager", "compile"):
        row = rows[("neuron", mode)]
        assert row["status"] == "skipped"
        assert "torch_neuronx" in row["status_detail"], row["status_detail"]


def test_backend_refusing_an_op_is_fail_to_compile_with_stage_and_signature(cli, db):
    cli.sweep("--models", MODEL, "--targets", "ctest", "--modes", "compile", "--kinds", "forward",
              "--seq-lens", "16", "--db", db, timeout=300)
    [row] = cli.runs(db)
    assert row["backend"] == "ctest"  # the profile's own backend
    assert row["status"] == "fail_to_compile", (row["status"], row["error_message"])
    assert row["stage"] == "compile"
    assert row["error_signature"] and row["error_type"]
    errors = cli.run("errors", "--db", db)
    assert errors.returncode == 0 and "fail_to_compile" in errors.stdout


# make test-slow: about 40-100 s on the idle 2-core machine (make test kept under 25 min).
@pytest.mark.slow
def test_perturbed_backend_is_fail_accuracy_per_shape_and_its_script_reproduces(
        cli, db, tmp_path, venv_python):
    # A profile of its own: the cpu target plus testdevice/ on the path, where
    # the test-only perturbing backend lives.
    profile = json.loads((REPO / "targets" / "cpu.json").read_text())
    profile["pythonpath"] = ["testdevice"]
    path = tmp_path / "cpu-perturb.json"
    path.write_text(json.dumps(profile))
    cli.sweep("--models", MODEL, "--targets", path, "--modes", "compile",
              "--backend", "compatlab_testdevice.backends:perturb", "--kinds", "forward",
              "--seq-lens", "16,32", "--db", db, timeout=300)
    rows = cli.runs(db)
    assert [r["seq_len"] for r in rows] == [16, 32]
    for row in rows:
        assert row["status"] == "fail_accuracy", (row["status"], row["error_message"])
        assert row["stage"] == "compare"
        assert row["acc_rule"] == "failed"
        assert row["acc_rmse"] > row["acc_eager_rmse"] * row["acc_multiplier"]
        assert row["acc_cosine"] < 0.99
        assert json.loads(row["compile_options"])["dynamic"] is False  # one compile per shape
        assert row["prepare_s"] > 0 and row["error_signature"]

    # The backend and the profile given by path are not this installation's own code: the
    # script leaves them out unless the user vouches for the store (doc/repro.md).
    guarded = cli.run("repro", rows[0]["run_id"], "--db", db)
    assert guarded.returncode == 0, guarded.stderr
    assert "# REQUEST[\"backend\"] = 'compatlab_testdevice.backends:perturb'" in guarded.stdout
    script = cli.run("repro", rows[0]["run_id"], "--db", db, "--allow-stored-code")
    assert script.returncode == 0, script.stderr
    assert "# WARNING" not in script.stdout
    (tmp_path / "repro.py").write_text(script.stdout)
    env = dict(cli.env, PYTHONPATH=str(REPO / "testdevice"))
    proc = subprocess.run([venv_python, str(tmp_path / "repro.py")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert "recorded: fail_accuracy" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    assert "status: fail_accuracy\n" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    # Same cpu_model and stack: the steady figure is judged within its interval too, and how
    # fast the machine is now decides which way (a fresh clone's make test once reran it at
    # 5.8 ms against a recorded 124.7 ms): never asserted, only that the verdict follows it.
    (figures,) = [line for line in proc.stdout.splitlines() if line.startswith("figures")]
    within = figures.endswith(": within") or figures.startswith("figures not comparable here")
    assert f"reproduced: {'yes' if within else 'no'}" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    assert proc.returncode == (0 if within else 1)
