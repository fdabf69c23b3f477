"""The fill matrix: every field the field table says a passing run must fill is filled.

`compatlab fields --format json` gives each result field's fill rules (src/core/fields.h):
kinds x modes of passing runs, plus conditions that are facts of the stored row. One
sweep runs every model kind in every mode once on a tiny llama through the real binary;
a rule whose kind, mode and conditions hold for a passing row and whose field is null
(or empty text) there fails the test. A field added to the table with a rule is checked
here with no change to this file; a new condition needs its line in CONDITIONS.
"""

import json

import pytest

from .conftest import Compatlab

MODEL = "llama"
KINDS = ("forward", "generate", "train")
MODES = ("eager", "compile")
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
    "inductor": lambda row: row["backend"] == "inductor",
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
              "--backend", "aot_eager", "--seq-lens", "16", "--db", db, timeout=900)
    return cli.runs(db)


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
    assert "forward,generate,train x eager,compile" in text.stdout


def test_every_field_a_passing_run_must_fill_is_filled(table, rows):
    cells = {(r["kind"], r["mode"]): r for r in rows}
    assert sorted(cells) == sorted((k, m) for k in KINDS for m in MODES)
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
