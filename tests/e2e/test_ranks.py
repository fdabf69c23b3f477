"""Tests over several ranks (doc/ranks.md): one process group supervised as one test."""

import json

FAULTS = [
    # A rank that dies of a signal: the test crashes, named by the rank and its stage.
    {"kind": "segfault", "ranks": 2, "kind_params": {"fault_rank": "0"}},
    # A rank that hangs while the other waits for it at a barrier: the deadline, naming it.
    {"kind": "hang", "ranks": 2, "timeout_s": 6, "kind_params": {"fault_rank": "1"}},
    # A rank the memory cgroup's OOM killer ends: oom, naming it.
    {"kind": "oom", "ranks": 2, "timeout_s": 120, "kind_params": {"fault_rank": "1"}},
    {"kind": "noop", "ranks": 3},
]


def test_a_rank_that_crashes_hangs_or_runs_out_of_memory_is_the_tests_status_naming_it(cli, db, tmp_path):
    suite = cli.write_suite("rank-faults", timeout_s=60, tests=FAULTS)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    cli.env = dict(cli.env, TMPDIR=str(tmp))  # where a group's leader makes its directory
    proc = cli.run("sweep", "--suite", suite, "--mem-limit", "512M", "--db", db)
    assert proc.returncode == 0, proc.stderr[-4000:]
    # A leader that dies of its rank's signal or of the deadline removes its directory too.
    assert not list(tmp.glob("compatlab-ranks-*")), list(tmp.iterdir())
    sweep_id = cli.sweep_id_of(proc.stderr)
    # Every rank carries the test's environment: none is left in the process table.
    assert cli.leftovers(sweep_id) == [], "processes of the group outlived the sweep"

    by_kind = {r["kind"]: r for r in cli.runs(db)}
    assert {k: (r["status"], r["ranks"]) for k, r in by_kind.items()} == {
        "segfault": ("crash", 2), "hang": ("timeout", 2), "oom": ("oom", 2), "noop": ("pass", 3)}
    crash = by_kind["segfault"]
    assert crash["status_detail"] == "SIGSEGV (rank 0)"
    assert crash["error_message"] == "killed by SIGSEGV (rank 0)"
    assert crash["stage"] == "load"  # the rank's own last stage mark
    hang = by_kind["hang"]
    assert hang["stage"] == "compile" and hang["status_detail"].endswith("(rank 1)"), hang
    # Each rank's stacks come under a line of their own (written at once onto the shared
    # stderr they came out interleaved): the hung rank's section names the hung function.
    _, rank1 = hang["stderr_tail"].split("compatlab: rank 1's Python stacks at the deadline:\n", 1)
    assert "in _sleep_forever" in rank1.split("compatlab: rank ", 1)[0], hang["stderr_tail"][-3000:]
    assert by_kind["oom"]["status_detail"].endswith("(rank 1)"), by_kind["oom"]
    assert by_kind["oom"]["stage"] == "run"  # past the rendezvous; kind oom writes no mark
    assert by_kind["noop"]["dist_backend"] == "gloo"


def test_a_two_rank_llama_forward_is_judged_against_the_single_device_reference(cli, db):
    sweep_id, _ = cli.sweep("--models", "llama", "--kinds", "forward", "--modes", "eager", "--ranks", "2",
                            "--db", db, timeout=600)
    assert cli.leftovers(sweep_id) == []
    [run] = cli.runs(db)
    assert (run["status"], run["ranks"], run["dist_backend"]) == ("pass", 2, "gloo"), run["error_message"]
    assert run["parallel_plan"].startswith("tp: transformers tp_plan")
    assert run["acc_rule"] == "allclose" and run["acc_ref_dtype"] == "float64"
    assert 0 <= run["acc_max_abs_err"] < 1e-4
    assert len(run["rank_host_mem"]) == 2 and all(m > 0 for m in run["rank_host_mem"])
    assert len(run["rank_steady_median"]) == 2

    # Its own cell of the matrix: the column says how many ranks.
    matrix = cli.run("matrix", "--db", db, "--format", "json")
    assert matrix.returncode == 0, matrix.stderr
    assert json.loads(matrix.stdout)["columns"] == [{"target": "cpu", "mode": "eager", "ranks": 2, "dynamic": ""}]
