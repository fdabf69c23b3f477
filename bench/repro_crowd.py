"""/api/health's latency while a crowd of clients asks /api/repro (issue 38, case 7).

Usage: repro_crowd.py COMPATLAB_BIN STORE [--clients 16] [--seconds 10] [--distinct]

Serves STORE on 127.0.0.1 (a free port), then for --seconds: --clients threads each ask
/api/repro for a model run of the store, one request after the other (--distinct: each
request another run, so no answer can come from a cache; else the same few runs), while one
more thread asks /api/health every 50 ms. Prints the health latencies (p50, p99, max), the
repro answers by status and their latency, and the most reproduction-script generators
alive at once. Bounded: at most 64 clients and 120 s; nothing but 127.0.0.1.
"""

import argparse
import http.client
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import threading
import time


def model_run_ids(store, limit):
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT run_id FROM runs WHERE model_id != 'none' ORDER BY rowid LIMIT ?",
                            (limit,)).fetchall()
    conn.close()
    return [r for (r,) in rows]


def generators(server_pid):
    """Live processes running compatlab_probe.repro whose parent is the server."""
    found = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if int(fields[1]) == server_pid and fields[0] not in (b"Z", b"X") and b"compatlab_probe.repro" in cmdline:
            found += 1
    return found


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("store")
    parser.add_argument("--clients", type=int, default=16, choices=range(1, 65), metavar="1..64")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--distinct", action="store_true")
    args = parser.parse_args()
    seconds = min(max(args.seconds, 1.0), 120.0)
    run_ids = model_run_ids(args.store, 100_000 if args.distinct else 4)
    if not run_ids:
        sys.exit("the store holds no model run")
    server = subprocess.Popen([args.binary, "serve", "--db", args.store, "--port", "0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        port = int(re.search(r"127\.0\.0\.1:(\d+)/", server.stderr.readline()).group(1))
        threading.Thread(target=server.stderr.read, daemon=True).start()  # never blocks the server
        stop = time.monotonic() + seconds
        lock = threading.Lock()
        health, repro, most, next_run = [], {}, [0], [0]

        def timed_get(path):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            started = time.monotonic()
            conn.request("GET", path)
            res = conn.getresponse()
            res.read()
            conn.close()
            return res.status, time.monotonic() - started

        def client():
            while time.monotonic() < stop:
                with lock:
                    run_id = run_ids[next_run[0] % len(run_ids)]
                    next_run[0] += 1
                status, took = timed_get(f"/api/repro?run_id={run_id}")
                with lock:
                    repro.setdefault(status, []).append(took)
                if status == 503:
                    time.sleep(0.05)

        def prober():
            while time.monotonic() < stop:
                status, took = timed_get("/api/health")
                assert status == 200
                health.append(took)
                most[0] = max(most[0], generators(server.pid))
                time.sleep(0.05)

        threads = [threading.Thread(target=client) for _ in range(args.clients)]
        threads.append(threading.Thread(target=prober))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"{args.clients} /api/repro clients for {seconds:.0f} s ({'distinct runs' if args.distinct else f'{len(run_ids)} runs'})")
        print(f"/api/health: {len(health)} requests, p50 {statistics.median(health) * 1e3:.1f} ms, "
              f"p99 {percentile(health, 0.99) * 1e3:.1f} ms, max {max(health) * 1e3:.1f} ms")
        for status, took in sorted(repro.items()):
            print(f"/api/repro {status}: {len(took)} answers, p50 {statistics.median(took) * 1e3:.1f} ms, "
                  f"max {max(took) * 1e3:.1f} ms")
        print(f"generators alive at once (sampled with each health request): at most {most[0]}")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
