"""A simulation from measured costs (issue 39): how many nodes a sweep of N Hub models needs
for a 24-hour turnaround, from the stored runs of one finished sweep (e.g. hf-all).

    .venv/bin/python bench/shards_scale.py STORE [--models 100000] [--hours 24]
        [--compile-store STORE2]

With --compile-store, a second finished sweep of mode compile with --warm: what a shared
compile cache would save, with a warm-local rerun's preparation (warm_prepare_s: the same
compiled artifacts found in the cache) standing in for a hit of the shared cache, applied to
the projection as if each model were also swept compiled at STORE2's measured costs.

The store's own sweep gives the measured node throughput (tests per second of its wall time,
at its --jobs, on its host); N models are assumed to cost what the store's models cost on
average. Not a measurement of N models: a projection, and printed as one.
"""

import argparse
import math
import sqlite3
import statistics
from datetime import datetime


def seconds(iso):
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("--models", type=int, default=100_000)
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--compile-store")
    args = parser.parse_args()
    con = sqlite3.connect(f"file:{args.store}?mode=ro", uri=True)
    try:
        walls = [r[0] for r in con.execute("SELECT wall_s FROM runs")]
        models = con.execute("SELECT count(DISTINCT model_id) FROM runs").fetchone()[0]
        start, end, jobs, host = con.execute(
            "SELECT min(r.started_at), max(r.finished_at), s.jobs, s.host FROM runs r "
            "JOIN sweeps s USING (sweep_id)").fetchone()
    finally:
        con.close()
    sweep_wall = seconds(end) - seconds(start)
    per_model = sweep_wall / models  # node seconds per model, as measured
    total = per_model * args.models
    budget = args.hours * 3600
    print(f"measured: {len(walls)} tests of {models} models in {sweep_wall:.0f} s of sweep wall "
          f"on {host} at --jobs {jobs}: {per_model:.2f} node-seconds per model; test wall_s "
          f"median {statistics.median(walls):.2f} s, p90 "
          f"{statistics.quantiles(walls, n=10)[-1]:.2f} s, max {max(walls):.1f} s, "
          f"sum {sum(walls):.0f} s")
    print(f"SIMULATION for {args.models:,} models: {total:,.0f} node-seconds "
          f"({total / 3600:,.1f} node-hours); a {args.hours:g}-hour turnaround needs "
          f"{math.ceil(total / budget)} nodes like {host} (LPT shards of equal cost: the "
          f"makespan is the total over the nodes, plus the largest single test, "
          f"{max(walls):.0f} s)")
    if args.compile_store:
        compile_cache_saving(args.compile_store, args.models, args.hours, total)


def compile_cache_saving(store, n_models, hours, eager_total):
    """Prints the shared cache's saving, from STORE's compiled tests with a warm rerun."""
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT wall_s, prepare_s, warm_prepare_s FROM runs WHERE mode = 'compile' AND "
            "warm_state = 'warm' AND prepare_s IS NOT NULL AND warm_prepare_s IS NOT NULL"
        ).fetchall()
        models = con.execute(
            "SELECT count(DISTINCT model_id) FROM runs WHERE mode = 'compile'").fetchone()[0]
    finally:
        con.close()
    if not rows:
        print(f"{store}: no compiled test with a warm rerun (sweep --modes compile --warm)")
        return
    wall = sum(r[0] for r in rows)
    cold = sum(r[1] for r in rows)
    warm = sum(r[2] for r in rows)
    saved_share = (cold - warm) / wall
    per_model = wall / models
    compiled_total = per_model * n_models
    print(f"measured: {len(rows)} compiled tests of {models} models with a warm rerun: "
          f"model-cold prepare {cold:.1f} s, warm-local prepare {warm:.1f} s "
          f"({warm / cold:.2f}x), of {wall:.1f} s of test wall: a hit saves "
          f"{saved_share:.0%} of a compiled test's wall")
    saved = compiled_total * saved_share
    print(f"SIMULATION for {n_models:,} models also swept compiled: {compiled_total / 3600:,.1f} "
          f"node-hours of compiled tests ({per_model:.2f} node-seconds per model, summed test "
          f"wall, the zygote's start left out), of which a shared cache hit for every test "
          f"saves {saved / 3600:,.1f}; eager and compiled together "
          f"{(eager_total + compiled_total) / 3600:,.1f} node-hours, "
          f"{math.ceil((eager_total + compiled_total) / (hours * 3600))} nodes for a "
          f"{hours:g}-hour turnaround without the cache, "
          f"{math.ceil((eager_total + compiled_total - saved) / (hours * 3600))} with it")


if __name__ == "__main__":
    main()
