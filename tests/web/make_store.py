"""Builds the store of the browser tests with the real binary, quickly.

Usage: make_store.py COMPATLAB_BIN WORKDIR [load|hub|blame|curves|profile|ops|stacks]  -> prints the store's path.

With `ops`: a store of its own for the op coverage page: `compatlab ops run` of a few OpInfo
entries on ctest (native, fallback and a skip of PyTorch's), eager.

With `stacks`: a store of its own for named stacks side by side (doc/stacks.md): a noop
sweep's run copied as bert's forward on the cpu, eager and compile, on the stacks `default`
and `t5` (t5 on another transformers release: eager newly failing there, compile unchanged)
and on a third stack `other` that the page does not ask for; imported with `compatlab import`.

With `profile`: a store of its own for the model page's profile section: a tiny gpt2's
forward, eager, on the cpu under `--profile` (its trace beside the store).

With `blame`: a store of its own for the runs compatlab could not test: llama passes; bert
and gpt2 are test-only models (tests/e2e/reduction_model.py) that fail when reduced, bert
only then (its rerun at the milder reduction passes: blamed on the reduction), gpt2 at
every size (the model's); a second sweep adds a code model that needs natten, which this
environment lacks (tests/e2e/needs_natten.py: blamed on the environment).

With `curves`: a store of its own for the model page's curves: a tiny llama's train
(20 steps: a learning run) and generate (64 new tokens), eager,
exported to Parquet (typed list columns) and imported into a second store, which is served:
the page draws what came through the typed columns.

With `hub`: a store of its own for the search by Hub id: one Hub model
(hub:testorg/tiny-encoder, forward, eager) read offline from a Hub cache written in
huggingface_hub's layout (probe/tests/hubfake.py), and the architecture's own hf:bert.

With `load`: a store of its own for the model page's load plots: kind load on a tiny
llama in eager (single_stream, offline, server at 0.5x and 1.5x; 6 requests each), nothing
planted. Eager only: the page shows one mode's load rows, and the smoke suite's compile rows
(inductor, a recompile per batch shape) cost about two minutes and are never looked at.

A sweep of one small model (bert, forward) and two harness tests (noop, raise)
on this machine, exported to Parquet; copies of its runs are planted as other
stacks, other targets and modes (cpu compile, noisy in its steady phase, its compile kept in
the compile store, the test device
eager and compile, cuda on the older stack), an older run of this machine's test (imported
after it, so it comes later in insertion order but finished earlier), a model
whose error message holds HTML and script markup and a checkpoint whose
directory name does, then imported back with `compatlab import`.
"""

import datetime
import hashlib
import json
import pathlib
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

MARKUP = ('<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'
          '<b onmouseover="window.__xss=3">bold</b>')


def run(*args):
    args = [str(a) for a in args]
    if args[1:2] == ["sweep"]:  # no wait for quiet on a machine busy with other tests (issue 46)
        args += ["--remeasure-noisy", "0"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"make_store.py: {' '.join(map(str, args))} failed: {proc.stderr}")
    return proc


def test_id(row):
    """TestSpec::TestId(): SHA-256 of the identity fields as compact sorted JSON."""
    identity = {k: row[k] for k in ("model_id", "model_class", "target", "mode", "backend",
                                    "kind", "dtype", "batch_size", "seq_len")}
    identity["kind_params"] = json.loads(row["kind_params"]) if isinstance(
        row["kind_params"], str) else dict(row["kind_params"] or {})
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def load_store(binary, work):
    db = work / "load.db"
    run(binary, "sweep", "--db", db, "--models", "llama", "--kinds", "load", "--seq-lens", "8",
        "--new-tokens", "4", "--load-requests", "6", "--rates", "0.5x,1.5x", "--modes", "eager")
    return db


def curves_store(binary, work):
    db = work / "curves-sweep.db"
    run(binary, "sweep", "--db", db, "--models", "llama", "--kinds", "train,generate", "--modes", "eager",
        "--seq-lens", "8", "--train-steps", "20", "--new-tokens", "64", "--max-measure-s", "0.5")
    run(binary, "export", "--db", db, "--parquet", work / "curves-out")
    imported = work / "curves.db"
    run(binary, "import", "--db", imported, work / "curves-out")
    return imported


def profile_store(binary, work):
    db = work / "profile.db"
    run(binary, "sweep", "--db", db, "--models", "gpt2", "--kinds", "forward", "--modes", "eager",
        "--seq-lens", "8", "--max-measure-s", "0.3", "--profile")
    return db


def hub_store(binary, work):
    import os

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "probe" / "tests"))
    import hubfake

    cache = work / "hubcache"
    hubfake.write_cache(str(cache), "testorg/tiny-encoder", hubfake.repo_files(hubfake.ENCODER))
    db = work / "hub.db"
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(cache))
    proc = subprocess.run([str(binary), "sweep", "--remeasure-noisy", "0", "--db", str(db), "--models", "hub:testorg/tiny-encoder,bert",
                           "--modes", "eager", "--kinds", "forward"],
                          capture_output=True, text=True, timeout=600, env=env)
    if proc.returncode != 0:
        sys.exit(f"make_store.py: the hub sweep failed: {proc.stderr}")
    return db


def stacks_store(binary, work):
    db = work / "stacks.db"
    suite = work / "stacks-suite.json"
    suite.write_text(json.dumps({
        "name": "stacks", "description": "browser tests of stacks side by side",
        "targets": ["cpu"], "modes": ["eager"], "dtypes": ["float32"],
        "batch_sizes": [1], "seq_lens": [32], "timeout_s": 300, "tests": [{"kind": "noop"}]}))
    run(binary, "sweep", "--suite", suite, "--db", db)
    run(binary, "export", "--db", db, "--parquet", work / "out")
    (exported,) = sorted((work / "out").rglob("*.parquet"))
    table = pq.read_table(exported)
    (noop,) = table.to_pylist()
    bert = dict(noop, model_id="hf:bert", model_type="bert", kind="forward", status="pass",
                prepare_s=1.5, steady_median_s=0.004, steady_ci_low_s=0.0039,
                steady_ci_high_s=0.0041, noisy=0, noisy_reason="", prepare_noisy=0,
                prepare_noisy_reason="")

    def copy(sweep, **changes):
        new = dict(bert, sweep_id=sweep, run_id=f"{sweep}-{noop['run_id']}", **changes)
        new["test_id"] = test_id(new)
        return new

    compile_ = {"mode": "compile", "backend": "inductor"}
    t5 = {"stack": "t5", "transformers_version": "5.18.0"}
    planted = [
        copy("default-eager", stack="default"),
        copy("default-compile", stack="default", **compile_),
        copy("t5-eager", status="fail_to_run", stage="run", error_type="RuntimeError",
             error_message="planted: t5 breaks bert's forward", steady_median_s=None,
             steady_ci_low_s=None, steady_ci_high_s=None, **t5),
        copy("t5-compile", **compile_, **t5),
        copy("other-eager", stack="other", transformers_version="5.0.0"),
    ]
    missing = [k for k in ("stack", "steady_ci_low_s", "steady_ci_high_s") if k not in table.schema.names]
    if missing:
        sys.exit(f"make_store.py: the export has no {missing} columns")
    planted_dir = work / "planted"
    planted_dir.mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_pylist(planted, schema=table.schema), planted_dir / "planted.parquet")
    run(binary, "import", "--db", db, planted_dir)
    return db


def blame_store(binary, work):
    import os

    e2e = pathlib.Path(__file__).resolve().parents[1] / "e2e"
    db = work / "blame.db"
    env = dict(os.environ, HF_HUB_OFFLINE="1", COMPATLAB_TEST_MIN_HIDDEN="bert=128,gpt2=1000000",
               PYTHONPATH=os.pathsep.join([str(e2e / "reduction_site"), str(e2e)]))
    proc = subprocess.run([str(binary), "sweep", "--remeasure-noisy", "0", "--db", str(db), "--models", "llama,bert,gpt2", "--modes",
                           "eager", "--kinds", "forward", "--seq-lens", "8", "--mem-limit", "1G",
                           "--max-measure-s", "0"], capture_output=True, text=True, timeout=600, env=env)
    if proc.returncode != 0:
        sys.exit(f"make_store.py: the blame sweep failed: {proc.stderr}")
    code = work / "needs_natten.py"  # a package the environment lacks: blamed on the environment
    code.write_text((e2e / "needs_natten.py").read_text())
    proc = subprocess.run([str(binary), "sweep", "--remeasure-noisy", "0", "--db", str(db), "--model-code", f"{code}:build",
                           "--modes", "eager", "--kinds", "forward", "--seq-lens", "8",
                           "--max-measure-s", "0"], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if proc.returncode != 0:
        sys.exit(f"make_store.py: the environment sweep failed: {proc.stderr}")
    return db


def ops_store(binary, work):
    db = work / "ops.db"
    proc = subprocess.run([str(binary), "ops", "run", "--db", str(db), "--target", "ctest", "--ops",
                           "add,mul,mm,tanh,neg,bernoulli", "--max-samples", "2"],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"make_store.py: the op sweep failed: {proc.stderr}")
    return db


def main():
    binary, work = sys.argv[1], pathlib.Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    if sys.argv[3:] == ["load"]:
        print(load_store(binary, work))
        return
    if sys.argv[3:] == ["curves"]:
        print(curves_store(binary, work))
        return
    if sys.argv[3:] == ["profile"]:
        print(profile_store(binary, work))
        return
    if sys.argv[3:] == ["hub"]:
        print(hub_store(binary, work))
        return
    if sys.argv[3:] == ["stacks"]:
        print(stacks_store(binary, work))
        return
    if sys.argv[3:] == ["blame"]:
        print(blame_store(binary, work))
        return
    if sys.argv[3:] == ["ops"]:
        print(ops_store(binary, work))
        return
    db = work / "web.db"
    suite = work / "web-suite.json"
    suite.write_text(json.dumps({
        "name": "web", "description": "browser tests", "models": ["bert"], "targets": ["cpu"],
        "modes": ["eager"], "kinds": ["forward"], "dtypes": ["float32"], "batch_sizes": [1],
        "seq_lens": [32], "timeout_s": 300,
        "tests": [{"kind": "noop"}, {"kind": "raise"}]}))
    run(binary, "sweep", "--suite", suite, "--db", db)
    run(binary, "export", "--db", db, "--parquet", work / "out")
    (exported,) = sorted((work / "out").rglob("*.parquet"))
    table = pq.read_table(exported)
    rows = table.to_pylist()
    bert = next(r for r in rows if r["model_type"] == "bert")
    raised = next(r for r in rows if r["kind"] == "raise")

    def copy(row, sweep, **changes):
        new = dict(row, sweep_id=sweep, run_id=f"{sweep}-{row['run_id']}", **changes)
        new["test_id"] = test_id(new)
        return new

    def earlier(row, hours):
        """started_at and finished_at `hours` before `row`'s, in the stored format."""
        out = {}
        for key in ("started_at", "finished_at"):
            value = row[key]
            if isinstance(value, str):
                when = datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ")
                out[key] = (when - datetime.timedelta(hours=hours)).strftime(
                    "%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            else:
                out[key] = value - datetime.timedelta(hours=hours)
        return out

    planted = [
        copy(bert, "older-stack", torch_version="2.12.0+cpu", transformers_version="5.22.0",
             **earlier(bert, 48)),
        copy(bert, "older-stack-cuda", target="cuda", torch_version="2.12.0+cpu",
             transformers_version="5.22.0", status="fail_to_run", stage="build",
             error_type="RuntimeError", error_message="no CUDA device on this machine",
             **earlier(bert, 48)),
        # The matrix's other columns, on this machine's stack.
        # Timed while the machine was busy in its steady phase only: its steady figure is
        # shown marked, its prepare figure not (issue 46).
        copy(bert, "matrix-compile", mode="compile", backend="inductor", noisy=1,
             noisy_reason="1.4 other runnable tasks > 0 free cores", prepare_noisy=0,
             prepare_noisy_reason="", compile_key=json.dumps({"test_id": "bert", "torch": "2.13.0+cpu"}),
             compile_entry="kept 3f2a", prepare_state="model-cold"),
        copy(bert, "matrix-ctest", target="ctest", fallback_audit="audited",
             fallback_ops=json.dumps({"aten::foo": 2, "aten::bar": 1}), noisy=0, noisy_reason="",
             prepare_noisy=0, prepare_noisy_reason=""),
        copy(bert, "matrix-ctest-compile", target="ctest", mode="compile", backend="ctest",
             status="fail_to_compile", stage="prepare", error_type="BackendCompilerFailed",
             error_message="backend='ctest' raised: the ctest backend cannot run "
                           "aten::native_layer_norm, aten::gelu and 3 more ops\nsecond line",
             steady_median_s=None),
        # An older run of this machine's test, imported after it: superseded.
        copy(bert, "older-import", status="timeout", error_message="planted older timeout",
             **earlier(bert, 1)),
        copy(bert, "hostile-ckpt", model_id="ckpt:" + "ab" * 32, model_type="bert",
             model_path="/models/" + MARKUP.replace("/", "|")),
        copy(raised, "markup", model_id="hf:markup_model", model_type="markup_model",
             kind="forward", status="fail_to_run", error_message=MARKUP,
             error_traceback="Traceback: " + MARKUP,
             error_signature=""),  # as in a file without signatures: the import computes it
    ]
    planted_dir = work / "planted"
    planted_dir.mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_pylist(planted, schema=table.schema), planted_dir / "planted.parquet")
    run(binary, "import", "--db", db, planted_dir)
    print(db)


if __name__ == "__main__":
    main()
