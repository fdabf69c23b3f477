"""Issue 18, end to end: the compiler's start-up paid once per sweep (the zygote's calibration
compile, compiler_startup_s), model-cold prepare_s on a seeded cache holding no graph of the
model, and the warm rerun still hitting its own cache. One tiny llama forward with inductor
(the only inductor sweep of the e2e tests) plus its eager twin.
"""

import pathlib
import re
import tempfile

import pytest

from .conftest import Compatlab

STARTUP_LINE = re.compile(r"compatlab: compiler start-up ([0-9.]+) s, once for the sweep \(compile [0-9.]+ s, "
                          r"imports [0-9.]+ s, vec_isa [0-9.]+ s\)")


@pytest.fixture(scope="module")
def swept(compatlab_bin, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("startup")
    cli = Compatlab(compatlab_bin, tmp)
    db = tmp / "store.db"
    sweep_id, proc = cli.sweep("--models", "llama", "--modes", "eager,compile", "--backend", "inductor",
                               "--kinds", "forward", "--seq-lens", "16", "--warm", "--db", db, timeout=900)
    rows = {r["mode"]: r for r in cli.runs(db)}
    return sweep_id, proc.stderr, rows


def test_the_start_up_is_measured_once_and_stored_in_compiled_rows_only(swept):
    sweep_id, stderr, rows = swept
    match = STARTUP_LINE.search(stderr)
    assert match, stderr[-2000:]
    compiled, eager = rows["compile"], rows["eager"]
    assert compiled["status"] == "pass", (compiled["stage"], compiled["error_message"][-2000:])
    assert compiled["compiler_startup_s"] == pytest.approx(float(match.group(1)), abs=0.051)
    assert eager["compiler_startup_s"] is None
    seed = pathlib.Path(tempfile.gettempdir()) / f"compatlab-seed-{sweep_id}"
    assert not seed.exists() and not pathlib.Path(f"{seed}.calibration").exists()


def test_model_cold_run_finds_no_graph_of_its_model_and_the_warm_rerun_hits(swept):
    compiled = swept[2]["compile"]
    # The cold directory started as a copy of the seed: a graph of llama there would be a hit.
    assert compiled["cache_hits"] == 0 and compiled["cache_misses"] > 0
    assert compiled["warm_state"] == "warm" and compiled["warm_cache_hits"] > 0
    assert compiled["warm_cache_misses"] == 0
    assert 0 < compiled["warm_prepare_s"] < compiled["prepare_s"]
    assert compiled["acc_rule"] in ("allclose", "rmse_ratio", "cosine"), compiled["acc_rule"]
    assert compiled["speedup"] > 0 and compiled["eager_steady_median_s"] > 0
