"""Issue 18, end to end: the compiler's start-up paid once per sweep (the zygote's calibration
compile, compiler_startup_s), model-cold prepare_s on a seeded cache holding no graph of the
model, and the warm rerun still hitting its own cache. One tiny llama forward with inductor
plus its eager twin.

Issue 40 on the same sweep (doc/compile-cache.md): its model-cold compile kept in its compile
store and pushed to a directory remote; a second working directory (machine B, an empty
store) sweeps the compiled test with --cache-from and compiles no graph; cache explain names a
planted torch version and compile option, and a planted inductor configuration line of a
graph-level miss (inductor's own key details, kept by the run and its entry); a tampered
entry is refused on pull.
"""

import hashlib
import json
import pathlib
import re
import shutil
import tempfile

import pytest

from .conftest import Compatlab

STARTUP_LINE = re.compile(r"compatlab: compiler start-up ([0-9.]+) s, once for the sweep \(compile [0-9.]+ s, "
                          r"imports [0-9.]+ s, vec_isa [0-9.]+ s\)")


@pytest.fixture(scope="module")
def swept(compatlab_bin, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("startup")
    cli = Compatlab(compatlab_bin, tmp)
    db = tmp / "store.db"
    sweep_id, proc = cli.sweep("--models", "llama", "--modes", "eager,compile", "--backend", "inductor",
                               "--kinds", "forward", "--seq-lens", "16", "--warm", "--db", db, timeout=900)
    rows = {r["mode"]: r for r in cli.runs(db)}
    return sweep_id, proc.stderr, rows, cli


def test_the_start_up_is_measured_once_and_stored_in_compiled_rows_only(swept):
    sweep_id, stderr, rows, _ = swept
    match = STARTUP_LINE.search(stderr)
    assert match, stderr[-2000:]
    compiled, eager = rows["compile"], rows["eager"]
    assert compiled["status"] == "pass", (compiled["stage"], compiled["error_message"][-2000:])
    assert compiled["compiler_startup_s"] == pytest.approx(float(match.group(1)), abs=0.051)
    assert eager["compiler_startup_s"] is None
    seed = pathlib.Path(tempfile.gettempdir()) / f"compatlab-seed-{sweep_id}"
    assert not seed.exists() and not pathlib.Path(f"{seed}.calibration").exists()


def test_model_cold_run_finds_no_graph_of_its_model_and_the_warm_rerun_hits(swept):
    compiled = swept[2]["compile"]
    # The cold directory started as a copy of the seed: a graph of llama there would be a hit.
    assert compiled["cache_hits"] == 0 and compiled["cache_misses"] > 0
    assert compiled["warm_state"] == "warm" and compiled["warm_cache_hits"] > 0
    assert compiled["warm_cache_misses"] == 0
    assert 0 < compiled["warm_prepare_s"] < compiled["prepare_s"]
    assert compiled["acc_rule"] in ("allclose", "rmse_ratio", "cosine"), compiled["acc_rule"]
    assert compiled["speedup"] > 0 and compiled["eager_steady_median_s"] > 0


LLAMA_COMPILED = ("--models", "llama", "--modes", "compile", "--backend", "inductor", "--kinds", "forward",
                  "--seq-lens", "16")


@pytest.fixture(scope="module")
def machine_b(swept, compatlab_bin, tmp_path_factory):
    """Machine A (the swept sweep's directory) pushes its store to a directory remote; machine
    B, a working directory with an empty store, sweeps the compiled test with --cache-from."""
    cli_a = swept[3]
    remote = cli_a.workdir / "remote"
    push = cli_a.run("cache", "push", remote)
    tmp = tmp_path_factory.mktemp("machine-b")
    cli = Compatlab(compatlab_bin, tmp)
    _, proc = cli.sweep(*LLAMA_COMPILED, "--cache-from", remote, "--db", tmp / "b.db", timeout=900)
    return push, proc.stderr, cli.runs(tmp / "b.db")[0], cli, remote


def test_a_model_cold_compile_is_kept_with_its_key_and_pushed(swept, machine_b):
    compiled, push = swept[2]["compile"], machine_b[0]
    assert compiled["prepare_state"] == "model-cold" and compiled["cache_bundle"] == ""
    assert compiled["compile_entry"].startswith("kept "), compiled["compile_entry"]
    key = json.loads(compiled["compile_key"])
    assert key["test_id"] == compiled["test_id"] and key["torch"] == compiled["torch_version"]
    assert key["backend"] == "inductor" and key["device"].startswith("cpu ")
    assert compiled["fx_graph_cache_misses"] > 0 and compiled["fx_graph_cache_hits"] == 0
    assert push.returncode == 0 and "pushed 1 entries to" in push.stdout, push.stdout + push.stderr


def test_machine_b_loads_the_entry_and_compiles_no_graph(swept, machine_b):
    _, stderr, row, cli, _ = machine_b
    assert "compatlab: cache: 1 entries pulled from" in stderr
    assert row["status"] == "pass", row["error_message"][-2000:]
    assert row["prepare_state"] == "warm-remote" and row["cache_bundle"] == "hit"
    assert row["fx_graph_cache_hits"] > 0 and row["fx_graph_cache_misses"] == 0
    assert row["aot_autograd_cache_misses"] == 0
    assert row["compile_entry"] == ""  # a warm start's bundle is partial: not kept
    assert row["compile_key"] == swept[2]["compile"]["compile_key"]
    listing = cli.run("cache", "ls")
    assert listing.returncode == 0 and "1 entries" in listing.stdout
    assert json.loads(row["compile_key"])["torch"] in listing.stdout


def plant(remote, planted, **parts):
    """A copy of `remote`'s one entry under `planted`, its key parts changed (and renamed to the
    new key's digest: a well-formed entry of another key)."""
    (source,) = (remote / "entries").iterdir()
    key = json.loads((source / "key.json").read_text())
    key.update(parts)
    text = json.dumps(key, sort_keys=True, separators=(",", ":"))
    dest = planted / "entries" / hashlib.sha256(text.encode()).hexdigest()
    shutil.copytree(source, dest)
    (dest / "key.json").write_text(text)


def test_explain_names_a_planted_torch_version_and_compile_option(swept, machine_b):
    compiled, (_, _, _, cli, remote) = swept[2]["compile"], machine_b
    planted = cli.workdir / "planted"
    plant(remote, planted, torch="2.14.1")
    plant(remote, planted, compile_options='{"dynamic": false, "fullgraph": false, "mode": "max-autotune"}')
    proc = swept[3].run("cache", "explain", compiled["run_id"], "--db", swept[3].workdir / "store.db",
                        "--remote", planted)
    assert proc.returncode == 0, proc.stderr
    torch_version = json.loads(compiled["compile_key"])["torch"]
    assert f"torch: {torch_version} here, 2.14.1 in the entry" in proc.stdout, proc.stdout
    assert 'compile_options: {"dynamic": false, "fullgraph": false} here, {"dynamic": false, ' \
           '"fullgraph": false, "mode": "max-autotune"} in the entry' in proc.stdout, proc.stdout


def plant_graph_change(remote, planted, name, value):
    """A copy of `remote`'s one entry, its key unchanged, under `planted`, whose first graph's
    details hold another inductor configuration value `name` (its hash too, and the graph's
    key, as inductor's key would change with it); the manifest lists the file anew."""
    (source,) = (remote / "entries").iterdir()
    dest = planted / "entries" / source.name
    shutil.copytree(source, dest)
    details = json.loads((dest / "fx_graph_details.json").read_text())
    graph = details["graphs"][0]
    (at,) = [i for i, line in enumerate(graph["lines"]) if f"] inductor_config[{name}]: " in line]
    graph["lines"][at] = f"[planted] inductor_config[{name}]: {value}"
    graph["key"] = "fplanted"
    text = json.dumps(details)
    (dest / "fx_graph_details.json").write_text(text)
    manifest = json.loads((dest / "entry.json").read_text())
    (listed,) = [f for f in manifest["files"] if f["path"] == "fx_graph_details.json"]
    listed.update(bytes=len(text), sha256=hashlib.sha256(text.encode()).hexdigest())
    (dest / "entry.json").write_text(json.dumps(manifest))


def test_explain_names_a_planted_inductor_config_line_of_a_graph_level_miss(swept, machine_b):
    """The model-cold run and its entry keep inductor's graph details; against an entry of the
    run's very key whose details differ in one inductor configuration value, explain names it."""
    compiled, (_, _, _, cli, remote) = swept[2]["compile"], machine_b
    run_details = json.loads(compiled["fx_graph_details"])
    (entry,) = (remote / "entries").iterdir()
    entry_details = json.loads((entry / "fx_graph_details.json").read_text())
    assert run_details["graphs"] and run_details["truncated"] == ""
    assert [g["key"] for g in run_details["graphs"]] == [g["key"] for g in entry_details["graphs"]]
    planted = cli.workdir / "planted-graph"
    plant_graph_change(remote, planted, "max_autotune", "True")
    proc = swept[3].run("cache", "explain", compiled["run_id"], "--db", swept[3].workdir / "store.db",
                        "--remote", planted)
    assert proc.returncode == 0, proc.stderr
    print(proc.stdout)  # the doc's example (doc/compile-cache.md)
    assert "this run's very key" in proc.stdout, proc.stdout
    assert re.search(r"graph 1 here \(key \S+\) against the entry's graph 1 \(key fplanted\): 1 line differs\n"
                     r"      inductor_config\[max_autotune\]: False here, True in the entry\n", proc.stdout), proc.stdout


def test_a_pulled_entry_whose_content_is_not_its_digest_is_refused(machine_b, tmp_path):
    cli, remote = machine_b[3], machine_b[4]
    tampered = tmp_path / "tampered"
    shutil.copytree(remote, tampered)
    (bundle,) = tampered.glob("entries/*/artifacts.bin")
    bundle.write_bytes(bundle.read_bytes()[:-1] + b"X")
    proc = cli.run("cache", "--store", tmp_path / "fresh", "pull", tampered)
    assert proc.returncode == 1
    assert "pulled 0 entries" in proc.stdout and "artifacts.bin: content does not match its digest" in proc.stdout
    assert not list((tmp_path / "fresh" / "entries").iterdir())
