"""A model id compatlab prints is accepted back where a model is named: hf:TYPE copied from
`matrix` into `sweep --models` and `--baseline` (planned exactly as TYPE, also on --resume),
and `compare --base` (and serve's /api/compare) by the id or the bare type."""

import http.client
import json
import re
import urllib.parse

from .conftest import Compatlab

# One quick test per model: what is checked is where the rows go, not the figures.
QUICK = ("--kinds", "forward", "--modes", "eager", "--seq-lens", "16", "--max-measure-s", "0")


def test_an_hf_id_from_the_matrix_names_the_model_in_sweep_resume_and_compare(
        compatlab_bin, tmp_path):
    cli = Compatlab(compatlab_bin, tmp_path)
    first, second = tmp_path / "first.db", tmp_path / "second.db"
    first_id, _ = cli.sweep("--models", "llama", *QUICK, "--db", first)
    table = cli.run("matrix", "--db", first)
    assert table.returncode == 0, table.stderr
    model_id = re.search(r"\bhf:llama\b", table.stdout).group(0)  # as a user copies it

    second_id, _ = cli.sweep("--models", "hf:gpt2", "--baseline", model_id, *QUICK, "--db", second)
    rows = cli.runs(second)
    assert sorted(r["model_id"] for r in rows) == ["hf:gpt2", "hf:llama"], rows
    # Planned exactly as --models llama: the same test.
    assert [r["test_id"] for r in rows if r["model_id"] == "hf:llama"] == [
        r["test_id"] for r in cli.runs(first)]
    # A resume takes the ids as the plan's flags (a finished sweep: nothing left to run).
    resumed = cli.run("sweep", "--resume", second_id, "--db", second, "--models", "gpt2",
                      "--baseline", model_id, *QUICK)
    assert resumed.returncode == 0, resumed.stderr
    resumed = cli.run("sweep", "--resume", first_id, "--db", first, "--models", model_id)
    assert resumed.returncode == 0, resumed.stderr

    for base in (model_id, "llama", "model=llama"):
        report = cli.run("compare", "--db", second, "--base", base, "--head", "hf:gpt2",
                         "--format", "json")
        assert report.returncode == 0, (base, report.stderr)
        out = json.loads(report.stdout)
        assert out["base"] == "model=hf:llama" and out["compared"] == 1, (base, out)
    unknown = cli.run("compare", "--db", second, "--base", "lama", "--head", "hf:gpt2")
    assert unknown.returncode == 2
    assert "--base lama: no runs of sweep lama or of hf:lama" in unknown.stderr, unknown.stderr
    for status, body in served_compare(cli, second, (model_id, "llama", "model=llama")):
        assert status == 200 and body["base"] == "model=hf:llama", body
    # The run filters take either spelling (true before hf: ids were accepted too: --model
    # matches a substring; kept so that the two spellings stay equal there).
    for name in (model_id, "llama"):
        assert {r["model_id"] for r in cli.runs(second, "--model", name)} == {"hf:llama"}


def served_compare(cli, db, bases):
    """serve's /api/compare of each of `bases` against hf:gpt2: (status, body) each."""
    proc = cli.popen("serve", "--db", db, "--port", "0")
    try:
        line = proc.stderr.readline()
        port = int(re.search(r"on http://127\.0\.0\.1:(\d+)/", line).group(1))
        answers = []
        for base in bases:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", f"/api/compare?base={urllib.parse.quote(base)}&head=hf%3Agpt2")
            res = conn.getresponse()
            answers.append((res.status, json.loads(res.read())))
            conn.close()
        proc.terminate()
        assert proc.wait(timeout=30) == 0
        return answers
    finally:
        cli.close(proc)
