"""A simulation from measured costs (issue 39): how many nodes a sweep of N Hub models needs
for a 24-hour turnaround, from the stored runs of one finished sweep (e.g. hf-all).

    .venv/bin/python bench/shards_scale.py STORE [--models 100000] [--hours 24]

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


if __name__ == "__main__":
    main()
