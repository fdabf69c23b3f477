"""The published dataset end to end: export to Parquet, read it with pyarrow,
pandas and DuckDB, import it back, query, and diff (doc/dataset.md)."""

import csv
import io
import json
import pathlib
import re
import shutil
import subprocess

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .conftest import REPO, Compatlab

# The type each doc type of doc/results-schema.md has in an export.
ARROW_TYPES = {"text": pa.string(), "integer": pa.int64(), "real": pa.float64()}
DUCKDB_TYPES = {"text": "VARCHAR", "integer": "BIGINT", "real": "DOUBLE"}
TIMESTAMP = pa.timestamp("ms", tz="UTC")
KIND_PARAMS = pa.list_(pa.field("element", pa.struct([pa.field("key", pa.string(), False),
                                                     pa.field("value", pa.string(), False)]),
                                  False))
# The curves: typed list columns (doc/dataset.md, "List columns"), null where not measured.
_REALS = pa.list_(pa.field("element", pa.float64()))


def _points(value):
    return pa.list_(pa.field("element", pa.struct([pa.field("position", pa.int64(), False),
                                                    pa.field("value", value, False)]), False))


LIST_TYPES = {**{name: _REALS for name in ("train_loss", "train_ref_loss", "train_grad_norm",
                                           "train_ref_grad_norm", "train_eager_loss",
                                           # kind load's distributions (schema version 18)
                                           "load_ttft_dist", "load_itl_dist", "load_e2e_dist",
                                           # one element per rank (schema version 28)
                                           "rank_host_mem", "rank_steady_median",
                                           # one element per shape (schema version 29)
                                           "dyn_prepare", "dyn_steady_median", "dyn_eager_steady_median",
                                           "dyn_acc_max_abs_err")},
              **{name: _points(pa.int64()) for name in ("gen_mem_curve", "dyn_recompiles", "dyn_graphs",
                                                        "dyn_acc_passed")},
              "gen_match_curve": _points(pa.float64()), "gen_decode_curve": _points(pa.float64())}


def documented_fields():
    """(name, doc type, nullable) of every row of the runs table in doc/results-schema.md."""
    text = (REPO / "doc" / "results-schema.md").read_text()
    section = text.split("## Table `runs`", 1)[1].split("\n## ", 1)[0]
    fields = []
    for line in section.splitlines():
        match = re.match(r"^\| `(\w+)` \| (\w+)( or null)? \|", line)
        if match:
            fields.append((match.group(1), match.group(2), bool(match.group(3))))
    assert len(fields) > 40, "the field table of doc/results-schema.md did not parse"
    return fields


def expected_arrow_type(name, doc_type):
    if name in ("started_at", "finished_at"):
        return TIMESTAMP
    if name == "kind_params":
        return KIND_PARAMS
    return LIST_TYPES.get(name, ARROW_TYPES[doc_type])


@pytest.fixture(scope="module")
def sweep_store(compatlab_bin, tmp_path_factory):
    """A store holding one finished sweep: two noop passes, a fail_to_run and a crash."""
    tmp = tmp_path_factory.mktemp("dataset-store")
    cli = Compatlab(compatlab_bin, tmp)
    suite = cli.write_suite("dataset", tests=[{"kind": "noop", "repeat": 2}, {"kind": "raise"},
                                              {"kind": "segfault"}])
    sweep_id, _ = cli.sweep("--suite", suite, "--db", tmp / "store.db")
    return tmp / "store.db", sweep_id


@pytest.fixture
def store(sweep_store, tmp_path):
    """A private copy of the sweep's store, and the sweep's id."""
    path, sweep_id = sweep_store
    copy = tmp_path / "store.db"
    shutil.copy(path, copy)
    return copy, sweep_id


def export(cli, db, out, *args):
    proc = cli.run("export", "--db", db, "--parquet", out, *args)
    assert proc.returncode == 0, proc.stderr
    return sorted(p for p in pathlib.Path(out).rglob("*") if p.is_file())


def run_json(cli, db, *args):
    proc = cli.run("query", "--db", db, "--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_export_is_one_file_per_stack_with_the_documented_columns(cli, store):
    db, _ = store
    runs = run_json(cli, db)
    stacks = {(r["torch_version"], r["transformers_version"]) for r in runs}
    files = export(cli, db, cli.workdir / "out")
    assert [f.relative_to(cli.workdir / "out").as_posix() for f in files] == sorted(
        f"torch-{t}/transformers-{v}.parquet" for t, v in stacks)
    schema = pq.read_schema(files[0])
    fields = documented_fields()
    assert schema.names == [name for name, _, _ in fields]
    for name, doc_type, nullable in fields:
        field = schema.field(name)
        assert field.type == expected_arrow_type(name, doc_type), name
        assert field.nullable == (nullable or name in LIST_TYPES), name
    table = pq.read_table(files[0])
    assert table.num_rows == len(runs)
    assert sorted(table.column("status").to_pylist()) == sorted(r["status"] for r in runs)


def test_pandas_reads_an_export(cli, store):
    db, _ = store
    files = export(cli, db, cli.workdir / "out")
    frame = pd.read_parquet(files[0])
    assert list(frame.columns) == [name for name, _, _ in documented_fields()]
    assert str(frame["started_at"].dtype) == "datetime64[ms, UTC]"
    assert str(frame["batch_size"].dtype) == "int64"
    assert str(frame["wall_s"].dtype) == "float64"
    # With Arrow-backed dtypes, nullable integers stay integers.
    exact = pd.read_parquet(files[0], dtype_backend="pyarrow")
    for name, doc_type, _ in documented_fields():
        expected = expected_arrow_type(name, doc_type)
        assert exact[name].dtype.pyarrow_dtype == expected, name
    crash = frame[frame["status"] == "crash"].iloc[0]
    assert crash["status_detail"] == "SIGSEGV"
    assert crash["term_signal"] == 11
    noop = frame[frame["kind"] == "noop"].iloc[0]
    assert [entry["key"] for entry in noop["kind_params"]] == ["rep"]


def test_duckdb_reads_an_export(cli, store):
    db, _ = store
    out = cli.workdir / "out"
    export(cli, db, out)
    glob = f"{out}/**/*.parquet"
    con = duckdb.connect()
    described = {row[0]: row[1] for row in con.sql(f"DESCRIBE SELECT * FROM '{glob}'").fetchall()}
    for name, doc_type, _ in documented_fields():
        if name in ("started_at", "finished_at"):
            assert described[name] == "TIMESTAMP WITH TIME ZONE", name
        elif name == "kind_params":
            assert described[name] == 'STRUCT("key" VARCHAR, "value" VARCHAR)[]', name
        elif name in LIST_TYPES:  # the curves (doc/dataset.md, "List columns")
            value = "BIGINT" if LIST_TYPES[name] == _points(pa.int64()) else "DOUBLE"
            assert described[name] == (
                "DOUBLE[]" if LIST_TYPES[name] == _REALS else f'STRUCT("position" BIGINT, "value" {value})[]'
            ), (name, described[name])
        else:
            assert described[name] == DUCKDB_TYPES[doc_type], name
    counts = dict(con.sql(f"SELECT status, count(*) FROM '{glob}' GROUP BY status").fetchall())
    assert counts == {"pass": 2, "fail_to_run": 1, "crash": 1}
    assert con.sql(f"SELECT map_from_entries(kind_params)['rep'] FROM '{glob}' "
                   "WHERE kind = 'noop' ORDER BY 1").fetchall() == [("0",), ("1",)]


def test_datasets_and_polars_load_every_column(cli, store, tmp_path):
    """`datasets` (offline) and Polars read every exported column with its values: no map
    column (huggingface/datasets#5612), timestamps, curves and key/value lists as pyarrow."""
    import datasets
    import polars as pl

    db, _ = store
    (path,) = export(cli, db, cli.workdir / "out")
    table = pq.read_table(path)
    loaded = datasets.load_dataset("parquet", data_files=str(path), split="train",
                                   cache_dir=str(tmp_path / "hf-cache"))
    assert loaded.column_names == table.column_names
    assert loaded.num_rows == table.num_rows == 4
    for name in table.column_names:
        if name in ("started_at", "finished_at"):
            continue  # datetimes: compared below
        assert loaded[name] == table.column(name).to_pylist(), name
    assert [t.isoformat() for t in loaded["started_at"]] == [
        t.isoformat() for t in table.column("started_at").to_pylist()]
    frame = pl.read_parquet(path)
    assert frame.columns == table.column_names
    assert str(frame.schema["started_at"]) == "Datetime(time_unit='ms', time_zone='UTC')"
    for name in table.column_names:
        assert frame[name].to_list() == table.column(name).to_pylist(), name
    noop = frame.filter(pl.col("kind") == "noop")
    assert sorted(noop["kind_params"].to_list(), key=str) == [[{"key": "rep", "value": "0"}],
                                                              [{"key": "rep", "value": "1"}]]


def test_export_import_export_gives_identical_files(cli, store):
    db, _ = store
    first = export(cli, db, cli.workdir / "first")
    target = cli.workdir / "imported.db"
    proc = cli.run("import", "--db", target, cli.workdir / "first")
    assert proc.returncode == 0, proc.stderr
    assert "imported 4 runs from 1 files" in proc.stdout
    second = export(cli, target, cli.workdir / "second")
    assert [f.relative_to(cli.workdir / "second") for f in second] == [
        f.relative_to(cli.workdir / "first") for f in first]
    for a, b in zip(first, second, strict=False):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_import_is_idempotent(cli, store):
    db, sweep_id = store
    files = export(cli, db, cli.workdir / "out")
    target = cli.workdir / "target.db"
    for _ in range(2):
        proc = cli.run("import", "--db", target, *files, cli.workdir / "out")
        assert proc.returncode == 0, proc.stderr
    assert "imported 0 runs from 1 files" in proc.stdout and "4 already present" in proc.stdout
    assert len(run_json(cli, target)) == 4
    # Into the store the runs came from: nothing new either.
    proc = cli.run("import", "--db", db, cli.workdir / "out")
    assert proc.returncode == 0, proc.stderr
    assert len(run_json(cli, db)) == 4
    assert {r["sweep_id"] for r in run_json(cli, target)} == {sweep_id}


def test_import_rejects_a_wrong_schema_and_imports_nothing(cli, store):
    db, _ = store
    (good,) = export(cli, db, cli.workdir / "out")
    table = pq.read_table(good)
    bad_dir = cli.workdir / "bad"
    bad_dir.mkdir()
    # wall_s as text: a wrong type.
    pq.write_table(table.set_column(table.schema.get_field_index("wall_s"), "wall_s",
                                    pa.array([str(v) for v in table.column("wall_s").to_pylist()])),
                   bad_dir / "wrong-type.parquet")
    pq.write_table(table.drop_columns(["cpu_model"]), bad_dir / "missing-column.parquet")
    corrupt = good.read_bytes()
    (bad_dir / "truncated.parquet").write_bytes(corrupt[: len(corrupt) // 2])
    target = cli.workdir / "target.db"
    proc = cli.run("import", "--db", target, good, bad_dir)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 4, proc.stderr
    assert any("wrong-type.parquet: column wall_s has type string, expected double" in line
               for line in lines), proc.stderr
    assert any("missing-column.parquet: not a compatlab runs file: no column cpu_model" in line
               for line in lines), proc.stderr
    assert any("truncated.parquet: " in line for line in lines), proc.stderr
    assert lines[-1] == "compatlab: error: 3 of 4 files rejected; nothing imported"
    assert not target.exists()  # not even an empty store


def planted_copy(table, sweep_id, edit):
    """`table` as another sweep's runs (new sweep_id and run_ids), each row edited by
    edit(row) (a dict), with the export's own schema."""
    rows = table.to_pylist()
    for row in rows:
        row["sweep_id"] = sweep_id
        row["run_id"] = f"{sweep_id}-{row['run_id']}"
        edit(row)
    return pa.Table.from_pylist(rows, schema=table.schema)


def with_figures(row):
    row["steady_median_s"], row["steady_p90_s"] = 0.010, 0.0101
    row["prepare_s"], row["host_peak_rss_bytes"] = 1.0, 100 << 20


def test_diff_reports_a_planted_regression(cli, store):
    db, sweep_id = store
    (exported,) = export(cli, db, cli.workdir / "out")
    table = pq.read_table(exported)
    noops = sorted(r["run_id"] for r in table.to_pylist() if r["kind"] == "noop")
    others = sorted(r["run_id"] for r in table.to_pylist() if r["kind"] != "noop")

    def regress(row):
        with_figures(row)
        if row["run_id"] == f"head-{noops[0]}":
            row["status"], row["stage"] = "fail_to_run", "steady"
            row["error_type"], row["error_message"] = "RuntimeError", "planted at 0xdead01 (7)"
        if row["run_id"] == f"head-{noops[1]}":
            row["steady_median_s"], row["steady_p90_s"] = 0.012, 0.0121  # +20%
        # Another build of torch (schema 24); a 50% slower first call on a quiet machine (a
        # change by the one-sample rule) and a 3x slower one on a noisy machine (not judged).
        row["torch_build"] = "cuda 13.0"
        if row["run_id"] == f"head-{others[0]}":
            row["prepare_s"], row["prepare_noisy"] = 1.5, 0
        if row["run_id"] == f"head-{others[1]}":
            row["prepare_s"], row["prepare_noisy"] = 3.0, 1

    planted = cli.workdir / "planted"
    planted.mkdir()
    pq.write_table(planted_copy(table, "base", with_figures), planted / "base.parquet")
    pq.write_table(planted_copy(table, "head", regress), planted / "head.parquet")
    proc = cli.run("import", "--db", db, planted)
    assert proc.returncode == 0, proc.stderr

    proc = cli.run("diff", "--db", db, "--base", "base", "--head", "head", "--fail-on-regression")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "newly failing (1), regression" in proc.stdout
    assert "RuntimeError: planted at <hex> (N)" in proc.stdout
    assert "slower steady (1), regression" in proc.stdout
    assert "+20.0% (10.00 ms -> 12.00 ms" in proc.stdout
    # The probe recorded this build as cpu; the head planted as another: said first.
    lines = proc.stdout.splitlines()
    assert lines[2].startswith("builds differ: torch ") and "torch_build cpu vs cuda 13.0" in lines[2], lines
    assert lines[2].endswith("timings compare builds, not only releases"), lines
    # Each line names its rule; a first call has no zero-wide interval.
    assert "slower prepare (1), regression" in proc.stdout
    assert "+50.0% (1.000 s -> 1.500 s)  one sample: > 25% and > 10.00 ms" in proc.stdout
    assert "[1.000 s, 1.000 s]" not in proc.stdout
    assert "intervals apart and > 5%" in proc.stdout and "  status\n" in proc.stdout
    assert lines[-1] == "not judged: prepare_s of 1 tests, a first call measured on a noisy machine (one-sample rule)"
    assert lines[-2].endswith("; 3 regressions, 0 improvements")
    # Without the flag the report is the same and the exit code 0.
    assert cli.run("diff", "--db", db, "--base", "base", "--head", "head").returncode == 0
    # The other way round: one newly passing, one faster; nothing regressed.
    proc = cli.run("diff", "--db", db, "--base", "head", "--head", "base", "--fail-on-regression")
    assert proc.returncode == 0, proc.stdout
    assert "newly passing (1), improvement" in proc.stdout
    assert "faster steady (1), improvement" in proc.stdout
    assert "faster prepare (1), improvement" in proc.stdout
    assert "; 0 regressions, 3 improvements\nnot judged: prepare_s of 1 tests" in proc.stdout


def test_diff_of_a_sweep_against_itself_reports_nothing(cli, store):
    db, sweep_id = store
    proc = cli.run("diff", "--db", db, "--base", sweep_id, "--head", sweep_id,
                   "--fail-on-regression")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == (
        "summary: 4 compared, 0 newly failing, 0 newly passing, 0 status changed, "
        "0 error changed, 0 slower steady, 0 slower prepare, 0 more memory, 0 faster steady, 0 faster prepare, "
        "0 less memory, 0 different cpu, 0 different stack, 0 only in base, 0 only in head; 0 regressions, "
        "0 improvements")
    assert "(1)" not in proc.stdout
    # By stack versions: the same runs.
    (torch,) = {r["torch_version"] for r in run_json(cli, db)}
    proc = cli.run("diff", "--db", db, "--base", f"torch={torch}", "--head", sweep_id)
    assert proc.returncode == 0 and "; 0 regressions" in proc.stdout, proc.stdout
    # Bad sides are bad input.
    assert cli.run("diff", "--db", db, "--base", "nope", "--head", sweep_id).returncode == 2
    assert cli.run("diff", "--db", db, "--base", "torch=0.0.1", "--head", sweep_id).returncode == 2


def test_expected_status_file_gates_changes(cli, store):
    db, sweep_id = store
    golden = cli.workdir / "golden.tsv"
    proc = cli.run("diff", "--db", db, "--head", sweep_id, "--write-expected", golden)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in golden.read_text().splitlines() if not ln.startswith("#")]
    assert len(lines) == 4 and all(len(ln.split("\t")) == 7 for ln in lines)
    proc = cli.run("diff", "--db", db, "--head", sweep_id, "--expected", golden)
    assert proc.returncode == 0, proc.stdout
    assert "expected status: 4 tests, 0 changed, 0 missing, 0 unexpected" in proc.stdout
    # A sweep where the crash now passes: one change, exit 1.
    table = pq.read_table(export(cli, db, cli.workdir / "out")[0])

    def fixed(row):
        if row["status"] == "crash":
            row["status"], row["status_detail"], row["term_signal"] = "pass", "", None

    pq.write_table(planted_copy(table, "fixed", fixed), cli.workdir / "fixed.parquet")
    assert cli.run("import", "--db", db, cli.workdir / "fixed.parquet").returncode == 0
    proc = cli.run("diff", "--db", db, "--head", "fixed", "--expected", golden)
    assert proc.returncode == 1, proc.stdout
    assert "expected status: 4 tests, 1 changed, 0 missing, 0 unexpected" in proc.stdout


def test_query_filters_sorts_and_writes_csv(cli, store):
    db, _ = store
    # Bytes, not text: text mode would turn the CRLF line ends into "\n".
    proc = subprocess.run([cli.binary, "query", "--db", db, "--status", "pass", "--sort",
                           "-wall_s", "--format", "csv"], cwd=cli.workdir, env=cli.env,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    assert text.count("\r\n") == 3 and text.endswith("\r\n")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == [name for name, _, _ in documented_fields()]
    records = [dict(zip(rows[0], r, strict=False)) for r in rows[1:]]
    assert [r["status"] for r in records] == ["pass", "pass"]
    walls = [float(r["wall_s"]) for r in records]
    assert walls == sorted(walls, reverse=True)
    assert json.loads(records[0]["kind_params"]).keys() == {"rep"}
    assert [r["kind"] for r in run_json(cli, db, "--kind", "segfault", "--dtype", "float32")] == [
        "segfault"]
    assert run_json(cli, db, "--transformers-version", "0.0.0") == []
    # runs is the short form of query, its flags unchanged.
    assert cli.run("runs", "--db", db, "--limit", "2").stdout == cli.run(
        "query", "--db", db, "--limit", "2").stdout
    proc = cli.run("query", "--db", db, "--sort", "rowid")
    assert proc.returncode == 2 and "not a result field" in proc.stderr
