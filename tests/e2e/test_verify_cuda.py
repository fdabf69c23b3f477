"""scripts/verify-cuda and what it relies on: the portable build (build/portable), the
dry run on this machine's CPU, and `compatlab import --from-store` (doc/targets.md,
"Verifying on a GPU machine")."""

import os
import pathlib
import re
import shutil
import sqlite3
import subprocess

import pytest

from .conftest import REPO, Compatlab

SCRIPT = REPO / "scripts" / "verify-cuda"
PORTABLE = REPO / "build" / "portable"
# glibc's own libraries: the only ones the portable binary may take from the machine.
GLIBC = re.compile(r"^(linux-vdso|libc|libm|libdl|libpthread|librt|libresolv|libutil)\.so|ld-linux")


def ldd(path):
    """{library: resolved path or None} of `ldd path` with no LD_LIBRARY_PATH."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    out = subprocess.run(["ldd", str(path)], capture_output=True, text=True, env=env, check=True).stdout
    libs = {}
    for line in out.splitlines():
        match = re.match(r"\s*(\S+)(?: => (\S+| not found))?", line)
        if match:
            where = match.group(2)
            libs[match.group(1)] = None if where in (None, "not found") else where
    return libs


def test_portable_binary_needs_only_glibc_from_the_machine():
    binary = PORTABLE / "compatlab"
    assert os.access(binary, os.X_OK), "no build/portable/compatlab: make build"
    for name, where in ldd(binary).items():
        if GLIBC.search(name):
            continue
        # ldd follows the binary's DT_RPATH into the copied libraries' own needs too
        assert where is not None and pathlib.Path(where).parent == PORTABLE, (name, where)
    total = sum(f.stat().st_size for f in PORTABLE.iterdir() if f.is_file())
    assert total < 32 << 20, f"build/portable is {total >> 20} MiB; the device call carries 64 MiB"


def test_portable_binary_has_no_parquet_or_serve():
    proc = subprocess.run([PORTABLE / "compatlab", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    commands = set(re.findall(r"^\s{2}(\w+)[,\s]", proc.stdout, re.M))
    assert {"sweep", "query", "targets"} <= commands
    assert not commands & {"export", "import", "serve"}, commands


def test_import_from_store_merges_runs_once(cli, noop_store, db):
    source = cli.workdir / "source.db"
    shutil.copy(noop_store, source)
    want = cli.runs(source)
    first = cli.run("import", "--from-store", source, "--db", db)
    assert first.returncode == 0, first.stderr
    assert f"imported {len(want)} runs from 1 stores" in first.stdout
    got = cli.runs(db)
    assert [r["run_id"] for r in got] == [r["run_id"] for r in want]
    assert [r["status"] for r in got] == [r["status"] for r in want]
    again = cli.run("import", "--from-store", source, "--db", db)
    assert again.returncode == 0 and "imported 0 runs from 1 stores" in again.stdout
    assert f"({len(want)} already present" in again.stdout


def test_import_from_store_refuses_a_non_store_and_the_target_itself(cli, noop_store, db):
    bogus = cli.workdir / "bogus.db"
    bogus.write_text("not a database")
    proc = cli.run("import", "--from-store", bogus, "--db", db)
    assert proc.returncode == 2 and "compatlab: error:" in proc.stderr
    assert not db.exists(), "a rejected source must leave no new store"
    target = cli.workdir / "target.db"
    shutil.copy(noop_store, target)
    proc = cli.run("import", "--from-store", target, "--db", target)
    assert proc.returncode == 2 and "target store itself" in proc.stderr


# make test-slow: about 40-100 s on the idle 2-core machine (make test kept under 25 min).
@pytest.mark.slow
def test_dry_run_writes_a_store_that_imports_here(compatlab_bin, tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([SCRIPT, "--dry-run", "--out", out], capture_output=True, text=True,
                          env=env, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    store = out / "verify-cuda.db"
    assert store.is_file() and not (out / "verify-cuda.db-wal").exists()
    assert {p.name for p in out.iterdir()} == {"verify-cuda.db", "verify-cuda.log", "env.txt",
                                                "summary.txt"}
    assert "torch" in (out / "env.txt").read_text()
    with sqlite3.connect(store) as con:
        rows = con.execute("SELECT kind, mode, target, status FROM runs ORDER BY kind").fetchall()
    assert rows == [("forward", "eager", "cpu", "pass"), ("generate", "eager", "cpu", "pass"),
                    ("train", "eager", "cpu", "pass")], rows
    store.chmod(0o444)  # as it comes back from the device machine
    here = tmp_path / "here.db"
    proc = subprocess.run([SCRIPT, "--import", store, "--db", here, "--target", "cpu",
                           "--bin", compatlab_bin], capture_output=True, text=True, env=env,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "imported 3 runs from 1 stores" in proc.stdout
    cli = Compatlab(compatlab_bin, tmp_path)
    assert sorted(r["kind"] for r in cli.runs(here)) == ["forward", "generate", "train"]
