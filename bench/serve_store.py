"""Writes the synthetic store of bench/serve: N results over M model ids.

Usage: serve_store.py SEED_STORE OUT_STORE [--runs N] [--models M]

OUT_STORE starts as a copy of SEED_STORE (a real store made by `compatlab sweep`,
so the schema, meta and application id are the real ones); its runs are then
multiplied in one transaction: each synthetic run is a seed run with another
model id, sweep, target, mode, sequence length, stack, status and timings. Each
synthetic sweep gets its sweeps row and its planned_tests rows, so the store stays
what compatlab writes (one result per planned test).
"""

import argparse
import hashlib
import json
import random
import shutil
import sqlite3
import sys
import time

STACKS = [("2.10.0+cpu", "5.20.0"), ("2.11.0+cpu", "5.21.0"), ("2.12.0+cpu", "5.22.0"),
          ("2.13.0+cpu", "5.23.0")]
TARGETS = ["cpu", "cuda", "neuron"]
MODES = ["eager", "compile"]
SEQ_LENS = [32, 128, 512, 2048]
STATUSES = (["pass"] * 80 + ["fail_to_run"] * 8 + ["fail_to_compile"] * 5 + ["fail_accuracy"] * 3
            + ["timeout", "crash", "oom", "fail_to_load"])
SPEC_FIELDS = ["model_id", "model_type", "model_class", "model_path", "target", "mode", "backend",
               "kind", "dtype", "batch_size", "seq_len", "kind_params", "timeout_s"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("seed")
    parser.add_argument("out")
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=20_000)
    args = parser.parse_args()
    start = time.time()
    shutil.copy(args.seed, args.out)
    db = sqlite3.connect(args.out)
    db.row_factory = sqlite3.Row
    columns = [r["name"] for r in db.execute("PRAGMA table_info(runs)")]
    # One seed run per model type: mode, target and shape are synthetic below, so two
    # seed runs of one type (eager and compile) would make the same test twice.
    seeds = [dict(r) for r in db.execute(
        "SELECT * FROM runs WHERE rowid IN (SELECT min(rowid) FROM runs WHERE model_type != '' "
        "GROUP BY model_type) ORDER BY rowid")]
    if not seeds:
        sys.exit("serve_store.py: the seed store has no model runs (run the smoke suite)")
    rng = random.Random(7)
    sweeps = 20
    per_sweep = -(-args.runs // sweeps)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = OFF")
    db.execute("BEGIN")
    insert_run = f"INSERT INTO runs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    for s in range(sweeps):
        torch_version, transformers_version = STACKS[s % len(STACKS)]
        sweep_id = f"bench-{s:02d}"
        created = f"2026-{1 + s // 2:02d}-{1 + s % 2 * 14:02d}T00:00:00.000Z"
        n = min(per_sweep, args.runs - s * per_sweep)
        db.execute("INSERT INTO sweeps (sweep_id, created_at, finished_at, suite, args, host, jobs, "
                   "planned) VALUES (?, ?, ?, 'bench', 'bench/serve_store.py', 'bench', 1, ?)",
                   (sweep_id, created, created, n))
        planned, runs = [], []
        for k in range(n):
            i = s * per_sweep + k
            row = dict(seeds[i % len(seeds)])
            model = i % args.models
            row["model_type"] = f"{row['model_type']}_{model // len(seeds):05d}"
            row["model_id"] = "hf:" + row["model_type"]
            row["target"] = TARGETS[(i // args.models) % len(TARGETS)]
            row["mode"] = MODES[(i // (args.models * len(TARGETS))) % len(MODES)]
            row["backend"] = "inductor" if row["mode"] == "compile" else ""
            row["seq_len"] = SEQ_LENS[(i // 7) % len(SEQ_LENS)]
            row["sweep_id"] = sweep_id
            row["torch_version"], row["transformers_version"] = torch_version, transformers_version
            status = rng.choice(STATUSES)
            row["status"] = status
            scale = row["seq_len"] / 32 * rng.uniform(0.8, 1.25)
            if status == "pass":
                for f in ("prepare_s", "steady_median_s", "steady_p90_s"):
                    if row[f] is not None:
                        row[f] *= scale
                row["stage"] = row["error_type"] = row["error_message"] = row["error_traceback"] = ""
            else:
                row["stage"] = "prepare"
                row["error_type"] = "RuntimeError"
                row["error_message"] = f"synthetic failure {rng.randrange(40)} of {status}"
                row["steady_median_s"] = row["steady_p90_s"] = row["steady_iters"] = None
            spec = {f: row[f] for f in SPEC_FIELDS}
            spec["kind_params"] = json.loads(row["kind_params"])
            row["test_id"] = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:32]
            row["run_id"] = f"{sweep_id}-{k:07d}"
            row["started_at"] = row["finished_at"] = created
            planned.append((sweep_id, k, row["test_id"], json.dumps(spec, separators=(",", ":"))))
            runs.append(tuple(row[c] for c in columns))
        db.executemany("INSERT INTO planned_tests (sweep_id, ordinal, test_id, spec) VALUES "
                       "(?, ?, ?, ?)", planned)
        db.executemany(insert_run, runs)
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA journal_mode = WAL")
    total = db.execute("SELECT count(*) FROM runs").fetchone()[0]
    models = db.execute("SELECT count(DISTINCT model_id) FROM runs").fetchone()[0]
    db.close()
    print(f"serve_store.py: {args.out}: {total} runs over {models} model ids "
          f"in {time.time() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
