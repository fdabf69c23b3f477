"""A minimal Python supervisor for the zygote, speaking doc/worker-protocol.md.

Used by the tests: it becomes a child subreaper, starts the zygote with a
SOCK_SEQPACKET control socket (named by COMPATLAB_CONTROL_FD), sends messages, passes pipe descriptors
with SCM_RIGHTS, waits for the reported test child and reads its pipes.
"""

import json
import os
import socket
import subprocess
import sys

from compatlab_probe.host import osutil

PROBE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class FakeSupervisor:
    active = 0  # instances alive; the process is a subreaper while there is one

    def __init__(self, extra_env=None):
        osutil.set_child_subreaper()
        FakeSupervisor.active += 1
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = dict(os.environ, COMPATLAB_CONTROL_FD=str(child_sock.fileno()), PYTHONPATH=PROBE_DIR,
                   COMPATLAB_SUPERVISOR_PID=str(os.getpid()), **(extra_env or {}))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "compatlab_probe.worker.zygote"],
            stdin=subprocess.DEVNULL, env=env,
            pass_fds=(child_sock.fileno(),),
        )
        child_sock.close()
        self.sock = parent_sock
        self.sock.settimeout(120)

    def send(self, message, fds=()):
        data = json.dumps(message).encode()
        if fds:
            socket.send_fds(self.sock, [data], list(fds))
        else:
            self.sock.send(data)

    def receive(self):
        return json.loads(self.sock.recv(1 << 20))

    def preload(self, model_types):
        self.send({"type": "preload", "model_types": model_types})
        return self.receive()

    def run(self, test, request_id=1):
        """Forks `test`; returns (forked message, wait status, stdout, stderr, result bytes)."""
        pipes = [os.pipe() for _ in range(3)]
        test = dict(test, supervisor_pid=os.getpid())
        self.send({"type": "fork", "request_id": request_id, "test": test}, [w for _, w in pipes])
        for _, w in pipes:
            os.close(w)
        answer = self.receive()
        if answer.get("type") != "forked":
            for r, _ in pipes:
                os.close(r)
            return answer, None, b"", b"", b""
        _, status = os.waitpid(answer["pid"], 0)
        outputs = []
        for r, _ in pipes:
            os.set_blocking(r, False)
            chunks = []
            try:
                while chunk := os.read(r, 1 << 16):
                    chunks.append(chunk)
            except BlockingIOError:
                pass
            os.close(r)
            outputs.append(b"".join(chunks))
        return (answer, status, *outputs)

    def close(self):
        try:
            self.send({"type": "shutdown"})
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.sock.close()
            FakeSupervisor.active -= 1
            if not FakeSupervisor.active:
                osutil.set_child_subreaper(False)
