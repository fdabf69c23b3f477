"""The supervisor end to end: every fault status, no process outliving a sweep, resume."""

import glob
import re
import signal

TAIL_LIMIT = 64 * 1024  # stdout_tail and stderr_tail keep the last 64 KiB


def test_faults_suite_records_every_status(cli, db):
    sweep_id, proc = cli.sweep("--suite", "faults", "--mem-limit", "1G", "--db", db)
    assert cli.leftovers(sweep_id) == [], "processes of the sweep outlived it"

    rows = cli.runs(db)
    assert {r["sweep_id"] for r in rows} == {sweep_id}
    by_kind = {r["kind"]: r for r in rows}
    assert {kind: r["status"] for kind, r in by_kind.items()} == {
        "noop": "pass",
        "hang": "timeout",
        "hang-hard": "timeout",
        "segfault": "crash",
        "abort": "crash",
        "oom": "oom",
        "raise": "fail_to_run",
        "flood": "pass",
        "kill-zygote": "pass",
    }
    assert len(rows) == 9
    assert by_kind["segfault"]["status_detail"] == "SIGSEGV"
    # A child that dies is placed at its last stage mark, and its Python stack is in the
    # stderr tail (faulthandler): at the fatal signal, and at the deadline's SIGTERM.
    assert by_kind["segfault"]["stage"] == "load"
    assert "Fatal Python error: Segmentation fault" in by_kind["segfault"]["stderr_tail"]
    assert "in segfault" in by_kind["segfault"]["stderr_tail"]
    assert by_kind["hang"]["stage"] == "compile"
    assert "in _sleep_forever" in by_kind["hang"]["stderr_tail"]
    assert by_kind["abort"]["stage"] == "run"  # no stage mark: the supervisor's default
    assert by_kind["abort"]["status_detail"] == "SIGABRT"
    raised = by_kind["raise"]
    assert raised["stage"] and raised["error_type"] and raised["error_traceback"]
    flood = by_kind["flood"]
    assert 0 < len(flood["stdout_tail"].encode()) <= TAIL_LIMIT
    assert 0 < len(flood["stderr_tail"].encode()) <= TAIL_LIMIT

    # kill-zygote SIGKILLs the zygote; the next test runs in a restarted one,
    # starting after kill-zygote ended, and reports its own result.
    after = rows[[r["kind"] for r in rows].index("kill-zygote") + 1]
    assert after["started_at"] >= by_kind["kill-zygote"]["finished_at"]
    assert after["exit_code"] == 0 and after["torch_version"]
    assert "zygote restarted 1x" in proc.stderr

def test_sigkill_of_supervisor_leaves_no_process_and_resume_completes(cli, db, wait_until):
    sweep = cli.popen("sweep", "--suite", "noop", "--db", db)
    try:
        lines = []
        for line in sweep.stderr:
            lines.append(line)
            progress = re.match(r"\[(\d+)/300\] ", line)
            if progress and int(progress.group(1)) >= 20:
                break
        else:
            raise AssertionError("the sweep ended before 20 results:\n" + "".join(lines[-20:]))
        sweep_id = cli.sweep_id_of("".join(lines))
        assert cli.leftovers(sweep_id), "the running sweep's processes are not visible"
        sweep.send_signal(signal.SIGKILL)
        sweep.wait(timeout=10)
    finally:
        cli.close(sweep)
    gone = wait_until(lambda: not cli.leftovers(sweep_id), timeout_s=10)
    assert gone, f"still alive 10 s after SIGKILL: {cli.leftovers(sweep_id)}"
    # Nor a per-test memory cgroup (named compatlab-<supervisor pid>-<n>).
    def cgroups():
        return glob.glob(f"/sys/fs/cgroup/**/compatlab-{sweep.pid}-*", recursive=True)
    assert wait_until(lambda: not cgroups(), timeout_s=5), cgroups()

    resumed = cli.run("sweep", "--resume", "--db", db)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert f"resuming sweep {sweep_id}" in resumed.stderr
    rows = cli.runs(db, "--sweep", sweep_id)
    assert len(rows) == 300
    assert len({r["test_id"] for r in rows}) == 300
    assert {r["status"] for r in rows} == {"pass"}


def test_resume_of_a_finished_sweep_changes_nothing(cli, db):
    import sqlite3

    suite = cli.write_suite("three", tests=[{"kind": "noop", "repeat": 3}])
    sweep_id, _ = cli.sweep("--suite", suite, "--db", db)

    def finished_at():
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT finished_at FROM sweeps WHERE sweep_id = ?",
                                (sweep_id,)).fetchone()[0]

    before = finished_at()
    assert before
    proc = cli.run("sweep", "--db", db, "--resume", sweep_id)
    assert proc.returncode == 0, proc.stderr
    assert "0 of 3 tests left" in proc.stderr
    assert finished_at() == before
    assert len(cli.runs(db, "--sweep", sweep_id)) == 3
