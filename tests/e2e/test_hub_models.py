"""Hub models end to end (`--models hub:ORG/NAME[@REV]`, `--size`, `--heads`, `hub-list`):
the real binary against a stand-in Hub API on 127.0.0.1 (HF_ENDPOINT; HF_HUB_OFFLINE unset
for these commands only), then the Hub cache it filled, offline. One server for the module,
tiny configs, forward in eager mode; the long runs are marked slow."""

import json
import os
import sys

import pytest

from .conftest import REPO, Compatlab

sys.path[:0] = [str(REPO / "probe" / "tests"), str(REPO / "probe")]
import hubfake  # noqa: E402

DECODER, MOE, ENCODER = "hub:testorg/tiny-decoder", "hub:testorg/tiny-moe", "hub:testorg/tiny-encoder"
MISSING, GATED = "hub:testorg/missing", "hub:testorg/gated"


@pytest.fixture(scope="module")
def stand_in():
    repos = {r: hubfake.repo_files(c) for r, c in hubfake.REPOS.items()}
    server = hubfake.StandInHub(repos, gated=("testorg/gated",), listing=[
        {"id": "testorg/tiny-decoder", "pipeline_tag": "text-generation", "downloads": 10, "trendingScore": 1},
        {"id": "testorg/tiny-moe", "pipeline_tag": "text-generation", "downloads": 5, "trendingScore": 9},
        {"id": "legacy-no-org", "pipeline_tag": "text-generation", "downloads": 1, "trendingScore": 0},
    ])
    yield server
    server.close()


def online(cli, server, cache):
    cli.env.pop("HF_HUB_OFFLINE", None)
    cli.env.pop("TRANSFORMERS_OFFLINE", None)
    cli.env.update(HF_ENDPOINT=server.url, HF_HUB_CACHE=str(cache))
    return cli


@pytest.fixture(scope="module")
def swept(stand_in, compatlab_bin, tmp_path_factory):
    """One sweep of the three test repos, a missing and a gated one, reduced, eager forward."""
    work = tmp_path_factory.mktemp("hub")
    cli = online(Compatlab(compatlab_bin, work), stand_in, work / "cache")
    db = work / "hub.db"
    cli.sweep("--suite", "smoke", "--models", ",".join([DECODER, MOE, ENCODER, MISSING, GATED]),
              "--kinds", "forward", "--modes", "eager", "--db", db, timeout=900)
    rows = {r["model_id"].split("@")[0]: r for r in cli.runs(db)}
    return cli, db, work, rows


def test_hub_models_run_at_their_commit_reduced(swept, stand_in):
    _, _, _, rows = swept
    for spec in (DECODER, MOE, ENCODER):
        row = rows[spec]
        commit = stand_in.commit(spec[4:])
        assert row["status"] == "pass", (spec, row["status_detail"], row["error_message"])
        assert row["model_id"] == f"{spec}@{commit}" and row["hub_commit"] == commit
        assert row["model_source"] == "hub" and row["hub_repo_id"] == spec[4:]
        assert row["reduced"] == 1 and "hidden_size" in row["reduction"] and len(row["config_hash"]) == 64
        assert row["param_count"] > 0
    assert rows[DECODER]["model_type"] == "qwen2" and rows[MOE]["model_class"] == "Qwen3MoeForCausalLM"


def test_a_missing_or_gated_repo_is_fail_to_load_with_the_reason(swept):
    _, _, _, rows = swept
    assert rows[MISSING]["status"] == "fail_to_load"
    assert "testorg/missing not found" in rows[MISSING]["status_detail"]
    assert rows[MISSING]["model_id"] == f"{MISSING}@main"
    assert rows[GATED]["status"] == "fail_to_load" and "gated repo" in rows[GATED]["status_detail"]


def test_query_by_hub_id_matches_every_commit(swept):
    cli, db, _, _ = swept
    found = cli.runs(db, "--model", "hub:testorg/TINY-decoder")
    assert [r["model_id"].split("@")[0] for r in found] == [DECODER]


def test_full_size_from_the_cache_offline_has_the_count_the_config_implies(swept, stand_in):
    cli, _, work, rows = swept
    cli.env["HF_HUB_OFFLINE"] = "1"
    cli.env["HF_ENDPOINT"] = "http://127.0.0.1:9"  # nothing listens: only the cache can answer
    db = work / "full.db"
    cli.sweep("--suite", "smoke", "--models", DECODER, "--size", "full", "--kinds", "forward", "--modes", "eager",
              "--dtypes", "bfloat16", "--db", db, timeout=900)
    (row,) = cli.runs(db)
    c = hubfake.DECODER
    h, layers, heads, kv, inter, vocab = (c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"],
                                          c["num_key_value_heads"], c["intermediate_size"], c["vocab_size"])
    hd = h // heads
    attention = h * heads * hd + heads * hd + 2 * (h * kv * hd + kv * hd) + heads * hd * h  # qwen2: qkv biases
    implied = 2 * vocab * h + layers * (attention + 3 * h * inter + 2 * h) + h  # untied embeddings
    assert row["status"] == "pass", row["error_message"]
    assert row["reduced"] == 0 and "full size" in row["reduction"] and row["param_count"] == implied
    assert row["model_id"] == rows[DECODER]["model_id"] and row["dtype"] == "bfloat16"


def test_hub_list_writes_a_suite_and_an_unreachable_hub_is_one_line_exit_1(stand_in, cli, tmp_path):
    online(cli, stand_in, tmp_path / "cache")
    out = tmp_path / "top.json"
    proc = cli.run("hub-list", "--task", "text-generation", "--sort", "downloads", "--limit", "3", "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text()) == {"name": "hub-list", "models": [DECODER, MOE]}
    cli.env["HF_ENDPOINT"] = "http://127.0.0.1:9"
    proc = cli.run("hub-list", "--limit", "3")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "cannot be reached" in proc.stderr


def test_bad_hub_ids_and_sizes_are_exit_2(cli):
    for args in (["--models", "hub:no-org"], ["--models", "hub:a/b@.."], ["--models", "llama", "--size", "huge"],
                 ["--models", "llama", "--weights"]):
        proc = cli.run("sweep", "--suite", "smoke", "--kinds", "forward", "--db", "x.db", *args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, (args, proc.stderr)
    proc = cli.run("sweep", "--suite", "smoke", "--kinds", "forward", "--db", "x.db", "--models", "Qwen/Qwen3-0.6B")
    assert proc.returncode == 2 and "--models hub:Qwen/Qwen3-0.6B" in proc.stderr
    assert not os.path.exists(cli.workdir / "x.db")


@pytest.mark.slow
def test_heads_all_runs_every_head_class_of_bert_and_gpt2(cli):
    db = cli.workdir / "heads.db"
    cli.sweep("--suite", "smoke", "--models", "bert,gpt2", "--heads", "all", "--kinds", "forward", "--modes", "eager",
              "--db", db, timeout=1800)
    rows = cli.runs(db)
    from compatlab_probe.models import heads

    expected = {(t, c) for t in ("bert", "gpt2") for c in heads.head_classes(t)}
    assert {(r["model_type"], r["model_class"]) for r in rows} == expected
    assert len({r["test_id"] for r in rows}) == len(rows)


# About 0.5 B parameters (Qwen3-0.6B's shape), written here: 596,049,920 parameters with the
# embeddings tied (embeddings 155,582,464 + 28 layers x 15,730,944 + the final norm 1,024).
HALF_BILLION = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024, "num_hidden_layers": 28,
    "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072,
    "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": True, "rms_norm_eps": 1e-6,
}


@pytest.mark.slow
def test_a_half_billion_decoder_runs_forward_at_full_size_in_bfloat16(cli):
    cache = cli.workdir / "cache"
    hubfake.write_cache(str(cache), "testorg/decoder-0.5b", hubfake.repo_files(HALF_BILLION))
    cli.env.update(HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1")
    db = cli.workdir / "half.db"
    cli.sweep("--models", "hub:testorg/decoder-0.5b", "--size", "full", "--dtypes", "bfloat16", "--modes",
              "eager,compile", "--kinds", "forward", "--mem-limit", "16G", "--timeout", "3000", "--db", db,
              timeout=7200)
    rows = cli.runs(db)
    assert [r["mode"] for r in rows] == ["eager", "compile"]
    for row in rows:
        assert row["status"] == "pass", (row["status_detail"], row["error_message"])
        assert row["param_count"] == 596_049_920 and row["reduced"] == 0
        print(f"{row['mode']}: build {row['build_s']:.1f} s, prepare {row['prepare_s']:.1f} s, steady "
              f"{row['steady_median_s']:.3f} s, peak RSS {row['host_peak_rss_bytes'] / 1e9:.2f} GB")
