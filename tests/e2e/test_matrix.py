"""`compatlab matrix` end to end: the store of the browser tests (tests/web/make_store.py:
a real bert sweep on this machine plus planted cpu compile, test-device, older-stack and
older-import runs), read in each format."""

import csv
import io
import json
import pathlib
import re
import shutil
import subprocess

import pytest

from tests.e2e.conftest import REPO, Compatlab

CKPT = "ckpt:" + "ab" * 32


@pytest.fixture(scope="module")
def matrix_store(compatlab_bin, venv_python, tmp_path_factory):
    work = tmp_path_factory.mktemp("matrix-store")
    proc = subprocess.run([venv_python, str(REPO / "tests/web/make_store.py"), compatlab_bin,
                           str(work)], capture_output=True, text=True, timeout=600,
                          env={**Compatlab(compatlab_bin, work).env})
    assert proc.returncode == 0, proc.stderr
    return pathlib.Path(proc.stdout.strip())


@pytest.fixture
def store(matrix_store, tmp_path):
    path = tmp_path / "matrix.db"
    shutil.copy(matrix_store, path)
    return path


def matrix(cli, store, *args):
    proc = cli.run("matrix", "--db", store, *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def matrix_query(cli, store):
    proc = cli.run("query", "--db", store, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_json_gives_one_current_verdict_per_cell_and_its_run(cli, store):
    out = json.loads(matrix(cli, store, "--format", "json"))
    assert out["stack"]["selection"] == "newest" and out["stack"]["stacks"] == 2
    assert [(c["target"], c["mode"]) for c in out["columns"]] == [
        ("cpu", "eager"), ("cpu", "compile"), ("ctest", "eager"), ("ctest", "compile")]
    rows = {r["model_id"]: r for r in out["rows"]}
    assert sorted(rows) == [CKPT, "hf:bert", "hf:markup_model"]  # harness tests are no models
    bert = rows["hf:bert"]
    assert bert["size"] == "reduced" and bert["param_count"] > 0
    assert [c["status"] for c in bert["cells"]] == ["pass", "pass", "pass", "fail_to_compile"]
    assert bert["cells"][2]["fallback_ops"] == 2
    # Issue 46: the planted cpu compile run was noisy in its steady phase only.
    compiled = bert["cells"][1]
    assert compiled["noisy"] is True and compiled["prepare_noisy"] is False, compiled
    assert compiled["noisy_reason"] == "1.4 other runnable tasks > 0 free cores"
    assert bert["cells"][2]["noisy"] is False
    assert rows[CKPT]["size"] == "checkpoint"
    assert [c["verdict"] for c in rows["hf:markup_model"]["cells"]] == [
        "fail", "not_measured", "not_measured", "not_measured"]
    assert out["superseded"] == 1  # the older timeout imported after this machine's run
    # Each cell's run_id leads to its run, and the run is the one the cell describes.
    stored = {r["run_id"]: r for r in json.loads(matrix_query(cli, store))}
    for row in out["rows"]:
        for column, cell in zip(out["columns"], row["cells"], strict=True):
            if cell["verdict"] == "not_measured":
                continue
            run = stored[cell["run_id"]]
            assert (run["model_id"], run["target"], run["mode"]) == (
                row["model_id"], column["target"], column["mode"])
            assert (run["status"], run["finished_at"]) == (cell["status"], cell["finished_at"])
    # diff --write-expected picks the same current run of the test (never the imported one).
    expected = store.parent / "expected.txt"
    head = f"torch={bert['cells'][0]['torch_version']}"
    proc = cli.run("diff", "--db", store, "--head", head, "--write-expected", expected)
    assert proc.returncode == 0, proc.stderr
    assert "timeout" not in expected.read_text()


def test_stack_selection_and_filters_as_query(cli, store):
    out = json.loads(matrix(cli, store, "--format", "json", "--stack", "all", "--model", "hf:BERT"))
    assert [r["model_id"] for r in out["rows"]] == ["hf:bert"]
    assert ("cuda", "eager") in [(c["target"], c["mode"]) for c in out["columns"]]
    older = json.loads(matrix(cli, store, "--format", "json", "--stack", "torch=2.12.0"))
    assert [c["status"] for c in older["rows"][0]["cells"]] == ["pass", "fail_to_run"]
    only = json.loads(matrix(cli, store, "--format", "json", "--target", "ctest"))
    assert [(c["target"], c["mode"]) for c in only["columns"]] == [("ctest", "eager"),
                                                                   ("ctest", "compile")]


def test_table_and_csv(cli, store):
    table = matrix(cli, store)
    first = table.splitlines()[0]
    assert first.startswith("stack: torch ") and "(newest of 2 stacks); 3 rows" in first
    assert "cpu/eager" in table and "ctest/compile" in table
    assert "+2 fb" in table
    assert "hf:bert ctest/compile fail_to_compile: backend='ctest' raised" in table
    assert "second line" not in table
    # Issue 46: the noisy cell's steady figure is marked, its reason under the table.
    bert = next(line for line in table.splitlines() if line.startswith("hf:bert "))
    assert re.search(r"pass [0-9.]+m?s/~[0-9.]+m?s", bert), bert
    assert ("  hf:bert cpu compile forward, sweep matrix-compile: steady: 1.4 other runnable tasks > "
            "0 free cores\n") in table
    records = list(csv.reader(io.StringIO(matrix(cli, store, "--format", "csv"), newline="")))
    assert records[0][:10] == ["model_id", "name", "size", "param_count", "test", "target", "mode",
                               "ranks", "dynamic", "verdict"]
    assert len(records) == 1 + 3 * 4  # one record per cell, not measured ones included
    noisy = records[0].index("noisy")
    assert [r[noisy] for r in records[1:] if r[0] == "hf:bert" and r[5] == "cpu" and r[6] == "compile"] == ["1"]
    assert [r[noisy] for r in records[1:] if r[0] == "hf:bert" and r[5] == "ctest" and r[6] == "eager"] == ["0"]
    markup = [r for r in records if r[0] == "hf:markup_model" and r[9] == "fail"]
    assert markup[0][-1].startswith('<img src=x onerror="window.__xss=1">')


@pytest.mark.parametrize("args,message", [
    (["--stack", "cuda=1"], "unknown key 'cuda'"),
    (["--status", "nope"], "nope"),
    (["--sweep", "no-such-sweep"], "no-such-sweep"),
    (["--format", "xml"], "xml"),
])
def test_bad_input_is_exit_2_with_one_line(cli, store, args, message):
    before = store.read_bytes()
    proc = cli.run("matrix", "--db", store, *args)
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert store.read_bytes() == before


def test_missing_store_is_exit_2(cli, tmp_path):
    proc = cli.run("matrix", "--db", tmp_path / "none.db")
    assert proc.returncode == 2 and "compatlab: error:" in proc.stderr
    assert not (tmp_path / "none.db").exists()
