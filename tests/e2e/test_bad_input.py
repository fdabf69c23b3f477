"""Bad input: exit status 2, one error line, and nothing written to any store."""

import os
import shutil

import pytest

# Each command line is run against each kind of --db below.
BAD_COMMANDS = {
    "unknown-suite": ["sweep", "--suite", "no-such-suite"],
    "unknown-model-type": ["sweep", "--suite", "ci", "--models", "llama,notamodel"],
    "zero-jobs": ["sweep", "--suite", "noop", "--jobs", "0"],
    "negative-timeout": ["sweep", "--suite", "noop", "--timeout", "-1"],
    "bad-mem-limit": ["sweep", "--suite", "noop", "--mem-limit", "lots"],
    "unknown-mem-limit-method": ["sweep", "--suite", "noop", "--mem-limit-method", "lots"],
    "unknown-flag": ["sweep", "--suite", "noop", "--no-such-flag"],
    "malformed-suite-json": ["sweep", "--suite", "{suites}/bad-json.json"],
    "suite-with-unknown-key": ["sweep", "--suite", "{suites}/unknown-key.json"],
    "resume-nothing-unfinished": ["sweep", "--resume"],
    "resume-with-plan-flags": ["sweep", "--resume", "--targets", "cpu"],
    "allow-stored-code-without-resume": ["sweep", "--suite", "noop", "--allow-stored-code"],
    "unknown-target": ["sweep", "--suite", "noop", "--targets", "cpu,tpu9"],
    "malformed-target-file": ["sweep", "--suite", "noop", "--targets", "{suites}/bad-json.json"],
    "unknown-mode": ["sweep", "--suite", "noop", "--modes", "eager,warp"],
    "unknown-dtype": ["sweep", "--suite", "noop", "--dtypes", "int8"],
    "zero-seq-len": ["sweep", "--suite", "noop", "--seq-lens", "128,0"],
    "non-numeric-batch-size": ["sweep", "--suite", "noop", "--batch-sizes", "four"],
    "zero-new-tokens": ["sweep", "--suite", "noop", "--new-tokens", "0"],
    "load-rate-not-a-multiple": ["sweep", "--suite", "noop", "--kinds", "load", "--rates", "0.9,1.5x"],
    "load-slo-one-objective": ["sweep", "--suite", "noop", "--kinds", "load", "--slo", "ttft=0.5"],
    "errors-of-passes": ["errors", "--status", "pass"],
}
# Commands that read a store: bad input with every --db that is no readable store.
READ_COMMANDS = {
    "runs": ["runs"],
    "errors": ["errors"],
    "repro-unknown-run": ["repro", "no-such-run"],
}
SUITE_FILES = {
    "bad-json.json": '{"name": "bad", "tests": [{"kind": "noop"}',
    "unknown-key.json": '{"name": "bad", "tests": [{"kind": "noop", "bogus": 1}]}',
}
# What --db names: a path that does not exist, a finished store, or a file that is no store.
DB_KINDS = ["missing", "store", "random-bytes", "text"]
CASES = [(c, d) for c in BAD_COMMANDS for d in DB_KINDS] + [
    (c, d) for c in READ_COMMANDS for d in DB_KINDS if d != "store"]


def make_db(kind, path, noop_store):
    if kind == "store":
        shutil.copyfile(noop_store, path)
    elif kind == "random-bytes":
        path.write_bytes(os.urandom(4096))
    elif kind == "text":
        path.write_text("a text file, not a store\n")


@pytest.mark.parametrize("command,db_kind", CASES, ids=[f"{c}-{d}" for c, d in CASES])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(cli, tmp_path, noop_store, command,
                                                             db_kind):
    suites = tmp_path / "suites"
    suites.mkdir()
    for name, text in SUITE_FILES.items():
        (suites / name).write_text(text)
    db_dir = tmp_path / "db"
    db_dir.mkdir()
    db = db_dir / "store.db"
    make_db(db_kind, db, noop_store)
    before = db.read_bytes() if db.exists() else None
    args = [a.format(suites=suites) for a in BAD_COMMANDS.get(command) or READ_COMMANDS[command]]

    proc = cli.run(*args, "--db", db)

    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("compatlab: error:"), proc.stderr
    assert proc.stdout == ""
    if before is None:
        assert os.listdir(db_dir) == []
    else:
        assert db.read_bytes() == before
        assert os.listdir(db_dir) == ["store.db"]
