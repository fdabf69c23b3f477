"""Hostile clients for bench/serve: many connections held open at once.

Opens CONNECTIONS connections to 127.0.0.1:PORT, half idle keep-alives (one
request, its answer read, then silence) and half slow headers (a request line
and one header, then one more byte every --trickle-s seconds, never the end
of the header), prints "ready" once all are open, holds them for --seconds,
and meanwhile samples the server process PID every 0.25 s (open files,
resident memory, its anonymous part, threads). Then closes them all and prints one JSON line:
{"opened", "failed", "closed_by_server", "peak_fds", "peak_rss_kib",
"peak_anon_kib", "peak_threads", "held_s"}.
"""

import argparse
import errno
import json
import os
import resource
import selectors
import socket
import sys
import time


def server_sample(pid):
    """(open files, VmRSS KiB, RssAnon KiB, threads) of process `pid`."""
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    status = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            status[name] = value.split()
    return fds, int(status["VmRSS"][0]), int(status["RssAnon"][0]), int(status["Threads"][0])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("pid", type=int)
    parser.add_argument("--connections", type=int, default=10000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--trickle-s", type=float, default=1.0)
    parser.add_argument("--connect-timeout-s", type=float, default=30)
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    sel = selectors.DefaultSelector()
    idle_request = b"GET /api/health HTTP/1.1\r\nHost: bench\r\n\r\n"
    slow_start = b"GET /api/health HTTP/1.1\r\nHost: bench\r\nX-Slow: "
    conns = {}  # fd -> [socket, kind, connected]
    failed = 0
    for i in range(args.connections):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        err = s.connect_ex(("127.0.0.1", args.port))
        if err not in (0, errno.EINPROGRESS):
            failed += 1
            s.close()
            continue
        conns[s.fileno()] = [s, "idle" if i % 2 == 0 else "slow", False]
        sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ)

    closed_by_server = 0

    def drop(fd):
        nonlocal closed_by_server
        entry = conns.pop(fd)
        sel.unregister(entry[0])
        entry[0].close()
        closed_by_server += 1

    def pump(timeout):
        for key, events in sel.select(timeout):
            fd = key.fd
            if fd not in conns:
                continue
            s, kind, connected = conns[fd]
            if not connected and events & selectors.EVENT_WRITE:
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    drop(fd)
                    continue
                conns[fd][2] = True
                try:
                    s.send(idle_request if kind == "idle" else slow_start)
                except OSError:
                    drop(fd)
                    continue
                sel.modify(s, selectors.EVENT_READ)
            elif events & selectors.EVENT_READ:
                try:
                    data = s.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    drop(fd)

    start = time.monotonic()
    while (sum(1 for c in conns.values() if c[2]) < len(conns)
           and time.monotonic() - start < args.connect_timeout_s):
        pump(0.05)
    opened = sum(1 for c in conns.values() if c[2])
    failed += len(conns) - opened
    print("ready", opened, flush=True)

    peak = [0, 0, 0, 0]
    held_from = time.monotonic()
    # The slow headers' bytes go out in 20 slices a period, not in one burst.
    slices = 20
    slow = [fd for fd, c in conns.items() if c[1] == "slow" and c[2]]
    next_trickle = held_from
    next_slice = 0
    next_sample = held_from
    while time.monotonic() - held_from < args.seconds:
        now = time.monotonic()
        if now >= next_sample:
            try:
                sample = server_sample(args.pid)
                peak = [max(a, b) for a, b in zip(peak, sample, strict=True)]
            except OSError:
                pass
            next_sample = now + 0.25
        if now >= next_trickle:
            for fd in slow[next_slice::slices]:
                if fd in conns:
                    try:
                        conns[fd][0].send(b"x")
                    except OSError:
                        drop(fd)
            next_slice = (next_slice + 1) % slices
            next_trickle = now + args.trickle_s / slices
        pump(0.01)
    held = time.monotonic() - held_from
    for s, _, _ in conns.values():
        s.close()
    print(json.dumps({"opened": opened, "failed": failed, "closed_by_server": closed_by_server,
                      "peak_fds": peak[0], "peak_rss_kib": peak[1], "peak_anon_kib": peak[2],
                      "peak_threads": peak[3],
                      "held_s": round(held, 2)}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
