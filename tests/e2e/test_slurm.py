"""`compatlab slurm --submit` on a real one-node Slurm cluster (tests/e2e/slurm_cluster.py):
a plan's shards as an array job, the merge after it, and a requeued task that resumes.

make test runs noop tests (the harness alone, a zygote start per task): what is proved is the
orchestration (array, afterany, requeue, merge), not a model. The `ci` suite itself runs
through the same path in bench/shards and in the slow case below (`make test-slow`).
"""

import json
import sqlite3
import time

import pytest

from .slurm_cluster import SlurmCluster, job_ids


@pytest.fixture
def slurm(tmp_path):
    cluster = SlurmCluster(tmp_path / "slurm")
    (tmp_path / "slurm").mkdir()
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def submit(cli, slurm, suite, shards):
    """Plans `suite` in `shards` shards and submits it; returns (plan, jobs dir, array, merge)."""
    plan = cli.workdir / "plan.json"
    proc = cli.run("plan", "--suite", suite, "--shards", shards, "--out", plan)
    assert proc.returncode == 0, proc.stderr
    jobs = cli.workdir / "jobs"
    cli.env["SLURM_CONF"] = slurm.env["SLURM_CONF"]
    proc = cli.run("slurm", "--plan", plan, "--shards", shards, "--out", jobs, "--submit")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return (plan, jobs, *job_ids(proc.stdout))


def stored_ids(cli, db):
    return sorted(r["test_id"] for r in cli.runs(db))


def unsharded_ids(cli, suite):
    whole = cli.workdir / "whole.db"
    cli.sweep("--suite", suite, "--db", whole)
    return stored_ids(cli, whole)


def run_sharded(cli, slurm, suite, timeout_s):
    """The suite as 3 array tasks plus the merge; returns (jobs dir, squeue rows)."""
    _, jobs, array, merge = submit(cli, slurm, suite, 3)
    slurm.wait_jobs_done(timeout_s)
    rows = slurm.jobs()
    print("squeue --states=all:\n" + "\n".join("  ".join(r) for r in rows))
    assert sorted(r[0] for r in rows) == sorted([f"{array}_0", f"{array}_1", f"{array}_2", merge])
    assert {r[2] for r in rows} == {"COMPLETED"}, rows
    print((jobs / "merge.log").read_text())
    return jobs, rows


def test_a_plan_runs_as_an_array_job_and_merges_to_the_unsharded_plans_tests(cli, slurm):
    suite = cli.write_suite("tiny", tests=[{"kind": "noop", "repeat": 6}])
    jobs, _ = run_sharded(cli, slurm, suite, 120)
    merged = jobs / "merged.db"
    assert stored_ids(cli, merged) == unsharded_ids(cli, suite)
    assert "6 tests planned, 6 stored, 0 missing" in (jobs / "merge.log").read_text()
    assert not cli.leftovers()


@pytest.mark.slow
def test_the_ci_suite_as_three_array_tasks(cli, slurm):
    jobs, _ = run_sharded(cli, slurm, "ci", 900)
    assert stored_ids(cli, jobs / "merged.db") == unsharded_ids(cli, "ci")


def shard_of_kind(plan_path, kind):
    """The shard of the plan file's first test of `kind`, and how many tests that shard has."""
    tests = json.loads(plan_path.read_text())["tests"]
    shard = next(t["shard"] for t in tests if t["test"]["kind"] == kind)
    return shard, sum(1 for t in tests if t["shard"] == shard)


def query(db, sql):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def stored(db):
    """The kinds of the runs stored in `db` so far ([] before it exists). The connection is
    closed at once: one left open would keep the sweep's WAL from being folded in."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error:
        return []
    try:
        return [r[0] for r in con.execute("SELECT kind FROM runs")]
    except sqlite3.Error:
        return []
    finally:
        con.close()


def test_a_task_cancelled_mid_test_and_requeued_resumes_without_running_a_test_twice(
        cli, slurm, wait_until):
    suite = cli.write_suite("hang", tests=[{"kind": "noop", "repeat": 4},
                                           {"kind": "hang", "timeout_s": 8}])
    plan, jobs, array, merge = submit(cli, slurm, suite, 3)
    slurm.command("scontrol", "hold", merge)  # so that it waits for the requeued task
    shard, planned = shard_of_kind(plan, "hang")
    task = f"{array}_{shard}"
    db = jobs / f"shard-{shard}.db"
    # Mid-test: every test of the shard but the hang one is stored, and the hang one runs.
    assert wait_until(lambda: len(stored(db)) == planned - 1, 120), slurm.logs()
    time.sleep(1.5)
    slurm.command("scancel", task)
    assert wait_until(lambda: dict((r[0], r[2]) for r in slurm.jobs()).get(task) == "CANCELLED",
                      30), slurm.jobs()
    assert "hang" not in stored(db)
    slurm.command("scontrol", "requeue", task)  # it starts again after cred_expire (10 s)
    # afterany counts the cancelled task as ended: the merge is released once the requeued
    # task has ended again.
    assert wait_until(lambda: dict((r[0], r[2]) for r in slurm.jobs()).get(task) == "COMPLETED",
                      120), slurm.jobs()
    slurm.command("scontrol", "release", merge)
    slurm.wait_jobs_done(120)
    rows = slurm.jobs()
    print("squeue --states=all:\n" + "\n".join("  ".join(r) for r in rows))
    log = (jobs / f"shard-{shard}.log").read_text()
    assert "resuming sweep" in log, log
    assert (jobs / "merged.db").exists(), (jobs / "merge.log").read_text()
    assert query(db, "SELECT count(*) FROM sweeps") == [(1,)]
    both = "SELECT count(*), count(DISTINCT test_id) FROM runs"
    assert query(db, both) == [(planned, planned)]
    assert query(jobs / "merged.db", both) == [(5, 5)]
    assert "5 tests planned, 5 stored, 0 missing" in (jobs / "merge.log").read_text()
    assert not cli.leftovers()
