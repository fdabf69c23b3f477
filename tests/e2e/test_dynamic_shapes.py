"""Dynamic shapes (issue 44; doc/probe.md, "Dynamic shapes") through the real binary.

One sweep of a reduced llama in mode compile (aot_eager: the compiler is not what is tested)
over three sequence lengths with `--dynamic static,mark`: the static compile of each shape
(one child each) beside one dynamic test running every shape in one child on one compiled
model. Then what reads the rows: the matrix, the Parquet export, a resume. A profile that
refuses dynamic shapes gives fail_to_compile with its reason, before any build.
"""

import json

import pyarrow.parquet as pq
import pytest

from .conftest import REPO, Compatlab
from .test_field_matrix import CONDITIONS

SEQ_LENS = (8, 16, 24)
SHAPES = ",".join(f"1x{s}" for s in SEQ_LENS)


@pytest.fixture(scope="module")
def swept(compatlab_bin, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dynamic")
    cli = Compatlab(compatlab_bin, tmp)
    db = tmp / "store.db"
    sweep_id, _ = cli.sweep("--models", "llama", "--modes", "compile", "--backend", "aot_eager",
                            "--seq-lens", ",".join(map(str, SEQ_LENS)), "--dynamic", "static,mark",
                            "--max-measure-s", "0", "--jobs", "2", "--db", db, timeout=600)
    return cli, db, sweep_id, cli.runs(db)


def _dynamic_row(rows):
    dynamic = [r for r in rows if r["dynamic"]]
    assert len(dynamic) == 1, [(r["dynamic"], r["shapes"]) for r in rows]
    return dynamic[0]


def test_one_dynamic_test_runs_every_shape_on_one_compiled_model(swept):
    _, _, _, rows = swept
    row = _dynamic_row(rows)
    assert row["status"] == "pass", (row["status_detail"], row["error_message"])
    assert (row["dynamic"], row["shapes"], row["batch_size"], row["seq_len"]) == ("mark", SHAPES, 1, SEQ_LENS[0])
    assert json.loads(row["compile_options"])["dynamic"] is False  # mark: only the marked dims are symbolic
    prepare = row["dyn_prepare"]
    assert len(prepare) == len(SEQ_LENS) and prepare[0] == row["prepare_s"] and all(p > 0 for p in prepare)
    assert all(s > 0 for s in row["dyn_steady_median"] + row["dyn_eager_steady_median"])
    assert row["dyn_steady_median"][0] == row["steady_median_s"]
    # The sequence dim is marked: the first compile holds for the longer shapes, no recompile.
    assert row["dyn_recompiles"] == [[i, 0] for i in range(len(SEQ_LENS))]
    assert row["recompiles"] == 0 and json.loads(row["recompile_reasons"]) == []
    graphs = row["dyn_graphs"]
    assert graphs[0][1] >= 1 and [g[1] for g in graphs[1:]] == [0] * (len(SEQ_LENS) - 1)
    assert row["dyn_acc_passed"] == [[i, 1] for i in range(len(SEQ_LENS))] and row["acc_rule"]
    assert len(row["dyn_acc_max_abs_err"]) == len(SEQ_LENS)


def test_the_static_compile_of_each_shape_runs_beside_it(swept):
    _, _, _, rows = swept
    static = sorted((r for r in rows if not r["dynamic"]), key=lambda r: r["seq_len"])
    assert [(r["seq_len"], r["shapes"], r["status"]) for r in static] == [(s, "", "pass") for s in SEQ_LENS]
    for r in static:  # one compile each, in a child of its own
        assert r["recompiles"] == 0 and r["dyn_prepare"] is None, r["seq_len"]
    assert len({r["test_id"] for r in rows}) == len(rows)


def test_a_dynamic_row_fills_every_field_its_fill_rules_ask(swept, compatlab_bin, tmp_path):
    _, _, _, rows = swept
    proc = Compatlab(compatlab_bin, tmp_path).run("fields", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    row = _dynamic_row(rows)
    missing = [f["name"] for f in json.loads(proc.stdout)["fields"] for rule in f["fill"]
               if row["kind"] in rule["kinds"] and row["mode"] in rule["modes"]
               and all(CONDITIONS[w](row) for w in rule["when"]) and row[f["name"]] in (None, "")]
    assert not missing


def test_the_matrix_gives_the_dynamic_test_a_column_of_its_own(swept):
    cli, db, _, _ = swept
    proc = cli.run("matrix", "--db", db, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    matrix = json.loads(proc.stdout)
    columns = [(c["target"], c["mode"], c["dynamic"]) for c in matrix["columns"]]
    assert columns == [("cpu", "compile", ""), ("cpu", "compile", "mark")]
    cells = {r["test"]: [c.get("status") for c in r["cells"]] for r in matrix["rows"]}
    assert cells[f"forward {SHAPES} float32"] == [None, "pass"]
    assert cells["forward 1x8 float32"] == ["pass", None]
    text = cli.run("matrix", "--db", db)
    assert "cpu/compile dynamic=mark" in text.stdout, text.stdout


def test_the_dataset_holds_dynamic_and_the_per_shape_lists_typed(swept):
    cli, db, _, _ = swept
    out = db.parent / "export"
    proc = cli.run("export", "--db", db, "--parquet", out)
    assert proc.returncode == 0, proc.stderr
    table = pq.read_table(sorted(out.rglob("*.parquet"))[0])
    assert str(table.schema.field("dyn_prepare").type) == "list<element: double>"
    rows = table.to_pylist()
    row = next(r for r in rows if r["dynamic"] == "mark")
    assert row["shapes"] == SHAPES and len(row["dyn_prepare"]) == len(SEQ_LENS)
    assert [p["value"] for p in row["dyn_recompiles"]] == [0] * len(SEQ_LENS)


def test_a_resume_must_name_the_stored_dynamic_setting(swept):
    cli, db, sweep_id, _ = swept
    proc = cli.run("sweep", "--resume", sweep_id, "--db", db, "--dynamic", "static")
    assert proc.returncode == 2
    assert "--dynamic static differs from the stored plan (--dynamic mark,static)" in proc.stderr


def test_a_backend_that_refuses_dynamic_shapes_fails_to_compile_with_the_reason(cli, db):
    profile = json.loads((REPO / "targets" / "cpu.json").read_text())
    profile.update(name="refusing", dynamic_refused="this backend rejects dynamic=True (a test)")
    path = cli.workdir / "refusing.json"
    path.write_text(json.dumps(profile))
    cli.sweep("--models", "llama", "--targets", path, "--modes", "compile", "--seq-lens", "8,16",
              "--dynamic", "--allow-profile-paths", "--db", db)
    [row] = cli.runs(db)
    assert (row["dynamic"], row["shapes"]) == ("true", "1x8,1x16")
    assert (row["status"], row["stage"], row["error_type"]) == ("fail_to_compile", "compile", "DynamicShapesRefused")
    assert "refuses dynamic shapes" in row["error_message"]
    assert "this backend rejects dynamic=True (a test)" in row["error_message"]
    assert row["build_s"] is None  # refused before the build
