"""Exact resume: a killed sweep resumes from its stored plan, never from what is on disk now.

Each sweep here is killed (SIGKILL) once its first row is committed; the resume must then
replay the stored execution settings (profile content, compile options decided over the
whole plan, interpreter) whatever happened to the files in between (doc/suites.md,
"Resuming a sweep").
"""

import json
import os
import shutil
import signal
import sqlite3
import time

import pytest

from .conftest import REPO, VENV_PYTHON

COMPILE_SWEEP = ("--models", "llama", "--modes", "compile", "--seq-lens", "16,32",
                 "--backend", "aot_eager")


def row_count(db):
    if not os.path.exists(db):
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT count(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def kill_after_first_row(cli, db, wait_until, *args):
    """Starts `compatlab sweep --db DB ARGS`, SIGKILLs it once one row is stored and waits
    until none of its processes is left; returns the sweep id."""
    sweep = cli.popen("sweep", "--db", db, *args)
    try:
        stored = wait_until(lambda: row_count(db) >= 1 or sweep.poll() is not None,
                            timeout_s=600, interval_s=0.05)
        assert stored and sweep.poll() is None, (
            f"the sweep ended before it was killed (exit {sweep.poll()}):\n"
            + sweep.stderr.read()[-3000:])
        sweep.send_signal(signal.SIGKILL)
        sweep.wait(timeout=10)
        stderr = sweep.stderr.read()
    finally:
        cli.close(sweep)
    sweep_id = cli.sweep_id_of(stderr)
    assert wait_until(lambda: not cli.leftovers(sweep_id), timeout_s=10)
    assert row_count(db) == 1
    return sweep_id


def planned_execution(db, sweep_id):
    """The stored execution settings of each planned test, in plan order."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        specs = conn.execute("SELECT spec FROM planned_tests WHERE sweep_id = ? ORDER BY ordinal",
                             (sweep_id,)).fetchall()
    return [json.loads(spec)["execution"] for (spec,) in specs]


def check_resumed_compile_sweep(cli, db, sweep_id, expected_options):
    # The stored profile is no longer one this installation has: it is refused as code
    # (doc/suites.md), then run as stored once the user vouches for it.
    refused = cli.run("sweep", "--db", db, "--resume")
    assert refused.returncode == 2 and "its stored target profile" in refused.stderr, refused.stderr
    assert row_count(db) == 1
    resumed = cli.run("sweep", "--db", db, "--resume", "--allow-stored-code", timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert f"resuming sweep {sweep_id}: 1 of 2 tests left" in resumed.stderr
    rows = cli.runs(db, "--sweep", sweep_id)
    assert sorted(r["seq_len"] for r in rows) == [16, 32]
    assert {r["status"] for r in rows} == {"pass"}, [r["error_message"] for r in rows]
    assert {r["compile_options"] for r in rows} == {expected_options}
    profiles = {e["target_profile_json"] for e in planned_execution(db, sweep_id)}
    assert len(profiles) == 1
    return json.loads(profiles.pop())


def test_resume_completes_a_sweep_whose_profile_file_was_deleted(cli, db, tmp_path, wait_until):
    profile = json.loads((REPO / "targets" / "cpu.json").read_text())
    profile["name"] = "cpu_file"
    profile["description"] = "cpu, given as a file"
    profile["compile"] = {"backend": "aot_eager", "options": {"fullgraph": False}}  # no dynamic
    path = tmp_path / "profiles" / "cpu_file.json"
    path.parent.mkdir()
    path.write_text(json.dumps(profile))

    sweep_id = kill_after_first_row(cli, db, wait_until, *COMPILE_SWEEP, "--targets", path)
    path.unlink()
    stored = check_resumed_compile_sweep(cli, db, sweep_id,
                                         '{"dynamic":false,"fullgraph":false}')
    assert stored["description"] == "cpu, given as a file"


def project_home_copy(tmp_path):
    """A project home whose targets/ is a copy (the real one is never edited)."""
    home = tmp_path / "home"
    home.mkdir()
    for name in ("probe", "suites", ".venv"):
        (home / name).symlink_to(REPO / name)
    shutil.copytree(REPO / "targets", home / "targets")
    return home


# make test-slow: about 40-100 s on the idle 2-core machine (make test kept under 25 min).
@pytest.mark.slow
def test_resume_ignores_an_edit_of_the_builtin_profile(cli, db, tmp_path, wait_until):
    home = project_home_copy(tmp_path)
    cli.env["COMPATLAB_HOME"] = str(home)
    cpu = home / "targets" / "cpu.json"
    original = json.loads(cpu.read_text())

    sweep_id = kill_after_first_row(cli, db, wait_until, *COMPILE_SWEEP, "--targets", "cpu")
    edited = dict(original, description="edited after the kill",
                  compile={"backend": "inductor", "options": {"dynamic": True, "fullgraph": True}})
    cpu.write_text(json.dumps(edited))
    stored = check_resumed_compile_sweep(cli, db, sweep_id,
                                         '{"dynamic":false,"fullgraph":false}')
    assert stored["description"] == original["description"]
    assert stored["compile"] == original["compile"]


def harness_suite(cli):
    return cli.write_suite("pair", tests=[{"kind": "noop"}, {"kind": "hang"}])


def test_resume_refuses_a_different_plan_flag_and_accepts_an_equal_one(cli, db, wait_until):
    suite = harness_suite(cli)
    sweep_id = kill_after_first_row(cli, db, wait_until, "--suite", suite, "--timeout", "60")
    proc = cli.run("sweep", "--db", db, "--resume", sweep_id, "--seq-lens", "64")
    assert proc.returncode == 2
    assert "--seq-lens 64 differs from the stored plan" in proc.stderr
    proc = cli.run("sweep", "--db", db, "--resume", sweep_id, "--suite", "other")
    assert proc.returncode == 2 and "--suite other differs" in proc.stderr
    assert row_count(db) == 1  # nothing ran
    # The same suite, and a deadline for what is left, are fine.
    proc = cli.run("sweep", "--db", db, "--resume", sweep_id, "--suite", suite,
                   "--timeout", "1", "--grace", "0.2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["kind"]: r for r in cli.runs(db, "--sweep", sweep_id)}
    assert rows["noop"]["status"] == "pass" and rows["noop"]["timeout_s"] == 60
    assert rows["hang"]["status"] == "timeout" and rows["hang"]["timeout_s"] == 1


def test_resume_refuses_a_vanished_interpreter(cli, db, tmp_path, wait_until):
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text(f'#!/bin/sh\nexec {VENV_PYTHON} "$@"\n')
    python.chmod(0o755)
    sweep_id = kill_after_first_row(cli, db, wait_until, "--suite", harness_suite(cli),
                                    "--python", python)
    python.unlink()
    proc = cli.run("sweep", "--db", db, "--resume", sweep_id, "--python", python)
    assert proc.returncode == 2
    assert f"no Python interpreter at {python}" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_resume_of_a_sweep_planned_by_an_older_compatlab_is_refused(cli, db, wait_until):
    sweep_id = kill_after_first_row(cli, db, wait_until, "--suite", harness_suite(cli))
    with sqlite3.connect(db) as conn:  # what an older compatlab stored: no "execution"
        for rowid, spec in conn.execute("SELECT rowid, spec FROM planned_tests").fetchall():
            spec = json.loads(spec)
            del spec["execution"]
            conn.execute("UPDATE planned_tests SET spec = ? WHERE rowid = ?",
                         (json.dumps(spec), rowid))
    proc = cli.run("sweep", "--db", db, "--resume", sweep_id)
    assert proc.returncode == 2
    assert "planned by an older compatlab" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_resume_keeps_each_rows_own_timeout(cli, db, wait_until):
    # Without --timeout the stored deadline stays.
    sweep_id = kill_after_first_row(cli, db, wait_until, "--suite", harness_suite(cli),
                                    "--timeout", "2", "--grace", "0.2")
    started = time.monotonic()
    proc = cli.run("sweep", "--db", db, "--resume", sweep_id)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert time.monotonic() - started < 60
    rows = {r["kind"]: r for r in cli.runs(db, "--sweep", sweep_id)}
    assert rows["hang"]["status"] == "timeout" and rows["hang"]["timeout_s"] == 2
