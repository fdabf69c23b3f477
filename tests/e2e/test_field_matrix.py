"""The fill matrix: every field the field table says a passing run must fill is filled.

`compatlab fields --format json` gives each result field's fill rules (src/core/fields.h):
kinds x modes of passing runs, plus conditions that are facts of the stored row. One
sweep runs every model kind in every mode once on a tiny llama through the real binary
(kind load at one rate: its single_stream, offline and server rows, 8 requests each;
tests/e2e/test_load_rates.py runs several rates; mode export runs kind forward, exported and
run on target cpu, and skips the others);
a rule whose kind, mode and conditions hold for a passing row and whose field is null
(or empty text) there fails the test. A field added to the table with a rule is checked
here with no change to this file; a new condition needs its line in CONDITIONS.
"""

import json

import pytest

from .conftest import Compatlab

MODEL = "llama"
KINDS = ("forward", "generate", "train", "load")
LOAD_RATES = {"1.5x": 1.5}  # past saturation: the server row queues
MODES = ("eager", "compile", "export")
EXPORT_KINDS = ("forward",)  # mode export takes kind forward; the others are skipped with the reason
TOKEN_MODELS = {"llama"}  # models of this test whose inputs are token ids


def _steps(row):
    return int(json.loads(row["kind_params"]).get("steps", "3"))


# How each condition of a fill rule (FillWhen) is read from a stored row.
CONDITIONS = {
    "compared": lambda row: bool(row["acc_rule"]),
    "token_inputs": lambda row: row["model_type"] in TOKEN_MODELS,
    "multi_step": lambda row: row["kind"] != "train" or _steps(row) > 1,
    "diverged": lambda row: row["gen_first_divergence"] is not None,
    "audited": lambda row: row["fallback_audit"].startswith("audited"),
    "device": lambda row: row["target"] != "cpu",
    "warm": lambda row: bool(row["warm_state"]),
    "cpu_inductor": lambda row: row["backend"] == "inductor" and row["target"] == "cpu",
    "server": lambda row: json.loads(row["kind_params"]).get("scenario") == "server",
    "dynamic": lambda row: bool(row["dynamic"]),
}


@pytest.fixture(scope="module")
def table(compatlab_bin, tmp_path_factory):
    cli = Compatlab(compatlab_bin, tmp_path_factory.mktemp("fields"))
    proc = cli.run("fields", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def rows(compatlab_bin, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("matrix")
    cli = Compatlab(compatlab_bin, tmp)
    db = tmp / "store.db"
    cli.sweep("--models", MODEL, "--kinds", ",".join(KINDS), "--modes", ",".join(MODES),
              "--backend", "aot_eager", "--seq-lens", "16", "--rates", ",".join(LOAD_RATES), "--load-requests", "8",
              "--jobs", "2", "--db", db, timeout=900)
    rows = cli.runs(db)
    for row in rows:
        if row["mode"] == "export" and row["kind"] not in EXPORT_KINDS:
            assert row["status"] == "skipped" and "mode export takes kind forward only" in row["status_detail"]
    return [r for r in rows if r["mode"] != "export" or r["kind"] in EXPORT_KINDS]


def _filled(value):
    return value is not None and value != ""


def test_fields_lists_the_field_table_with_known_kinds_modes_and_conditions(compatlab_bin, table, tmp_path):
    assert set(table["conditions"]) == set(CONDITIONS), "teach CONDITIONS the table's conditions"
    names = [f["name"] for f in table["fields"]]
    assert len(names) == len(set(names)) and "steady_median_s" in names
    metric_keys = [f["child_key"] for f in table["fields"] if f["child_section"] == "metrics"]
    assert len(metric_keys) == len(set(metric_keys)) and "build_s" in metric_keys
    for field in table["fields"]:
        for rule in field["fill"]:
            assert set(rule["kinds"]) <= set(KINDS) and set(rule["modes"]) <= set(MODES), field["name"]
            assert set(rule["when"]) <= set(CONDITIONS), field["name"]
    text = Compatlab(compatlab_bin, tmp_path).run("fields")
    assert text.returncode == 0 and "steady_median_s" in text.stdout
    assert "forward,generate,train,load x eager,compile" in text.stdout


def test_every_field_a_passing_run_must_fill_is_filled(table, rows):
    cells = sorted((r["kind"], r["mode"], json.loads(r["kind_params"]).get("scenario", "")) for r in rows)
    scenarios = {"load": ("offline", "server", "single_stream")}
    assert cells == sorted((k, m, s) for k in KINDS for m in MODES for s in scenarios.get(k, ("",))
                           if m != "export" or k in EXPORT_KINDS)
    for row in rows:
        assert row["status"] == "pass", (row["kind"], row["mode"], row["status_detail"], row["error_message"])
    missing = []
    for field in table["fields"]:
        for rule in field["fill"]:
            for row in rows:
                if row["kind"] not in rule["kinds"] or row["mode"] not in rule["modes"]:
                    continue
                if not all(CONDITIONS[when](row) for when in rule["when"]):
                    continue
                if not _filled(row[field["name"]]):
                    missing.append(f"{field['name']} ({row['kind']} {row['mode']})")
    assert not missing, "must be filled but is null or empty: " + ", ".join(missing)


def test_the_server_row_of_each_mode_multiplies_its_offline_rows_throughput(rows):
    load = [r for r in rows if r["kind"] == "load"]
    for mode in (m for m in MODES if m != "export"):  # mode export takes no kind load
        offline = [r for r in load if r["mode"] == mode and json.loads(r["kind_params"])["scenario"] == "offline"]
        servers = [r for r in load if r["mode"] == mode and json.loads(r["kind_params"])["scenario"] == "server"]
        assert len(offline) == 1 and len(servers) == len(LOAD_RATES), mode
        base = offline[0]["load_requests_per_s"]
        assert base > 0
        for row in servers:  # one shared base, measured once by the offline row
            where = (mode, row["kind_params"])
            assert row["load_base_source"] == "offline_row", where
            assert row["load_base_run_id"] == offline[0]["run_id"], where
            assert row["load_offline_requests_per_s"] == base, where
            assert row["started_at"] >= offline[0]["finished_at"], where
        rates = sorted((row["load_rate_multiple"], row["load_arrival_rate_per_s"]) for row in servers)
        assert [m for m, _ in rates] == sorted(LOAD_RATES.values()), mode
        for multiple, arrival in rates:
            assert abs(arrival - multiple * base) < 1e-9 * arrival, (mode, multiple)


def test_every_row_of_each_mode_is_judged_by_its_single_stream_rows_objective(rows):
    load = [r for r in rows if r["kind"] == "load"]
    for mode in (m for m in MODES if m != "export"):
        group = [r for r in load if r["mode"] == mode]
        (single,) = [r for r in group if json.loads(r["kind_params"])["scenario"] == "single_stream"]
        others = [r for r in group if r is not single]
        assert len(others) == 1 + len(LOAD_RATES), mode
        for row in others:
            where = (mode, row["kind_params"])
            assert (row["load_slo_source"], row["load_slo_run_id"]) == ("single_stream_row", single["run_id"]), where
            assert (row["load_slo_ttft_s"], row["load_slo_itl_s"]) == (single["load_slo_ttft_s"],
                                                                      single["load_slo_itl_s"]), where


def test_load_figures_are_ordered_and_goodput_within_throughput(rows):
    load = [r for r in rows if r["kind"] == "load"]
    assert len(load) == 6
    for row in load:
        where = (row["mode"], row["kind_params"])
        for name in ("ttft", "itl", "e2e"):
            p50, p90, p99 = (row[f"load_{name}_{p}_s"] for p in ("p50", "p90", "p99"))
            assert 0 <= p50 <= p90 <= p99, (where, name, p50, p90, p99)
            dist = row[f"load_{name}_dist"]  # a list field: a JSON array
            assert dist == sorted(dist) and 0 < len(dist) <= 256, (where, name)
            assert dist[0] <= p50 <= dist[-1], (where, name)
        assert len(row["load_ttft_dist"]) == row["load_requests"] == 8, where
        assert 0 <= row["load_goodput_per_s"] <= row["load_requests_per_s"], where
        assert row["load_output_tokens_per_s"] >= row["load_requests_per_s"] > 0, where
        assert row["load_max_concurrency"] >= 1, where
        params = json.loads(row["kind_params"])
        # the single_stream row's own objective; the other rows take it (the test above)
        own = params["scenario"] == "single_stream"
        assert row["load_slo_source"] == ("single_stream_p50x3" if own else "single_stream_row"), where
        if params["scenario"] == "server":
            multiple = LOAD_RATES[params["rate"]]
            assert row["load_rate_multiple"] == multiple, where
            assert abs(row["load_arrival_rate_per_s"] - multiple * row["load_offline_requests_per_s"]) < 1e-6, where
        if params["scenario"] == "single_stream":
            assert row["load_max_concurrency"] == 1, where
            # its objective is 3x its own p50s
            assert abs(row["load_slo_ttft_s"] - 3 * row["load_ttft_p50_s"]) < 1e-9, where
