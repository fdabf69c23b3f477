"""Hostile data (doc/limits.md): nothing imported, given or stored exhausts, executes or corrupts.

One test per case of the hostile-data review: small hostile fixtures made here (a
Parquet bomb, planted runs whose settings name programs, a store with one damaged
index entry, symlink loops, control characters, ...), each refused with exit 2 and
one line, or made harmless. No model runs: planted rows and fast failing flags
show each behaviour.
"""

import hashlib
import http.client
import importlib.util
import json
import pathlib
import re
import resource
import runpy
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .test_serve import get

REPO = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_store", REPO / "tests" / "web" / "make_store.py")
make_store = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_store)
MiB = 1 << 20
sys.path[:0] = [str(REPO / "probe" / "tests")]
import hubfake  # noqa: E402


def sha256(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def noop_table(compatlab_bin, noop_store, tmp_path_factory):
    """The noop store's one run, exported: a pyarrow table with the export's schema."""
    out = tmp_path_factory.mktemp("hostile-export")
    proc = subprocess.run([compatlab_bin, "export", "--db", noop_store, "--parquet", out / "x"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    (path,) = sorted((out / "x").rglob("*.parquet"))
    return pq.read_table(path)


def planted(table, sweep, **changes):
    """The table's first row as run `sweep`-1 of sweep `sweep`, edited, its test_id recomputed."""
    row = dict(table.to_pylist()[0], sweep_id=sweep, run_id=f"{sweep}-1", **changes)
    row["test_id"] = make_store.test_id(row)
    return row


def write(table, rows, path, **options):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path, **options)
    return path


def model_row(table, sweep, **changes):
    """A planted compiled model run (the generator only reads it; no model is built)."""
    fields = {"model_id": "hf:gpt2", "model_type": "gpt2", "model_class": "GPT2LMHeadModel",
              "kind": "forward", "mode": "compile", "backend": "inductor", "status": "pass"}
    return planted(table, sweep, **{**fields, **changes})


# --- 1. the Parquet bomb ----------------------------------------------------------------------

def test_a_parquet_bomb_is_refused_while_reading_with_bounded_memory(cli, noop_table, tmp_path):
    tail = "x" * MiB
    rows = [dict(planted(noop_table, f"bomb-{i}"), stdout_tail=tail) for i in range(350)]
    bomb = write(noop_table, rows, tmp_path / "bomb" / "bomb.parquet", compression="zstd")
    assert bomb.stat().st_size < 200_000  # a small file: 350 MiB of text once decoded
    db = tmp_path / "bomb.db"
    # /usr/bin/time measures the import alone (a child of this process would count its memory).
    proc = subprocess.run(["/usr/bin/time", "-f", "peak_rss_kib=%M", cli.binary, "import", "--db", db,
                           bomb], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "row 0" in proc.stderr and "field stdout_tail holds 1048576 bytes" in proc.stderr, proc.stderr
    peak_kib = int(re.search(r"peak_rss_kib=(\d+)", proc.stderr).group(1))
    assert peak_kib * 1024 < 300 * MiB, f"peak RSS {peak_kib} KiB"
    assert not db.exists()


@pytest.fixture
def served_big(cli, noop_store):
    """A server on a planted store whose failed run holds a 2 MiB error message and signature
    (a store written before the import limits): (connection factory, run_id)."""
    store = cli.workdir / "big.db"
    shutil.copy(noop_store, store)
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE runs SET status = 'fail_to_run', error_message = ?, error_signature = ?",
                     ("E" * (2 * MiB), "S" * (2 * MiB)))
        (run_id,) = conn.execute("SELECT run_id FROM runs").fetchone()
    conn.close()
    proc = cli.popen("serve", "--db", store, "--port", "0")
    match = re.search(r"on http://127\.0\.0\.1:(\d+)/", proc.stderr.readline())
    assert match
    port = int(match.group(1))
    yield (lambda: http.client.HTTPConnection("127.0.0.1", port, timeout=30)), run_id
    proc.terminate()
    assert proc.wait(timeout=30) == 0
    cli.close(proc)


def api(connect, path):
    status, _, body = get(connect, path)
    assert status == 200, body[:300]
    return body


def test_api_lists_cut_large_text_and_a_run_has_it_capped(served_big):
    connect, run_id = served_big
    for path in ("/api/model?model_id=none", "/api/search", "/api/errors"):
        body = api(connect, path)
        assert len(body) < 16 * 1024, (path, len(body))
        assert b"[... " in body and b"more bytes]" in body
    run = json.loads(api(connect, f"/api/run?run_id={run_id}"))["run"]
    assert len(run["error_message"]) < 300 * 1024
    assert run["error_message"].endswith("more bytes]")


# --- 2 and 7. reproduction scripts of imported runs ---------------------------------------------

@pytest.fixture(scope="module")
def imported(compatlab_bin, noop_table, tmp_path_factory):
    """A store that imported planted runs: one whose settings name programs and modules, one
    whose text holds NUL and control characters. (db, {name: run_id})."""
    tmp = tmp_path_factory.mktemp("hostile-import")
    hostile = model_row(noop_table, "hostile", backend="evil_pkg.backends:steal",
                        model_path=str(tmp / "evil-model"),
                        compile_options=json.dumps({"dynamic": False, "mode": "max-autotune",
                                                    "options": {"cpp.cxx": ["/some/program"]}}))
    control = model_row(noop_table, "control", status="fail_to_run", error_type="RuntimeError",
                        error_message="bad\x00byte \x1b[31mred\x07 \u2028next\rline",
                        host="host\x00\x1b]0;title\x07", compile_options='{"dynamic":false}')
    write(noop_table, [hostile, control], tmp / "in" / "planted.parquet")
    db = tmp / "imported.db"
    proc = subprocess.run([compatlab_bin, "import", "--db", db, tmp / "in"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return db, {"hostile": hostile["run_id"], "control": control["run_id"]}


def script_of(cli, db, run_id):
    proc = cli.run("repro", run_id, "--db", db)
    assert proc.returncode == 0, proc.stderr
    path = cli.workdir / f"{run_id}.py"
    path.write_text(proc.stdout)
    return proc, path


def test_an_imported_runs_script_never_runs_what_its_data_names(cli, imported):
    db, ids = imported
    proc, path = script_of(cli, db, ids["hostile"])
    assert "untrusted" in proc.stderr or "left out" in proc.stderr, proc.stderr
    names = runpy.run_path(str(path), run_name="not_main")
    request = names["REQUEST"]
    assert request["compile_options"] == {"dynamic": False, "mode": "max-autotune", "options": {}}
    assert request["backend"] == "" and request["model_path"] == ""
    assert names["LEFT_OUT"] == 3
    text = path.read_text()
    assert "# WARNING: this run came through `compatlab import`" in text
    assert "# REQUEST[\"compile_options\"][\"options\"]['cpp.cxx'] = ['/some/program']" in text
    assert "# REQUEST[\"backend\"] = 'evil_pkg.backends:steal'" in text
    assert "/some/program" not in repr(request)


def test_a_script_escapes_nul_and_control_characters_of_stored_text(cli, imported):
    db, ids = imported
    _, path = script_of(cli, db, ids["control"])
    data = path.read_bytes()
    for byte in (b"\x00", b"\x1b", b"\x07", b"\r", "\u2028".encode()):
        assert byte not in data, byte
    compile(data, str(path), "exec")  # valid Python
    names = runpy.run_path(str(path), run_name="not_main")
    assert names["RECORDED"]["error_message"].startswith("bad\x00byte \x1b[31mred")  # kept, as data


# --- 3. damaged stores ---------------------------------------------------------------------

def damage_unique_index(path):
    """Changes one character of a test_id inside the runs' UNIQUE (sweep_id, test_id) index:
    quick_check still passes, integrity_check does not."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
        roots = [r for (r,) in conn.execute(
            "SELECT rootpage FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'runs' AND "
            "name LIKE 'sqlite_autoindex_runs_%'")]
        (test_id,) = conn.execute("SELECT test_id FROM runs").fetchone()
    conn.close()
    data = bytearray(path.read_bytes())
    pages = [((root - 1) * page_size, root * page_size) for root in roots]
    at = next(data.find(test_id.encode(), *page) for page in pages
              if data.find(test_id.encode(), *page) >= 0)
    data[at] = ord("0") if data[at] != ord("0") else ord("1")
    path.write_bytes(bytes(data))
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        assert conn.execute("PRAGMA quick_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA integrity_check").fetchone() != ("ok",)
    conn.close()


def test_a_damaged_store_is_refused_by_every_writer_and_left_byte_identical(cli, noop_store,
                                                                            noop_table, tmp_path):
    store = tmp_path / "damaged.db"
    shutil.copy(noop_store, store)
    damage_unique_index(store)
    before = sha256(store)
    parquet = write(noop_table, [planted(noop_table, "other")], tmp_path / "in" / "one.parquet")
    for args in (("import", "--db", store, parquet), ("sweep", "--db", store, "--resume"),
                 ("sweep", "--db", store, "--suite", cli.write_suite("n", tests=[{"kind": "noop"}]))):
        proc = cli.run(*args)
        assert proc.returncode != 0, (args, proc.stderr)
        assert "damaged store (SQLite integrity_check" in proc.stderr, (args, proc.stderr)
        assert sha256(store) == before, args
    assert not pathlib.Path(f"{store}-wal").exists()


# --- 4. stores that keep nothing ------------------------------------------------------------

@pytest.mark.parametrize("db", ["", ":memory:", "file:kept?mode=memory"])
def test_in_memory_and_empty_stores_are_bad_input(cli, db, noop_table, tmp_path):
    suite = cli.write_suite("n", tests=[{"kind": "noop"}])
    parquet = write(noop_table, [planted(noop_table, "other")], tmp_path / "in" / "one.parquet")
    for args in (("sweep", "--suite", suite, "--db", db), ("import", "--db", db, parquet)):
        proc = cli.run(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith("compatlab: error: --db"), proc.stderr
        assert "finished" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "n.json"]


# --- 5. durations -------------------------------------------------------------------------

@pytest.mark.parametrize("flag", [("--timeout", "inf"), ("--timeout", "nan"), ("--grace", "inf"),
                                  ("--grace", "nan"), ("--grace", "1e9"), ("--timeout", "1e12")])
def test_durations_must_be_finite_and_bounded(cli, db, flag):
    proc = cli.run("sweep", "--suite", cli.write_suite("n", tests=[{"kind": "noop"}]), "--db", db,
                   *flag)
    assert proc.returncode == 2, proc.stderr
    assert f"{flag[0]} must be a finite number of seconds" in proc.stderr
    assert not db.exists()


def test_a_suite_duration_must_be_bounded(cli, db):
    proc = cli.run("sweep", "--suite", cli.write_suite("n", timeout_s=1e300, tests=[{"kind": "noop"}]),
                   "--db", db)
    assert proc.returncode == 2, proc.stderr
    assert "'timeout_s' must be a positive number of seconds, at most a week" in proc.stderr


# --- 6. symlink loops in a model path ---------------------------------------------------------

def test_a_model_path_with_symlink_loops_is_walked_not_aborted(cli, db, tmp_path):
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    (model / "a").symlink_to(".")
    (model / "sub" / "up").symlink_to("..")
    (model / "loop1").symlink_to("loop2")
    (model / "loop2").symlink_to("loop1")
    proc = cli.run("sweep", "--model-path", model, "--db", db, "--kinds", "forward")
    assert proc.returncode == 2, proc.stderr  # not 134 (an uncaught filesystem error)
    assert proc.stderr.startswith("compatlab: error: --model-path"), proc.stderr
    assert not db.exists()


# --- 8. long versions in export file names -----------------------------------------------------

def test_a_long_version_is_exported_under_a_safe_name(cli, noop_table, tmp_path):
    long_version = "2.13.0+" + "x" * 300
    rows = [planted(noop_table, "long", torch_version=long_version),
            planted(noop_table, "short", torch_version="2.13.0+cpu")]
    db = tmp_path / "long.db"
    proc = cli.run("import", "--db", db, write(noop_table, rows, tmp_path / "in" / "two.parquet"))
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    proc = cli.run("export", "--db", db, "--parquet", out)
    assert proc.returncode == 0, proc.stderr
    files = sorted(p for p in out.rglob("*") if p.is_file())
    assert len(files) == 2 and all(len(part) <= 255 for f in files for part in f.parts)
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # no staging left
    back = tmp_path / "back.db"
    proc = cli.run("import", "--db", back, out)
    assert proc.returncode == 0, proc.stderr
    versions = {r["torch_version"] for r in cli.runs(back)}
    assert versions == {long_version, "2.13.0+cpu"}


# --- 9. one run_id in two files ---------------------------------------------------------------

def test_the_same_run_id_in_two_files_of_one_import_is_refused(cli, noop_table, tmp_path):
    row = planted(noop_table, "twice")
    write(noop_table, [row], tmp_path / "in" / "a.parquet")
    write(noop_table, [dict(row, status_detail="another content")], tmp_path / "in" / "b.parquet")
    db = tmp_path / "twice.db"
    proc = cli.run("import", "--db", db, tmp_path / "in")
    assert proc.returncode == 2, proc.stderr
    assert "b.parquet: run twice-1 is also in" in proc.stderr and "a.parquet" in proc.stderr
    assert not db.exists()


# --- 9b. hostile curves (typed list columns, doc/limits.md) -----------------------------------

@pytest.mark.parametrize("case", ["over_the_bound", "not_finite", "wrong_element_type"])
def test_a_hostile_curve_is_refused_with_one_line_and_the_store_untouched(cli, noop_store, noop_table,
                                                                          tmp_path, case):
    store = tmp_path / "store.db"
    shutil.copy(noop_store, store)
    before = sha256(store)
    schema = noop_table.schema
    curve = {"over_the_bound": [0.5] * 4097, "not_finite": [1.5, float("nan")],
             "wrong_element_type": [1, 2]}[case]
    if case == "wrong_element_type":
        index = schema.get_field_index("train_loss")
        schema = schema.set(index, pa.field("train_loss", pa.list_(pa.int64())))
    path = tmp_path / "in" / f"{case}.parquet"
    path.parent.mkdir()
    pq.write_table(pa.Table.from_pylist([planted(noop_table, case, train_loss=curve)], schema=schema), path)
    proc = cli.run("import", "--db", store, path)
    assert proc.returncode == 2, proc.stderr
    # one line naming the file and why, then import's summary line
    rejected, summary = proc.stderr.strip().splitlines()
    assert summary == "compatlab: error: 1 of 1 files rejected; nothing imported", proc.stderr
    assert f"{case}.parquet: " in rejected and {"over_the_bound": "row 0: field train_loss: 4097 elements, over the limit of 4096",
            "not_finite": "row 0: field train_loss: element 1 is not finite (nan)",
            "wrong_element_type": "column train_loss has type list<element: int64>, expected list<element: double>",
            }[case] in rejected, proc.stderr
    assert sha256(store) == before


# --- 10. a failed import into a new store ------------------------------------------------------

def test_a_failed_import_into_a_new_store_leaves_nothing(cli, noop_table, tmp_path):
    parquet = write(noop_table, [planted(noop_table, "full")], tmp_path / "in" / "one.parquet")
    db = tmp_path / "new" / "store.db"
    db.parent.mkdir()

    def full_disk():  # files stop growing at 8 KiB, as on a full disk (EFBIG, not SIGXFSZ)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))

    proc = subprocess.run([cli.binary, "import", "--db", db, parquet], capture_output=True, text=True,
                          timeout=60, preexec_fn=full_disk)
    assert proc.returncode != 0, proc.stderr
    assert "nothing imported" in proc.stderr or "store.db" in proc.stderr, proc.stderr
    assert list(db.parent.iterdir()) == []


# --- 11. control characters on the terminal ----------------------------------------------------

def test_csv_and_error_messages_escape_control_characters(cli, imported, db):
    store, _ = imported
    proc = cli.run("runs", "--db", store, "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    for char in ("\x1b", "\x07", "\x00"):
        assert char not in proc.stdout
    assert "bad\\x00byte \\x1b[31mred\\x07" in proc.stdout
    suite = cli.workdir / "esc.json"
    suite.write_text(json.dumps({"name": "esc", "tests": [{"kind": "noop"}], "\x1b[2J\x07": 1}))
    proc = cli.run("sweep", "--suite", suite, "--db", db)
    assert proc.returncode == 2, proc.stderr
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
    assert "'\\x1b[2J\\x07' is not a known key" in proc.stderr


# --- 12. profiles are code ---------------------------------------------------------------------

def test_a_suite_names_a_profile_by_path_only_when_allowed(cli, db):
    profile = json.loads((REPO / "targets" / "cpu.json").read_text())
    profile["name"] = "mine"
    (cli.workdir / "mine.json").write_text(json.dumps(profile))
    suite = cli.write_suite("p", targets=["./mine.json"], tests=[{"kind": "noop"}])
    proc = cli.run("sweep", "--suite", suite, "--db", db)
    assert proc.returncode == 2, proc.stderr
    assert "--allow-profile-paths" in proc.stderr and not db.exists()
    cli.sweep("--suite", suite, "--db", db, "--allow-profile-paths")


# --- 13. unknown backends and duplicate keys ---------------------------------------------------

def test_an_unknown_backend_is_bad_input(cli, db):
    proc = cli.run("sweep", "--suite", cli.write_suite("n", tests=[{"kind": "noop"}]), "--db", db,
                   "--backend", "bogus")
    assert proc.returncode == 2, proc.stderr
    assert "--backend bogus: not a compile backend of torch" in proc.stderr
    assert "inductor" in proc.stderr and not db.exists()


def test_a_key_twice_in_a_suite_or_profile_file_is_bad_input(cli, db):
    suite = cli.workdir / "dup.json"
    suite.write_text('{"name": "dup", "tests": [{"kind": "noop", "kind": "raise"}]}')
    proc = cli.run("sweep", "--suite", suite, "--db", db)
    assert proc.returncode == 2, proc.stderr
    assert "key 'kind' appears twice in one object" in proc.stderr
    profile = (REPO / "targets" / "cpu.json").read_text().replace('"verified": true',
                                                                    '"verified": true, "verified": false')
    (cli.workdir / "dupcpu.json").write_text(profile)
    proc = cli.run("sweep", "--suite", cli.write_suite("n", tests=[{"kind": "noop"}]), "--db", db,
                   "--targets", cli.workdir / "dupcpu.json")
    assert proc.returncode == 2, proc.stderr
    assert "key 'verified' appears twice in one object" in proc.stderr and not db.exists()


# --- issue 38, cases 3, 4, 6 and 8: stores handed around, imports that swell or join --------------

def hostile_store(noop_store, path, *statements):
    """A copy of the noop store edited with Python's sqlite3 as a hostile sender would (the
    schema edited in place), still passing PRAGMA integrity_check."""
    shutil.copy(noop_store, path)
    conn = sqlite3.connect(path)
    conn.executescript(";".join(statements))
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    assert not pathlib.Path(f"{path}-wal").exists()
    return path


ENDLESS_RUNS = ("ALTER TABLE runs RENAME TO real_runs",
                "CREATE VIEW runs AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
                "SELECT real_runs.* FROM real_runs, n")


def test_a_store_whose_runs_never_end_is_refused_by_every_reader_at_once(cli, noop_store, tmp_path):
    store = hostile_store(noop_store, tmp_path / "endless.db", *ENDLESS_RUNS)
    before = sha256(store)
    for args in (("import", "--db", tmp_path / "into.db", "--from-store", store),
                 ("query", "--db", store), ("export", "--db", store, "--parquet", tmp_path / "out"),
                 ("matrix", "--db", store), ("serve", "--db", store, "--port", "0")):
        proc = cli.run(*args, timeout=20)  # before: 100 % CPU until killed
        assert proc.returncode == 2, (args, proc.stderr)
        assert "runs is a view where a store has a table" in proc.stderr, (args, proc.stderr)
        assert sha256(store) == before, args
    assert sorted(p.name for p in tmp_path.iterdir()) == ["endless.db"]


def test_import_from_a_store_never_writes_it_or_its_neighbours(cli, noop_store, tmp_path):
    clean = tmp_path / "clean.db"
    shutil.copy(noop_store, clean)
    before = sha256(clean)
    proc = cli.run("import", "--db", tmp_path / "a.db", "--from-store", clean, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert sha256(clean) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "clean.db"]  # no -wal, -shm
    # A store copied while a writer held it open: its last commit is in its -wal only.
    live = tmp_path / "live"
    live.mkdir()
    shutil.copy(noop_store, live / "src.db")
    writer = sqlite3.connect(live / "src.db")
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("UPDATE sweeps SET host = 'late'")
    writer.commit()
    copied = tmp_path / "copied"
    shutil.copytree(live, copied)
    writer.close()
    hashes = {p.name: sha256(p) for p in copied.iterdir()}
    assert set(hashes) == {"src.db", "src.db-wal", "src.db-shm"}
    proc = cli.run("import", "--db", tmp_path / "b.db", "--from-store", copied / "src.db", timeout=30)
    assert proc.returncode == 2, proc.stderr  # before: exit 0, the -wal folded in and deleted
    assert "write-ahead log" in proc.stderr and "src.db-wal" in proc.stderr, proc.stderr
    assert {p.name: sha256(p) for p in copied.iterdir()} == hashes
    assert not (tmp_path / "b.db").exists()


def test_export_onto_a_file_names_the_users_path(cli, noop_store, tmp_path):
    target = tmp_path / "taken.parquet"
    target.write_text("a file")
    for out in (target, target / "sub"):
        proc = cli.run("export", "--db", noop_store, "--parquet", out, timeout=30)
        assert proc.returncode == 2, proc.stderr  # before: exit 1 naming a staging directory
        assert f"--parquet {out}: " in proc.stderr and "not a directory" in proc.stderr, proc.stderr
        assert ".compatlab-export" not in proc.stderr and ".tmp-" not in proc.stderr, proc.stderr
    assert target.read_text() == "a file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.parquet"]


def test_imported_runs_never_join_a_sweep_planned_here(cli, noop_store, noop_table, tmp_path):
    # The noop store as a killed sweep leaves it: its one planned test pending.
    store = hostile_store(noop_store, tmp_path / "local.db", "DELETE FROM runs",
                          "UPDATE sweeps SET finished_at = NULL")
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    ((sweep_id, test_id),) = conn.execute("SELECT sweep_id, test_id FROM planned_tests").fetchall()
    conn.close()
    before = sha256(store)
    pending = planted(noop_table, sweep_id)  # the pending test's result, made elsewhere
    assert pending["test_id"] == test_id
    other = planted(noop_table, sweep_id, model_id="noop-other")  # a test its plan lacks
    for row in (pending, other):
        parquet = write(noop_table, [row], tmp_path / "in" / "one.parquet")
        proc = cli.run("import", "--db", store, parquet, timeout=30)
        assert proc.returncode == 2, proc.stderr  # before: exit 0, the sweep's plan filled
        assert f"sweep {sweep_id} was planned in this store" in proc.stderr, proc.stderr
        assert sha256(store) == before


def many_runs(table, n, path):
    """A Parquet file of `n` minimal runs: the noop run, each in a sweep of its own."""
    rows = table.take([0] * n)
    for name, prefix in (("run_id", "many-run-"), ("sweep_id", "many-sweep-")):
        ids = pa.array([f"{prefix}{i}" for i in range(n)], type=table.schema.field(name).type)
        rows = rows.set_column(rows.schema.get_field_index(name), name, ids)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows, path, compression="zstd")
    return path


def import_peak_kib(cli, *args, limit_as=None):
    """(CompletedProcess, peak RSS in KiB) of `compatlab import ARGS` under /usr/bin/time."""
    def cap():
        if limit_as:
            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
    proc = subprocess.run(["/usr/bin/time", "-f", "peak_rss_kib=%M", cli.binary, "import", *map(str, args)],
                          capture_output=True, text=True, timeout=120, preexec_fn=cap)
    return proc, int(re.search(r"peak_rss_kib=(\d+)", proc.stderr).group(1))


def test_import_memory_does_not_grow_with_the_number_of_runs(cli, noop_table, tmp_path):
    small = many_runs(noop_table, 500, tmp_path / "small" / "runs.parquet")
    large = many_runs(noop_table, 5_000, tmp_path / "large" / "runs.parquet")
    peaks = {}
    for name, path in (("small", small), ("large", large)):
        proc, peaks[name] = import_peak_kib(cli, "--db", tmp_path / f"{name}.db", path)
        assert proc.returncode == 0, proc.stderr
    # before: 11.4 KB a run (the large file about 50 MB over the small one); after: 60 bytes
    assert peaks["large"] - peaks["small"] < 20 * 1024, peaks

# --- issue 38, cases 1 and 2: a handed store's plan is data; its ids name no path -------------

def handed_store(noop_store, tmp_path, sweep_id=None, spec_update=None, **execution):
    """A copy of the noop store whose sweep is unfinished again (its run deleted), its planned
    test's stored execution settings changed by `execution` (its spec by `spec_update`), its
    sweep renamed `sweep_id`:
    a store edited with sqlite3 only, as a sender would."""
    store = tmp_path / "handed.db"
    shutil.copy(noop_store, store)
    with sqlite3.connect(store) as conn:
        conn.execute("DELETE FROM runs")
        conn.execute("UPDATE sweeps SET finished_at = NULL")
        rowid, spec = conn.execute("SELECT rowid, spec FROM planned_tests").fetchone()
        spec = json.loads(spec)
        spec["execution"].update(execution)
        spec.update(spec_update or {})
        conn.execute("UPDATE planned_tests SET spec = ? WHERE rowid = ?", (json.dumps(spec), rowid))
        if sweep_id is not None:
            for table in ("sweeps", "planned_tests"):
                conn.execute(f"UPDATE {table} SET sweep_id = ?", (sweep_id,))
    conn.close()
    return store


def marking_program(tmp_path, venv_python):
    """An interpreter that leaves a marker file, then runs the real one: (path, marker)."""
    marker = tmp_path / "it-ran"
    program = tmp_path / "evil" / "python"
    program.parent.mkdir()
    program.write_text(f'#!/bin/sh\ntouch {marker}\nexec {venv_python} "$@"\n')
    program.chmod(0o755)
    return program, marker


@pytest.mark.parametrize("field", ["python", "probe_dir", "target_profile_json"])
def test_resume_refuses_a_stored_plans_code_that_is_not_this_installations(cli, noop_store, tmp_path,
                                                                            venv_python, field):
    program, marker = marking_program(tmp_path, venv_python)
    package = tmp_path / "evil" / "compatlab_probe"
    package.mkdir()
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    profile = dict(json.loads((REPO / "targets" / "cpu.json").read_text()),
                   pythonpath=[str(tmp_path / "evil")], **{"import": ["compatlab_probe"]})
    value = {"python": str(program), "probe_dir": str(tmp_path / "evil"),
             "target_profile_json": json.dumps(profile, sort_keys=True, separators=(",", ":"))}[field]
    store = handed_store(noop_store, tmp_path, **{field: value})
    before = sha256(store)
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
        (spec,) = conn.execute("SELECT spec FROM planned_tests").fetchone()
    conn.close()
    own_python = ["--python", json.loads(spec)["execution"]["python"]]  # stops no probe directory
    for python in ([], own_python) if field == "probe_dir" else ([],):
        proc = cli.run("sweep", "--db", store, "--resume", *python)
        assert proc.returncode == 2, proc.stderr
        line, = proc.stderr.strip().splitlines()
        assert "planned test " in line and "--allow-stored-code" in line, line
        assert {"python": "its stored interpreter '", "probe_dir": "its stored probe directory '",
                "target_profile_json": "its stored target profile '"}[field] in line, line
        assert not marker.exists() and sha256(store) == before


def test_resume_runs_a_stored_interpreter_only_with_allow_stored_code(cli, noop_store, tmp_path,
                                                                     venv_python):
    program, marker = marking_program(tmp_path, venv_python)
    store = handed_store(noop_store, tmp_path, python=str(program))
    proc = cli.run("sweep", "--db", store, "--resume", "--allow-stored-code")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert marker.exists() and [r["status"] for r in cli.runs(store)] == ["pass"]


@pytest.mark.parametrize("field,value,flag", [("timeout_s", 1e300, "--timeout"),
                                              ("grace_s", 1e300, "--grace"),
                                              ("mem_limit_bytes", 0, "--mem-limit")])
def test_resume_refuses_a_stored_limit_out_of_its_flags_range(cli, noop_store, tmp_path, field,
                                                              value, flag):
    store = (handed_store(noop_store, tmp_path, spec_update={field: value}) if field == "timeout_s"
             else handed_store(noop_store, tmp_path, **{field: value}))
    before = sha256(store)
    proc = cli.run("sweep", "--db", store, "--resume")
    assert proc.returncode == 2, proc.stderr
    line, = proc.stderr.strip().splitlines()
    assert f"its stored {field} is out of range" in line and f"pass {flag}" in line, line
    assert sha256(store) == before and cli.runs(store) == []
    replaced = {"timeout_s": "30", "grace_s": "1", "mem_limit_bytes": "1G"}[field]
    proc = cli.run("sweep", "--db", store, "--resume", flag, replaced)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_a_stored_sweep_id_that_climbs_out_of_the_temporary_folder_is_refused(cli, noop_store,
                                                                              tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("mine")
    # The temporary folder holds what an earlier sweep "x" left: the planted id's paths resolve.
    temp = tmp_path / "tmp"
    for name in ("compatlab-x", "compatlab-cache-x", "compatlab-seed-x"):
        (temp / name).mkdir(parents=True)
    cli.env["TMPDIR"] = str(temp)
    store = handed_store(noop_store, tmp_path, sweep_id="x/../../victim")
    before = sha256(store)
    proc = cli.run("sweep", "--db", store, "--resume")
    assert proc.returncode == 2, proc.stderr
    assert "sweep id 'x/../../victim' is not an id compatlab writes" in proc.stderr, proc.stderr
    assert (victim / "keep").read_text() == "mine" and sha256(store) == before
    proc = cli.run("sweep", "--db", store, "--resume", "x/../../victim")
    assert proc.returncode == 2 and (victim / "keep").exists(), proc.stderr


# --- issue 38, case 5: a broken Hub config fails its model only -------------------------------

def test_a_broken_or_oversize_hub_config_is_that_models_fail_to_load(cli, db, tmp_path):
    cache = tmp_path / "cache"
    configs = {"bad/not-utf8": b'{"model_type": "gpt2", "name": "\xff\xfe"}',
               "bad/deep": b'{"model_type": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
               "bad/huge": b'{"model_type": "gpt2", "x": "' + b"x" * (5 << 20) + b'"}'}
    for repo, config in configs.items():
        hubfake.write_cache(str(cache), repo, {"config.json": config})
    cli.env["HF_HUB_CACHE"] = str(cache)
    models = ",".join(f"hub:{repo}" for repo in configs)
    proc = cli.run("sweep", "--db", db, "--models", models, "--modes", "eager", "--kinds", "forward")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["hub_repo_id"] or r["model_id"]: r for r in cli.runs(db)}
    reasons = {"bad/not-utf8": "config.json is not UTF-8", "bad/deep": "config.json is nested too deeply",
               "bad/huge": "over the limit of 4194304 (doc/limits.md)"}
    for repo, reason in reasons.items():
        row = next(r for key, r in rows.items() if repo in key)
        assert row["status"] == "fail_to_load" and reason in row["status_detail"], row


# --- issue 38, case 7: /api/repro is bounded ---------------------------------------------------

def generators(cli):
    """Live reproduction-script generators started by this test's commands."""
    found = 0
    for pid in cli.leftovers():
        try:
            found += b"compatlab_probe.repro" in pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            pass
    return found


def test_a_crowd_of_repro_clients_runs_at_most_two_generators_and_never_stalls_health(cli, imported):
    db, ids = imported
    proc = cli.popen("serve", "--db", db, "--port", "0")
    try:
        port = int(re.search(r"on http://127\.0\.0\.1:(\d+)/", proc.stderr.readline()).group(1))

        def connect():
            return http.client.HTTPConnection("127.0.0.1", port, timeout=60)

        answers, most, done = [], [0], threading.Event()

        def client(run_id):
            conn = connect()
            conn.request("GET", f"/api/repro?run_id={run_id}")
            res = conn.getresponse()
            answers.append((res.status, res.getheader("Retry-After"), res.read()))
            conn.close()

        def watch():
            while not done.is_set():
                most[0] = max(most[0], generators(cli))
                time.sleep(0.01)

        watcher = threading.Thread(target=watch)
        watcher.start()
        crowd = [threading.Thread(target=client, args=(ids["hostile" if i % 2 else "control"],))
                 for i in range(16)]
        for t in crowd:
            t.start()
        health = []
        for _ in range(10):
            started = time.monotonic()
            assert get(connect, "/api/health")[0] == 200
            health.append(time.monotonic() - started)
        for t in crowd:
            t.join(timeout=120)
        done.set()
        watcher.join()
        assert most[0] <= 2, f"{most[0]} generators at once"
        assert {status for status, _, _ in answers} <= {200, 503} and len(answers) == 16
        assert all(after == "1" for status, after, _ in answers if status == 503)
        assert max(health) < 1.0, health
        # Answered again from the cache: the same script, no generator started.
        for run_id in ids.values():
            status, _, body = get(connect, f"/api/repro?run_id={run_id}")
            assert status == 200 and json.loads(body)["run_id"] == run_id
        first = get(connect, f"/api/repro?run_id={ids['hostile']}")[2]
        assert get(connect, f"/api/repro?run_id={ids['hostile']}")[2] == first and generators(cli) == 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        cli.close(proc)
