"""`compatlab serve` under hostile connections, with every timeout at 1 s.

Hundreds of slow-header, bodiless-POST or idle keep-alive connections leave a
normal client answered in under a second, and each of them is closed by its
deadline; the connection cap answers 503; a port in use, an empty host and a
limit out of range are bad input; a non-loopback address is warned about.
"""

import http.client
import json
import re
import resource
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

TIMEOUT_S = 1
MAX_CONNECTIONS = 700


@pytest.fixture(scope="module", autouse=True)
def enough_files():
    """Hundreds of sockets at once: the soft open-file limit raised to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def start_serve(binary, store, *args):
    """`compatlab serve --port 0 ARGS` on `store`: (process, port, first stderr line)."""
    proc = subprocess.Popen([binary, "serve", "--db", str(store), "--port", "0", *map(str, args)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    lines = []
    while True:
        line = proc.stderr.readline()
        assert line, "".join(lines) + proc.stderr.read()
        lines.append(line)
        if match := re.search(r"on http://[^ ]+:(\d+)/", line):
            return proc, int(match.group(1)), "".join(lines)


@pytest.fixture(scope="module")
def server(compatlab_bin, noop_store, tmp_path_factory):
    """One server with 1 s timeouts for the module: its port."""
    store = tmp_path_factory.mktemp("limits") / "served.db"
    shutil.copy(noop_store, store)
    proc, port, _ = start_serve(compatlab_bin, store, "--header-timeout", TIMEOUT_S,
                                "--body-timeout", TIMEOUT_S, "--idle-timeout", TIMEOUT_S,
                                "--max-connections", MAX_CONNECTIONS)
    yield port
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def timed_health(port):
    """GET /api/health on a new connection: (status, seconds)."""
    start = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/api/health")
    res = conn.getresponse()
    res.read()
    conn.close()
    return res.status, time.monotonic() - start


def open_sockets(port, count, first_bytes):
    sockets = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        if first_bytes:
            s.sendall(first_bytes)
        sockets.append(s)
    return sockets


def closed_by_server(sock, within_s):
    """Whether the server closes `sock` within `within_s` (what it sends is dropped)."""
    deadline = time.monotonic() + within_s
    try:
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            if not sock.recv(65536):
                return True
    except TimeoutError:
        return False
    except OSError:  # reset
        return True
    return False


def close_all(sockets):
    for s in sockets:
        s.close()


def test_slow_header_connections_leave_a_normal_client_answered(server):
    slow = open_sockets(server, 500, b"GET /api/health HTTP/1.1\r\nHost: x\r\n")
    try:
        worst = 0
        for _ in range(4):  # they keep trickling, a byte each 0.2 s
            for s in slow:
                try:
                    s.send(b"X")
                except OSError:
                    pass
            status, seconds = timed_health(server)
            assert status == 200
            worst = max(worst, seconds)
            time.sleep(0.2)
        assert worst < 1, f"a normal request took {worst:.3f} s beside 500 slow headers"
        # Trickling does not help: the header deadline runs from the first byte.
        assert all(closed_by_server(s, 2) for s in slow)
    finally:
        close_all(slow)


def test_bodiless_posts_leave_a_normal_client_answered(server):
    posts = open_sockets(server, 50, b"POST /api/health HTTP/1.1\r\nHost: x\r\n"
                                     b"Content-Length: 1000\r\n\r\n")
    try:
        status, seconds = timed_health(server)
        assert status == 200 and seconds < 1, seconds
        assert all(closed_by_server(s, 2 * TIMEOUT_S + 1) for s in posts)
    finally:
        close_all(posts)
    # A POST without Content-Length has no body: answered at once (no such route).
    conn = http.client.HTTPConnection("127.0.0.1", server, timeout=10)
    conn.putrequest("POST", "/api/health")
    conn.endheaders()
    res = conn.getresponse()
    assert res.status == 404 and set(json.loads(res.read())) == {"error"}
    conn.close()


def test_idle_keep_alives_leave_a_normal_client_answered(server):
    idle = open_sockets(server, 500, None)
    try:
        for s in idle:
            s.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n")
        for s in idle:  # each answered once, then left idle
            assert s.recv(65536).startswith(b"HTTP/1.1 200")
        status, seconds = timed_health(server)
        assert status == 200 and seconds < 1, seconds
        assert all(closed_by_server(s, TIMEOUT_S + 1.5) for s in idle)
    finally:
        close_all(idle)


def test_connections_past_the_cap_are_answered_503(server):
    # Wait for the other tests' connections to have closed.
    deadline = time.monotonic() + 5
    held = []
    try:
        while True:
            held = open_sockets(server, MAX_CONNECTIONS, None)
            conn = http.client.HTTPConnection("127.0.0.1", server, timeout=10)
            conn.request("GET", "/api/health")
            res = conn.getresponse()
            if res.status == 503 or time.monotonic() > deadline:
                break
            close_all(held)
            time.sleep(0.2)
        body = json.loads(res.read())
        assert res.status == 503, body
        assert f"limit of {MAX_CONNECTIONS} connections" in body["error"]
        assert res.getheader("Retry-After") == "1"
        assert "script-src 'self'" in res.getheader("Content-Security-Policy")
        conn.close()
    finally:
        close_all(held)
    # Once they are gone, the server answers again.
    time.sleep(0.2)
    assert timed_health(server)[0] == 200


def test_oversized_requests_are_json_errors(server):
    conn = http.client.HTTPConnection("127.0.0.1", server, timeout=10)
    conn.request("GET", "/api/health", headers={"X-Big": "a" * 20000})
    res = conn.getresponse()
    assert res.status == 431 and "header" in json.loads(res.read())["error"]
    conn.close()
    conn = http.client.HTTPConnection("127.0.0.1", server, timeout=10)
    conn.request("POST", "/api/health", body=b"x" * 70000)
    res = conn.getresponse()
    assert res.status == 413 and "body" in json.loads(res.read())["error"]
    conn.close()


def test_a_second_serve_on_the_same_port_exits_2(compatlab_bin, noop_store, server):
    proc = subprocess.run([compatlab_bin, "serve", "--db", noop_store, "--port", str(server)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (f"compatlab: error: cannot listen on 127.0.0.1:{server}: "
                           f"port {server} is in use\n")
    assert timed_health(server)[0] == 200  # the first one still serves


@pytest.mark.parametrize("args, says", [
    (["--host", ""], "the host is empty"),
    (["--header-timeout", "0"], "header timeout"),
    (["--idle-timeout", "1e9"], "idle timeout"),
    (["--max-connections", "0"], "connection limit"),
    (["--max-header-bytes", "10"], "header size limit"),
])
def test_bad_listen_arguments_are_one_line_and_exit_2(compatlab_bin, noop_store, args, says):
    proc = subprocess.run([compatlab_bin, "serve", "--db", noop_store, "--port", "0", *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("compatlab: error: ") and proc.stderr.count("\n") == 1
    assert says in proc.stderr


def test_every_interface_is_warned_about(compatlab_bin, noop_store):
    proc, port, said = start_serve(compatlab_bin, noop_store, "--host", "0.0.0.0")
    try:
        assert re.search(r"compatlab: warning: 0\.0\.0\.0 is not a loopback address", said), said
        assert timed_health(port)[0] == 200
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_the_event_loop_asks_for_the_shortest_time_slices(compatlab_bin, noop_store):
    """The event loop (the main thread) runs with 0.1 ms slices, the workers with the default.

    Under EEVDF a thread waking with a shorter slice preempts the running one, so
    requests and answers do not wait out the busy workers' slices (doc/api.md).
    """
    proc, port, _ = start_serve(compatlab_bin, noop_store, "--threads", 4)
    try:
        assert timed_health(port)[0] == 200
        slices = {}
        for task in Path(f"/proc/{proc.pid}/task").iterdir():
            match = re.search(r"^se\.slice\s*:\s*(\d+)$", (task / "sched").read_text(), re.M)
            if match is None:
                pytest.skip("this kernel reports no se.slice (EEVDF's, Linux 6.6 and later)")
            slices[int(task.name)] = int(match.group(1))
        assert slices.pop(proc.pid) == 100_000
        assert len(slices) >= 4 and 100_000 not in slices.values(), slices
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_the_server_allocates_through_tcmalloc(compatlab_bin, noop_store):
    """A build with COMPATLAB_TCMALLOC (the default) serves with tcmalloc mapped, not glibc's malloc.

    The pages' many short-lived strings and JSON values are what it is for
    (CMakeLists.txt); a linker that dropped the unreferenced library would
    leave the binary on glibc's allocator without a word.
    """
    cache = Path(compatlab_bin).parent / "CMakeCache.txt"
    if not cache.is_file() or "COMPATLAB_TCMALLOC:BOOL=ON" not in cache.read_text():
        pytest.skip(f"{compatlab_bin} is not a build with COMPATLAB_TCMALLOC=ON")
    proc, port, _ = start_serve(compatlab_bin, noop_store, "--threads", 2)
    try:
        assert timed_health(port)[0] == 200
        maps = Path(f"/proc/{proc.pid}/maps").read_text()
        assert "libtcmalloc_minimal.so" in maps
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0
