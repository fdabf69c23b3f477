"""sweep --profile end to end (doc/results-schema.md, "Profile"): the row's summary, the
trace kept beside the store by its digest, export --traces and import of it (a tampered
trace refused, nothing imported), compare --profile, and the flag's bad values."""

import gzip
import hashlib
import json
import shutil

import pytest


@pytest.fixture(scope="module")
def profiled(compatlab_bin, tmp_path_factory):
    """A store with a tiny gpt2's forward, eager, on the cpu, swept under --profile."""
    from .conftest import Compatlab

    work = tmp_path_factory.mktemp("profile")
    cli = Compatlab(compatlab_bin, work)
    db = work / "profile.db"
    sweep_id, _ = cli.sweep("--db", db, "--models", "gpt2", "--kinds", "forward", "--modes", "eager",
                            "--seq-lens", "8", "--max-measure-s", "0.3", "--profile")
    rows = json.loads(cli.run("query", "--db", db, "--format", "json").stdout)
    return cli, db, sweep_id, rows


def test_a_profiled_row_holds_its_summary_and_its_trace_beside_the_store(profiled):
    _, db, _, rows = profiled
    (row,) = rows
    assert row["status"] == "pass", row["status_detail"]
    assert row["profile"] == "steady" and row["profile_calls"] == 5
    assert row["profile_median_s"] > 0 and row["steady_median_s"] > 0
    assert row["profile_compute_s"] > 0 and row["profile_copy_s"] == 0
    ops = json.loads(row["profile_top_ops"])
    assert ops and {"name", "shapes", "calls", "self_s", "share"} <= set(ops[0])
    artifacts = db.parent / (db.name + ".artifacts")
    trace = artifacts / f"{row['profile_trace_sha256']}.json.gz"
    data = trace.read_bytes()
    assert len(data) == row["profile_trace_bytes"]
    assert hashlib.sha256(data).hexdigest() == row["profile_trace_sha256"]
    assert "traceEvents" in json.loads(gzip.decompress(data))
    assert not (artifacts / "tmp").exists()  # the child's file was moved, its directory removed


def test_export_carries_traces_only_when_asked_and_import_checks_them(profiled, tmp_path):
    cli, db, _, rows = profiled
    digest = rows[0]["profile_trace_sha256"]
    plain, carried = tmp_path / "plain", tmp_path / "carried"
    assert cli.run("export", "--db", db, "--parquet", plain).returncode == 0
    assert not (plain / "profile_traces").exists()
    proc = cli.run("export", "--db", db, "--parquet", carried, "--traces")
    assert proc.returncode == 0 and "with 1 profile traces" in proc.stderr
    carried_trace = carried / "profile_traces" / f"{digest}.json.gz"
    assert carried_trace.is_file()

    imported = tmp_path / "imported.db"
    proc = cli.run("import", "--db", imported, carried)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "imported.db.artifacts" / f"{digest}.json.gz").read_bytes() == carried_trace.read_bytes()

    tampered = tmp_path / "tampered"
    shutil.copytree(carried, tampered)
    (tampered / "profile_traces" / f"{digest}.json.gz").write_bytes(gzip.compress(b'{"traceEvents": []}'))
    refused = tmp_path / "refused.db"
    proc = cli.run("import", "--db", refused, tampered)
    assert proc.returncode == 2 and "does not hash to its name" in proc.stderr
    assert not refused.exists()


def test_compare_profile_aligns_the_categories_and_ops_of_each_profiled_test(profiled):
    cli, db, sweep_id, _ = profiled
    proc = cli.run("compare", "--db", db, "--base", sweep_id, "--head", sweep_id, "--profile")
    assert proc.returncode == 0, proc.stderr
    assert "profiles (--profile: time per call, head against base):" in proc.stdout
    assert "ops whose self time changed most" in proc.stdout
    report = json.loads(cli.run("compare", "--db", db, "--base", sweep_id, "--head", sweep_id,
                                "--profile", "--format", "json").stdout)
    (profile,) = report["profiles"]
    assert [c["name"] for c in profile["categories"]] == ["compute", "copy", "fallback", "framework", "idle"]
    assert profile["ops"] and all(op["delta_s"] == 0 for op in profile["ops"])  # a run against itself


def test_a_profile_window_the_sweep_does_not_know_is_bad_input(cli, db):
    proc = cli.run("sweep", "--db", db, "--models", "gpt2", "--profile", "always")
    assert proc.returncode == 2 and "--profile" in proc.stderr
    assert not db.exists()
