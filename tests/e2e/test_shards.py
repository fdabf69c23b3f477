"""A sweep planned once, run as shards and merged exactly (doc/plan-file.md, doc/scale-out.md).

Every case runs noop tests (the cheapest kind: the harness alone, about 40 ms a test after
one zygote start per shard), and the cases share one planned, sharded and unsharded run of
the tiny suite (`sharded`), copying its stores before they change them.
"""

import hashlib
import json
import shutil
import sqlite3

import pytest
import yaml

from .conftest import Compatlab

NOOPS = 6


def tiny_suite(cli, name="tiny", repeat=NOOPS):
    """A suite of `repeat` noop tests."""
    return cli.write_suite(name, tests=[{"kind": "noop", "repeat": repeat}])


def edit(db, sql, *params):
    """Runs `sql` on the store `db` and closes it (its WAL folded in): a store changed by hand."""
    con = sqlite3.connect(db)
    try:
        with con:
            rows = con.execute(sql, params).fetchall()
    finally:
        con.close()
    return rows


def stored_ids(cli, db):
    return sorted(r["test_id"] for r in cli.runs(db))


def plan_file(cli, suite, shards, *extra):
    path = cli.workdir / "plan.json"
    proc = cli.run("plan", "--suite", suite, "--shards", shards, "--out", path, *extra)
    assert proc.returncode == 0, proc.stderr
    return path, proc.stdout


def run_shards(cli, path, shards):
    """Runs every shard of the plan file `path` into its own store; returns the stores."""
    dbs = [cli.workdir / f"shard-{i}.db" for i in range(shards)]
    for i, db in enumerate(dbs):
        cli.sweep("--plan", path, "--shard", f"{i}/{shards}", "--db", db)
    return dbs


@pytest.fixture(scope="module")
def sharded(compatlab_bin, tmp_path_factory):
    """The tiny suite planned in 3 shards, each shard run into its own store, and run
    unsharded: (plan file, plan report, shard stores, unsharded store)."""
    cli = Compatlab(compatlab_bin, tmp_path_factory.mktemp("sharded"))
    suite = tiny_suite(cli)
    path, report = plan_file(cli, suite, 3)
    dbs = run_shards(cli, path, 3)
    whole = cli.workdir / "whole.db"
    cli.sweep("--suite", suite, "--db", whole)
    return path, report, dbs, whole


def copies(cli, dbs):
    """Copies of the stores `dbs` in this test's directory."""
    copied = [cli.workdir / db.name for db in dbs]
    for db, copy in zip(dbs, copied, strict=True):
        shutil.copy(db, copy)
    return copied


def test_plan_is_deterministic_and_its_shards_cover_it_once(cli, sharded):
    path, report, dbs, unsharded = sharded
    first = path.read_bytes()
    again, _ = plan_file(cli, tiny_suite(cli), 3)
    assert again.read_bytes() == first, "the same inputs gave another plan file"
    assert "predicted makespan" in report and "shard 2/3:" in report, report
    plan = json.loads(first)
    assert plan["shards"] == 3 and len(plan["tests"]) == NOOPS
    per_shard = [set(stored_ids(cli, db)) for db in dbs]
    assert set().union(*per_shard) == set(stored_ids(cli, unsharded))
    assert sum(len(s) for s in per_shard) == NOOPS
    # Every stored sweep records its plan's id and shard; the unsharded one the same plan id.
    sweeps = "SELECT plan_id, shard, shards FROM sweeps"
    assert edit(dbs[1], sweeps) == [(plan["plan_id"], 1, 3)]
    assert edit(unsharded, sweeps) == [(plan["plan_id"], None, None)]
    # Run again (a requeued task), a shard resumes its sweep and runs nothing twice.
    (db,) = copies(cli, [dbs[1]])
    again = cli.run("sweep", "--plan", path, "--shard", "1/3", "--db", db)
    assert again.returncode == 0, again.stderr
    assert "resuming sweep" in again.stderr
    assert sorted(stored_ids(cli, db)) == sorted(per_shard[1])


def test_shards_without_a_plan_file_are_disjoint_and_cover_the_plan(cli, sharded):
    suite = tiny_suite(cli)
    parts = []
    for i in range(3):
        db = cli.workdir / f"hash-{i}.db"
        cli.sweep("--suite", suite, "--shard", f"{i}/3", "--db", db)
        parts.append(set(stored_ids(cli, db)))
    assert sum(len(p) for p in parts) == NOOPS
    assert set().union(*parts) == set(stored_ids(cli, sharded[3]))


def test_merge_is_exact_idempotent_and_keeps_a_retried_shards_runs(cli, sharded):
    path, _, dbs, unsharded = sharded
    merged = cli.workdir / "merged.db"
    first = cli.run("merge", merged, *dbs)
    assert first.returncode == 0, first.stderr
    assert f"{NOOPS} runs added, 0 already there" in first.stdout, first.stdout
    again = cli.run("merge", merged, *dbs)
    assert again.returncode == 0, again.stderr
    assert f"0 runs added, {NOOPS} already there" in again.stdout, again.stdout
    assert stored_ids(cli, merged) == stored_ids(cli, unsharded)
    # Shard 0 retried from scratch (a new store): both runs of each of its tests are kept.
    retry = cli.workdir / "retry-0.db"
    cli.sweep("--plan", path, "--shard", "0/3", "--db", retry)
    proc = cli.run("merge", merged, retry)
    assert proc.returncode == 0, proc.stderr
    rows = cli.runs(merged)
    assert len(rows) == NOOPS + len(stored_ids(cli, retry))
    assert {r["test_id"] for r in rows} == set(stored_ids(cli, unsharded))
    # query and matrix read the merged store as they read the unsharded one.
    for command in ("query", "matrix"):
        merged_out = cli.run(command, "--db", merged)
        assert merged_out.returncode == 0, merged_out.stderr
        assert cli.run(command, "--db", unsharded).returncode == 0


def test_merge_refuses_a_changed_run_and_another_plan(cli, sharded):
    (shard,) = copies(cli, [sharded[2][0]])
    merged = cli.workdir / "merged.db"
    assert cli.run("merge", merged, shard).returncode == 0
    before = merged.read_bytes()
    changed = cli.workdir / "changed.db"
    changed.write_bytes(shard.read_bytes())
    edit(changed, "UPDATE runs SET wall_s = wall_s + 1 WHERE rowid = 1")
    proc = cli.run("merge", merged, changed)
    assert proc.returncode == 2, proc.stderr
    assert "different content" in proc.stderr, proc.stderr
    assert merged.read_bytes() == before
    other = cli.workdir / "other.db"
    cli.sweep("--suite", tiny_suite(cli, "other", repeat=2), "--db", other)
    proc = cli.run("merge", merged, other)
    assert proc.returncode == 2 and "--allow-mixed" in proc.stderr, proc.stderr
    assert merged.read_bytes() == before
    assert cli.run("merge", "--allow-mixed", merged, other).returncode == 0


def test_sweeps_lists_a_merged_plans_missing_test(cli, sharded):
    dbs = copies(cli, sharded[2])
    # Shard 1 lost one result (as a task killed mid-test would have).
    ((missing,),) = edit(dbs[1], "SELECT test_id FROM runs ORDER BY rowid LIMIT 1")
    edit(dbs[1], "DELETE FROM runs WHERE test_id = ?", missing)
    merged = cli.workdir / "merged.db"
    assert cli.run("merge", merged, *dbs).returncode == 0
    proc = cli.run("sweeps", "--db", merged)
    assert proc.returncode == 0, proc.stderr
    print(proc.stdout)
    assert f"{NOOPS} tests planned, {NOOPS - 1} stored, 1 missing" in proc.stdout, proc.stdout
    missing_lines = [line for line in proc.stdout.splitlines() if missing in line]
    assert len(missing_lines) == 1 and missing_lines[0].startswith("1/3"), proc.stdout
    # The missing test is not run into the merged store: its shard sweep there is a merged
    # one (its plan as specs only), refused with one line, the store unchanged.
    before = merged.read_bytes()
    proc = cli.run("sweep", "--plan", sharded[0], "--shard", "1/3", "--db", merged)
    assert proc.returncode == 2, proc.stderr
    assert "only as merged from another store" in proc.stderr, proc.stderr
    assert merged.read_bytes() == before


def canonical(obj):
    """A planned test's JSON text as compatlab writes it (compact, keys in order)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def test_a_plan_file_is_untrusted_data(cli):
    path, _ = plan_file(cli, tiny_suite(cli), 2)
    plan = json.loads(path.read_text())
    db = cli.workdir / "shard.db"
    # Edited without its id: refused as a file that changed.
    edited = dict(plan, tests=[dict(t) for t in plan["tests"]])
    edited["tests"][0]["test"] = dict(edited["tests"][0]["test"])
    edited["tests"][0]["test"]["execution"] = dict(edited["tests"][0]["test"]["execution"],
                                                   python="/tmp/evil/python")
    bad = cli.workdir / "edited.json"
    bad.write_text(json.dumps(edited))
    proc = cli.run("sweep", "--plan", bad, "--shard", "0/2", "--db", db)
    assert proc.returncode == 2 and "not the id of the tests" in proc.stderr, proc.stderr
    # With its id made to match, the interpreter is not this installation's: refused.
    lines = "".join(canonical(t["test"]) + "\n" for t in edited["tests"])
    edited["plan_id"] = hashlib.sha256(lines.encode()).hexdigest()
    bad.write_text(json.dumps(edited))
    shard = edited["tests"][0]["shard"]
    proc = cli.run("sweep", "--plan", bad, "--shard", f"{shard}/2", "--db", db)
    assert proc.returncode == 2, proc.stderr
    assert "--allow-stored-code" in proc.stderr and "/tmp/evil/python" in proc.stderr, proc.stderr
    assert not db.exists()
    # Other bad input, one line each, exit 2, nothing written.
    for args in (["--shard", "0/3"], ["--shard", "2/2"], ["--resume"], []):
        proc = cli.run("sweep", "--plan", path, *args, "--db", db)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.count("\n") == 1, proc.stderr
    assert not db.exists()


def test_k8s_manifests_name_the_index_the_shard_count_and_the_merge(cli):
    path, _ = plan_file(cli, tiny_suite(cli), 3)
    out = cli.workdir / "k8s"
    proc = cli.run("k8s", "--plan", path, "--shards", 3, "--out", out,
                   "--image", "registry.example/compatlab:1", "--claim", "work")
    assert proc.returncode == 0, proc.stderr
    shards = yaml.safe_load((out / "shards-job.yaml").read_text())
    assert shards["spec"]["completionMode"] == "Indexed"
    assert shards["spec"]["completions"] == 3
    assert shards["spec"]["backoffLimitPerIndex"] >= 1
    command = shards["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert '--shard "${JOB_COMPLETION_INDEX}/3"' in command, command
    merge = yaml.safe_load((out / "merge-job.yaml").read_text())
    script = merge["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert "compatlab merge /work/merged.db" in script and "compatlab sweeps" in script, script
