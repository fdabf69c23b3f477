"""The compile store's Hub remote (compatlab_probe.compile_hub) through huggingface_hub's real
upload and download code against the stand-in Hub API on 127.0.0.1, hf_xet off: push of
checked entries, their keys, and a pull of the named ones only."""

import json
import os
import subprocess
import sys

PROBE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A, B = "a" * 64, "b" * 64


def helper(args, env):
    proc = subprocess.run([sys.executable, "-m", "compatlab_probe.compile_hub", *args], env=env,
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr


def entries(root):
    files = {}
    for entry in (A, B):
        for name, data in (("key.json", entry.encode()), ("entry.json", b"{}"),
                           ("artifacts.bin", b"\x00bundle"), ("kernels/ab/cabc.so", b"\x7fELF")):
            path = root / entry / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            files[f"entries/{entry}/{name}"] = data
    (root / "notes.txt").write_bytes(b"not an entry")
    return files


def test_push_then_keys_then_pull_of_one_entry(standin_hub, tmp_path):
    server, env = standin_hub
    files = entries(tmp_path / "up")
    code, answer, err = helper(["push", "--repo", "org/compile-cache", "--dir", str(tmp_path / "up")], env)
    assert code == 0, (answer, err)
    assert answer["entries"] == 2
    assert server.datasets["org/compile-cache"]["main"] == files  # the entries only
    code, answer, err = helper(["keys", "--repo", "org/compile-cache", "--dir", str(tmp_path / "keys")], env)
    assert code == 0, (answer, err)
    got = sorted(p.relative_to(tmp_path / "keys").as_posix() for p in (tmp_path / "keys").rglob("*")
                 if p.is_file() and ".cache" not in p.parts)
    assert got == [f"entries/{e}/{n}" for e in (A, B) for n in ("entry.json", "key.json")]
    code, answer, err = helper(["pull", "--repo", "org/compile-cache", "--dir", str(tmp_path / "down"), B], env)
    assert code == 0, (answer, err)
    got = sorted(p.relative_to(tmp_path / "down").as_posix() for p in (tmp_path / "down").rglob("*")
                 if p.is_file() and ".cache" not in p.parts)
    assert got == sorted(f for f in files if f.startswith(f"entries/{B}/"))


def test_a_malformed_id_or_repository_is_refused_before_any_request(standin_hub, tmp_path):
    server, env = standin_hub
    code, answer, _ = helper(["pull", "--repo", "org/x", "--dir", str(tmp_path), "../../etc"], env)
    assert code == 2 and "64 hex digits" in answer["error"]
    code, answer, _ = helper(["keys", "--repo", "../x", "--dir", str(tmp_path)], env)
    assert code == 2
    assert server.requests == []
