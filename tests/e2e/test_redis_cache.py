"""Issue 40, part 6 (doc/compile-cache.md, "Inductor's Redis remote cache"): a target profile's
`redis_cache` turns on inductor's Redis remote FX graph and AOTAutograd caches. Debian's
redis-server on a free loopback port plays a cluster's shared server: a first sweep fills it,
a second (a fresh local cache, no compile store) hits it; the server is stopped afterwards.
"""

import json
import shutil
import socket
import subprocess
import time

import pytest

from .conftest import REPO, Compatlab, live_processes, stop_process

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
TINY_COMPILED = ("--models", "llama", "--modes", "compile", "--backend", "inductor", "--kinds", "forward",
                 "--seq-lens", "16", "--max-measure-s", "0", "--no-keep-compile")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_command(port, *words):
    """One command in RESP to the server at 127.0.0.1:port; its reply's first line."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"*{len(words)}\r\n".encode() + b"".join(f"${len(w)}\r\n{w}\r\n".encode() for w in words))
        return s.recv(4096).split(b"\r\n")[0].decode()


@pytest.fixture
def redis_port(tmp_path):
    """redis-server on a free loopback port, no persistence, stopped (and reaped) afterwards."""
    port = free_port()
    proc = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                if redis_command(port, "PING") == "+PONG":
                    break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        yield port
    finally:
        stop_process(proc)
    assert proc.poll() is not None


def profile_at(directory, port):
    target = json.loads((REPO / "targets" / "cpu.json").read_text())
    target.update(name="cpu_redis", redis_cache={"host": "127.0.0.1", "port": port})
    path = directory / "cpu_redis.json"
    path.write_text(json.dumps(target))
    return path


def test_a_second_sweep_hits_the_redis_remote_cache_the_first_filled(compatlab_bin, tmp_path, redis_port):
    profile = profile_at(tmp_path, redis_port)
    rows = []
    for name in ("first", "second"):
        cli = Compatlab(compatlab_bin, tmp_path / name)
        cli.workdir.mkdir()
        db = cli.workdir / "store.db"
        _, proc = cli.sweep(*TINY_COMPILED, "--targets", profile, "--db", db, timeout=300)
        (row,) = cli.runs(db)
        assert row["status"] == "pass", (proc.stderr[-2000:], row["error_message"][-2000:])
        rows.append(row)
        if name == "first":
            keys = int(redis_command(redis_port, "DBSIZE").lstrip(":"))
            assert keys > 0  # the first sweep's FX graph (and AOTAutograd) entries
    first, second = rows
    assert first["fx_graph_cache_misses"] > 0 and first["fx_graph_remote_cache_misses"] > 0
    assert first["fx_graph_remote_cache_hits"] == 0
    # The second sweep's local cache is new: its hits came from the server.
    assert second["fx_graph_remote_cache_hits"] > 0, second
    assert second["fx_graph_cache_misses"] == 0 and second["prepare_state"] == "model-cold"
    assert not live_processes(cli.marker)
