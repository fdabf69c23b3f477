"""Sweeps that build real (tiny) models: the ci suite, a local checkpoint, parallel jobs."""

import re
import subprocess

SAVE_TINY_LLAMA = """
import sys
from transformers import LlamaConfig, LlamaForCausalLM
config = LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=4, intermediate_size=128, vocab_size=1000,
                     max_position_embeddings=128)
LlamaForCausalLM(config).save_pretrained(sys.argv[1])
"""
METRICS = ["build_s", "prepare_s", "steady_median_s", "steady_p90_s", "steady_iters",
           "param_count", "host_peak_rss_bytes", "torch_num_threads"]
STACK = ["torch_version", "transformers_version", "python_version"]


def intervals_overlap(a, b):
    # ISO 8601 UTC timestamps of one format compare as strings.
    return a["started_at"] < b["finished_at"] and b["started_at"] < a["finished_at"]


def test_ci_suite_passes(cli, db):
    # Python reports every import on stderr: a test child must import no
    # modelling module, since the zygote preloaded them before forking.
    cli.env["PYTHONPROFILEIMPORTTIME"] = "1"
    sweep_id, _ = cli.sweep("--suite", "ci", "--db", db)
    rows = cli.runs(db)
    for row in rows:
        imported = [line for line in row["stderr_tail"].splitlines() if "modeling_" in line]
        assert imported == [], (row["model_type"], imported[-3:])
    assert [r["model_type"] for r in rows] == ["gpt2", "bert", "vit"]
    for row in rows:
        assert row["status"] == "pass", (row["model_type"], row["error_message"])
        assert row["sweep_id"] == sweep_id
        assert [m for m in METRICS if row[m] is None] == [], row["model_type"]
        assert [s for s in STACK if not row[s]] == [], row["model_type"]
        assert row["steady_iters"] >= 10
        assert row["param_count"] > 0 and row["host_peak_rss_bytes"] > 0


def test_checkpoint_runs_through_model_path(cli, db, tmp_path, venv_python):
    ckpt = tmp_path / "tiny-llama"
    subprocess.run([venv_python, "-c", SAVE_TINY_LLAMA, str(ckpt)], env=cli.env, check=True,
                   capture_output=True, timeout=120)

    cli.sweep("--model-path", ckpt, "--modes", "eager", "--db", db)

    [row] = cli.runs(db)
    assert row["status"] == "pass", row["error_message"]
    assert re.fullmatch(r"ckpt:[0-9a-f]{64}", row["model_id"]), row["model_id"]
    assert row["model_path"] == str(ckpt)
    assert row["model_type"] == "llama"


def test_jobs_two_runs_tests_concurrently(cli, db):
    suite = cli.write_suite("noops-and-gpt2", models=["gpt2"], seq_lens=[16],
                            tests=[{"kind": "noop", "repeat": 20}])

    cli.sweep("--suite", suite, "--jobs", "2", "--db", db)

    rows = cli.runs(db)
    assert len(rows) == 21
    assert {r["status"] for r in rows} == {"pass"}
    assert {r["jobs"] for r in rows} == {2}
    assert any(intervals_overlap(a, b) for i, a in enumerate(rows) for b in rows[i + 1:])
    [model] = [r for r in rows if r["model_type"] == "gpt2"]
    # A reduced model is timed with one intra-op thread (doc/probe.md, "Steady state: threads");
    # its compiler takes the cores compatlab may use (its affinity mask), shared between the jobs.
    assert model["torch_num_threads"] == 1
