"""Fixtures for the end-to-end tests: they drive the real `compatlab` binary.

The binary is $COMPATLAB_BIN, else <repo>/build/compatlab. Every command runs
in a temporary directory with the hub offline and with a marker variable of its
own (COMPATLAB_E2E_RUN), so that a test can find every process a command left
behind, the supervisor and its guardian included, by scanning /proc/*/environ.
"""

import json
import os
import pathlib
import re
import subprocess
import sys
import time
import uuid

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
SWEEP_LINE = re.compile(r"^compatlab: sweep (\S+): ", re.M)
MARKER = "COMPATLAB_E2E_RUN"


def stop_process(proc, timeout_s=10):
    """Stops a server the test started: TERM, then KILL after timeout_s; reaped either way."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def live_processes(*entries):
    """Pids of live (non-zombie) processes whose environment holds one of `entries`
    ("NAME=value" strings), other than this one."""
    wanted = {e.encode() for e in entries}
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = set(f.read().split(b"\0"))
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError):
            continue
        if state not in (b"Z", b"X") and environ & wanted:
            found.append(int(name))
    return found


class Compatlab:
    """Runs the binary; each instance belongs to one test and its tmp directory."""

    def __init__(self, binary, workdir):
        self.binary = binary
        self.workdir = workdir
        self.marker = f"{MARKER}={uuid.uuid4().hex}"
        self.env = dict(os.environ)
        # Each test's compile store is its own (doc/compile-cache.md), not the project's.
        self.env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                         "COMPATLAB_COMPILE_STORE": str(workdir / "compile-store"),
                         MARKER: self.marker.split("=", 1)[1]})

    @staticmethod
    def command(args):
        """The argument list of `compatlab ARGS`: a sweep measures no noisy test again unless
        the test asks (`--remeasure-noisy`): on a machine busy with the other tests it would
        wait up to a minute for quiet (issue 46)."""
        args = [str(a) for a in args]
        if args[:1] == ["sweep"] and "--help" not in args and "--remeasure-noisy" not in args:
            args += ["--remeasure-noisy", "0"]
        return args

    def run(self, *args, timeout=300):
        """Runs `compatlab ARGS` to the end; returns the CompletedProcess (text)."""
        return subprocess.run([self.binary, *self.command(args)], cwd=self.workdir, env=self.env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout)

    def popen(self, *args):
        """Starts `compatlab ARGS` with stdout and stderr piped (no tty)."""
        return subprocess.Popen([self.binary, *self.command(args)], cwd=self.workdir, env=self.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def sweep(self, *args, timeout=300):
        """Runs `compatlab sweep ARGS`, requires exit 0; returns (sweep_id, CompletedProcess)."""
        proc = self.run("sweep", *args, timeout=timeout)
        assert proc.returncode == 0, f"sweep {args} exited {proc.returncode}:\n{proc.stderr[-4000:]}"
        return self.sweep_id_of(proc.stderr), proc

    @staticmethod
    def close(proc):
        """Kills `proc` (from popen) if it still runs, reaps it and closes its pipes."""
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
        proc.stdout.close()

    @staticmethod
    def sweep_id_of(stderr):
        """The id in the "compatlab: sweep ID: ..." line a new sweep prints on stderr."""
        match = SWEEP_LINE.search(stderr)
        assert match, f"no 'compatlab: sweep ID: ...' line on stderr:\n{stderr[-2000:]}"
        return match.group(1)

    def write_suite(self, name, **suite):
        """Writes suite file NAME.json (doc/suites.md) in the workdir; returns its path."""
        path = self.workdir / f"{name}.json"
        path.write_text(json.dumps({"name": name, **suite}))
        return str(path)

    def write_test_backend_profile(self, name, backend):
        """Writes target profile NAME.json in the workdir: the cpu profile compiling with the
        test-only backend `backend` ("module:function" of tests/e2e) at static shapes; returns
        its path."""
        profile = json.loads((REPO / "targets" / "cpu.json").read_text())
        profile.update(name=name, description=f"cpu, compiled by tests/e2e's {backend}", pythonpath=["tests/e2e"])
        profile["compile"] = {"backend": backend, "options": {"dynamic": False}}
        path = self.workdir / f"{name}.json"
        path.write_text(json.dumps(profile))
        return path

    def runs(self, db, *args):
        """The rows of `compatlab runs --db DB --format json ARGS`, in stored order."""
        proc = self.run("runs", "--db", db, "--format", "json", *args)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    def leftovers(self, sweep_id=None):
        """Live processes started by this test's commands, or carrying `sweep_id`."""
        entries = [self.marker] + ([f"COMPATLAB_SWEEP_ID={sweep_id}"] if sweep_id else [])
        return live_processes(*entries)


@pytest.fixture(scope="session")
def compatlab_bin():
    path = os.environ.get("COMPATLAB_BIN") or str(REPO / "build" / "compatlab")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no compatlab binary at {path}: build it (make build) or set COMPATLAB_BIN")
    return path


@pytest.fixture
def cli(compatlab_bin, tmp_path):
    return Compatlab(compatlab_bin, tmp_path)


@pytest.fixture
def db(tmp_path):
    """Path of a store that does not exist yet."""
    return tmp_path / "store.db"


@pytest.fixture(scope="session")
def noop_store(compatlab_bin, tmp_path_factory):
    """A finished store holding one sweep of one noop test; copy it before writing to it."""
    tmp = tmp_path_factory.mktemp("noop-store")
    path = tmp / "noop.db"
    cli = Compatlab(compatlab_bin, tmp)
    cli.sweep("--suite", cli.write_suite("one-noop", tests=[{"kind": "noop"}]), "--db", path)
    assert not (tmp / "noop.db-wal").exists()
    return path


@pytest.fixture(scope="session")
def venv_python():
    return str(VENV_PYTHON if VENV_PYTHON.exists() else sys.executable)


@pytest.fixture
def wait_until():
    """wait_until(predicate, timeout_s): polls until it is true; returns its last value."""
    def wait(predicate, timeout_s, interval_s=0.1):
        deadline = time.monotonic() + timeout_s
        while True:
            value = predicate()
            if value or time.monotonic() > deadline:
                return value
            time.sleep(interval_s)
    return wait
