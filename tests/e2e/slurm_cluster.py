"""A real one-node Slurm cluster for the tests, from Debian's slurmctld, slurmd and munge
(scripts/setup-debian.sh installs them).

Everything lives in a temporary directory: a munge key of its own and a munged on its own
socket, slurm.conf (select/cons_tres, proctrack/linuxproc, task/none, the node line from
`slurmd -C`), the state and spool directories, the logs. `stop()` cancels every job and
stops every daemon it started, whatever happened.
"""

import os
import pathlib
import re
import socket
import subprocess
import time

from .conftest import stop_process


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_line():
    """`slurmd -C`'s node line with the node's address pinned to 127.0.0.1."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("NodeName="))
    return f"{line} NodeAddr=127.0.0.1 State=UNKNOWN", line.split()[0].split("=", 1)[1]


class SlurmCluster:
    def __init__(self, root):
        self.root = pathlib.Path(root)
        self.daemons = []
        self.env = dict(os.environ)

    def _write_config(self):
        node, name = node_line()
        (self.root / "state").mkdir()
        (self.root / "spool").mkdir()
        conf = self.root / "slurm.conf"
        conf.write_text("\n".join([
            "ClusterName=compatlab",
            f"SlurmctldHost={name}(127.0.0.1)",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            # cred_expire: also how long a requeued job waits before it may start again
            # (the default 120 s would hold a requeued test task for two minutes).
            f"AuthInfo=socket={self.munge_socket},cred_expire=10",
            f"StateSaveLocation={self.root / 'state'}",
            f"SlurmdSpoolDir={self.root / 'spool'}",
            f"SlurmctldPidFile={self.root / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.root / 'slurmd.pid'}",
            f"SlurmctldLogFile={self.root / 'slurmctld.log'}",
            f"SlurmdLogFile={self.root / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=sched_interval=1,bf_interval=1",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "ReturnToService=2",
            "JobRequeue=1",
            "MinJobAge=3600",
            "KillWait=5",
            "InactiveLimit=0",
            node,
            f"PartitionName=main Nodes={name} Default=YES MaxTime=INFINITE State=UP",
            "",
        ]))
        self.env["SLURM_CONF"] = str(conf)
        return conf

    def _start_munge(self):
        munge = self.root / "munge"
        munge.mkdir(mode=0o700)
        key = munge / "munge.key"
        subprocess.run(["mungekey", "-c", "-k", str(key)], check=True, capture_output=True)
        self.munge_socket = munge / "munge.socket"
        self._daemon(["munged", "-F", "-f", f"--socket={self.munge_socket}", f"--key-file={key}",
                      f"--log-file={munge / 'munged.log'}", f"--pid-file={munge / 'munged.pid'}",
                      f"--seed-file={munge / 'munged.seed'}"], "munged")
        self._wait(lambda: self.munge_socket.exists(), 10, "munged's socket")

    def _daemon(self, argv, name):
        log = open(self.root / f"{name}.out", "w")
        proc = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.daemons.append(proc)
        return proc

    def _wait(self, predicate, timeout_s, what):
        deadline = time.monotonic() + timeout_s
        while not predicate():
            for proc in self.daemons:
                if proc.poll() is not None:
                    raise RuntimeError(f"{proc.args[0]} exited {proc.returncode} while waiting "
                                       f"for {what}:\n{self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {what} after {timeout_s} s:\n{self.logs()}")
            time.sleep(0.2)

    def logs(self):
        text = ""
        for path in sorted(self.root.glob("*.log")) + sorted(self.root.glob("*.out")):
            text += f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}\n"
        return text

    def command(self, *argv, check=True, timeout=60):
        """Runs a Slurm client command against this cluster; returns its stdout."""
        proc = subprocess.run(list(argv), env=self.env, capture_output=True, text=True,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{argv} exited {proc.returncode}: {proc.stderr}")
        return proc.stdout

    def start(self):
        self._start_munge()
        conf = self._write_config()
        self._daemon(["slurmctld", "-D", "-i", "-f", str(conf)], "slurmctld")
        self._daemon(["slurmd", "-D", "-f", str(conf)], "slurmd")

        def idle():
            out = self.command("sinfo", "--noheader", "--format=%T", check=False)
            return out.strip() == "idle"
        self._wait(idle, 60, "idle node")
        return self

    def jobs(self):
        """`squeue --states=all` rows: (job id, name, state, reason), finished jobs included."""
        out = self.command("squeue", "--states=all", "--noheader", "--array",
                           "--format=%i|%j|%T|%r")
        return [tuple(line.split("|")) for line in out.splitlines() if line.strip()]

    def wait_jobs_done(self, timeout_s):
        active = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING",
                  "SUSPENDED", "REQUEUE_HOLD", "REQUEUE_FED"}
        self._wait(lambda: not [j for j in self.jobs() if j[2] in active], timeout_s,
                   "the end of every job")

    def stop(self):
        """Cancels every job, then stops slurmd, slurmctld and munged (TERM, then KILL)."""
        try:
            if any(p.poll() is None for p in self.daemons):
                self.command("scancel", "--full", "--user=root", check=False, timeout=20)
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline:
                    out = self.command("squeue", "--noheader", check=False, timeout=10)
                    if not out.strip():
                        break
                    time.sleep(0.5)
        except (OSError, subprocess.SubprocessError, RuntimeError):
            pass
        for proc in reversed(self.daemons):
            stop_process(proc)


def job_ids(text):
    """The job ids `compatlab slurm --submit` printed (array job, merge job)."""
    match = re.search(r"array job (\d+) .*merge job (\d+)", text)
    assert match, text
    return match.group(1), match.group(2)
