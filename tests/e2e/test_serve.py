"""`compatlab serve` end to end: the real binary on a real store, over HTTP.

Bad input exits 2 with one line and creates nothing; the API answers JSON
errors (404, 400), sends a Content-Security-Policy, serves no file outside
web/, and leaves the store's bytes as they were.
"""

import hashlib
import http.client
import json
import re
import shutil
import socket

import pytest


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def served(cli, noop_store):
    """A server on a copy of the noop store: (connection factory, store path)."""
    store = cli.workdir / "served.db"
    shutil.copy(noop_store, store)
    proc = cli.popen("serve", "--db", store, "--port", "0")
    line = proc.stderr.readline()
    match = re.search(r"on http://127\.0\.0\.1:(\d+)/", line)
    assert match, line + proc.stderr.read() if proc.poll() is not None else line
    port = int(match.group(1))
    yield (lambda: http.client.HTTPConnection("127.0.0.1", port, timeout=30)), store
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def get(connect, path):
    conn = connect()
    conn.request("GET", path)
    res = conn.getresponse()
    body = res.read()
    conn.close()
    return res.status, dict(res.getheaders()), body


def test_missing_store_is_bad_input_and_not_created(cli):
    proc = cli.run("serve", "--db", cli.workdir / "missing.db", "--port", "0")
    assert proc.returncode == 2
    assert re.fullmatch(r"compatlab: error: .*missing\.db.*\n", proc.stderr), proc.stderr
    assert not (cli.workdir / "missing.db").exists()


def test_a_file_that_is_no_store_is_bad_input(cli):
    junk = cli.workdir / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    before = sha256(junk)
    proc = cli.run("serve", "--db", junk, "--port", "0")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert sha256(junk) == before


def test_a_taken_port_is_bad_input(cli, noop_store):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        proc = cli.run("serve", "--db", noop_store, "--port", taken.getsockname()[1])
    assert proc.returncode == 2
    assert proc.stderr.startswith("compatlab: error: cannot listen on 127.0.0.1:"), proc.stderr


def test_bad_flag_values_are_bad_input(cli, noop_store):
    for args in (["--port", "70000"], ["--port", "http"], ["--colour", "red"]):
        proc = cli.run("serve", "--db", noop_store, *args)
        assert proc.returncode == 2, args
        assert proc.stderr.startswith("compatlab: error: "), proc.stderr


def test_api_errors_are_json_and_the_store_is_unchanged(served):
    connect, store = served
    before = sha256(store)
    status, headers, body = get(connect, "/api/health")
    assert status == 200 and json.loads(body)["runs"] == 1
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff"
    for path, code in [("/api/nope", 404), ("/nope.html", 404), ("/api/search?status=great", 400),
                       ("/api/search?limit=-1", 400), ("/api/search?sort=x", 400),
                       ("/api/model?model_id=hf%3Anone", 404), ("/api/repro?run_id=none", 404),
                       ("/api/diff?base=torch=1&head=x", 400)]:
        status, headers, body = get(connect, path)
        assert status == code, path
        assert headers["Content-Type"] == "application/json", path
        assert set(json.loads(body)) == {"error"}, path
        assert "Content-Security-Policy" in headers, path
    for _ in range(3):
        assert get(connect, "/api/search?limit=200")[0] == 200
        assert get(connect, "/api/summary")[0] == 200
        assert get(connect, "/api/errors")[0] == 200
    assert sha256(store) == before


def test_static_files_stay_in_their_folder(served):
    connect, _ = served
    status, headers, body = get(connect, "/")
    assert status == 200 and b"compatlab" in body
    assert "Content-Security-Policy" in headers
    for path in ["/../CMakeLists.txt", "/%2e%2e/CMakeLists.txt", "/..%2fCMakeLists.txt",
                 "/%2e%2e%2f%2e%2e%2fetc/passwd", "/vendor/../../CMakeLists.txt",
                 "/....//CMakeLists.txt"]:
        status, _, body = get(connect, path)
        assert status == 404, path
        assert b"cmake_minimum_required" not in body and b"root:" not in body, path


def test_a_harness_run_has_no_script(served):
    connect, _ = served
    page = json.loads(get(connect, "/api/search")[2])
    run_id = page["rows"][0][page["fields"].index("run_id")]
    status, _, body = get(connect, f"/api/repro?run_id={run_id}")
    assert status == 400
    assert "harness test" in json.loads(body)["error"]
