"""Published datasets through huggingface_hub's real upload and download code
(compatlab_probe.hub_dataset) against the stand-in Hub API on 127.0.0.1, hf_xet off."""

import json
import os
import subprocess
import sys

PROBE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def helper(args, env):
    proc = subprocess.run([sys.executable, "-m", "compatlab_probe.hub_dataset", *args], env=env,
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr


def dataset_dir(root, files):
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


FILES = {"README.md": b"---\nlicense: mit\n---\n# d\n", "torch-1/transformers-2.parquet": b"PAR1 one",
         "torch-3/transformers-4.parquet": b"PAR1 two"}


def test_publish_uploads_the_dataset_files_and_download_reads_them_back(standin_hub, tmp_path):
    server, env = standin_hub
    folder = dataset_dir(tmp_path / "out", {**FILES, "notes.txt": b"private"})
    code, answer, err = helper(["publish", str(folder), "--repo", "org/results"], env)
    assert code == 0, (answer, err)
    assert server.datasets["org/results"]["main"] == FILES  # the card and Parquet files only
    assert answer["commit"] == server.dataset_commit("org/results")
    assert answer["files"] == sorted(FILES)
    # Again onto a branch: the repo exists (exist_ok), the branch is made.
    (folder / "README.md").write_bytes(b"---\nlicense: mit\n---\n# v2\n")
    code, answer, err = helper(["publish", str(folder), "--repo", "org/results", "--revision", "v2"], env)
    assert code == 0, (answer, err)
    assert server.datasets["org/results"]["v2"]["README.md"].endswith(b"# v2\n")
    assert server.datasets["org/results"]["main"] == FILES
    code, answer, err = helper(["download", "org/results@v2"], env)
    assert code == 0, (answer, err)
    assert answer["commit"] == server.dataset_commit("org/results", "v2")
    assert answer["path"].startswith(str(tmp_path / "cache"))
    for name in FILES:
        assert open(os.path.join(answer["path"], name), "rb").read() == (folder / name).read_bytes()
    assert not os.path.exists(os.path.join(answer["path"], "notes.txt"))


def test_errors_are_one_line_answers(standin_hub, tmp_path):
    _, env = standin_hub
    assert helper(["download", "org/../x"], env)[:2] == (2, {"error": "'org/../x': the repo id is not ORG/NAME"})
    code, answer, _ = helper(["download", "org/missing"], env)
    assert code == 1 and answer == {"error": "dataset org/missing not found on the Hub (or private)"}
    code, answer, _ = helper(["publish", str(tmp_path), "--repo", "org/x"], env)
    assert code == 1 and "no README.md" in answer["error"]
