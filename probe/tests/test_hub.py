"""Hub models through huggingface_hub's real download and cache code (compatlab_probe.models.hub):
against a stand-in Hub API on 127.0.0.1 (HF_HUB_OFFLINE unset for that subprocess only)
and a Hub cache written in huggingface_hub's layout; the reduction's kept features."""

import json
import os
import subprocess
import sys

import hubfake
import pytest
import torch
from transformers import CONFIG_MAPPING

from compatlab_probe.models import factory, hub

PROBE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def resolver(args, env):
    proc = subprocess.run([sys.executable, "-m", "compatlab_probe.models.hub", *args], env=env,
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr


def hub_env(cache, endpoint=None, offline=False):
    env = dict(os.environ, PYTHONPATH=PROBE_DIR, HF_HUB_CACHE=str(cache))
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("TRANSFORMERS_OFFLINE", None)
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    if endpoint:
        env["HF_ENDPOINT"] = endpoint
    return env


@pytest.fixture(scope="module")
def stand_in():
    repos = {r: hubfake.repo_files(c) for r, c in hubfake.REPOS.items()}
    server = hubfake.StandInHub(repos, gated=("testorg/gated",), listing=[
        {"id": "testorg/tiny-decoder", "modelId": "testorg/tiny-decoder", "pipeline_tag": "text-generation",
         "downloads": 10, "trendingScore": 1},
        {"id": "testorg/tiny-moe", "modelId": "testorg/tiny-moe", "pipeline_tag": "text-generation",
         "downloads": 5, "trendingScore": 9},
    ])
    yield server
    server.close()


@pytest.fixture(scope="module")
def resolved(stand_in, tmp_path_factory):
    """One resolver run against the stand-in Hub: three repos, a missing one, a gated one."""
    cache = tmp_path_factory.mktemp("hubcache")
    specs = ["hub:testorg/tiny-decoder", "hub:testorg/tiny-moe@main", "hub:testorg/tiny-encoder",
             "hub:testorg/missing", "hub:testorg/gated"]
    code, out, err = resolver(["resolve", *specs], hub_env(cache, stand_in.url))
    assert code == 0, err
    return cache, out["models"]


def test_resolve_pins_the_commit_and_hashes_the_config(resolved, stand_in):
    cache, models = resolved
    dec = models["hub:testorg/tiny-decoder"]
    commit = stand_in.commit("testorg/tiny-decoder")
    assert dec["model_id"] == f"hub:testorg/tiny-decoder@{commit}" and dec["commit"] == commit
    config = hubfake.repo_files(hubfake.DECODER)["config.json"]
    import hashlib

    assert dec["config_hash"] == hashlib.sha256(config).hexdigest()
    assert dec["model_type"] == "qwen2" and dec["head_class"] == "Qwen2ForCausalLM"
    assert "Qwen2ForSequenceClassification" in dec["head_classes"]
    assert models["hub:testorg/tiny-moe@main"]["head_class"] == "Qwen3MoeForCausalLM"
    assert models["hub:testorg/tiny-encoder"]["head_kind"] == "masked_lm"
    snapshot = cache / "models--testorg--tiny-decoder" / "snapshots" / commit
    assert (snapshot / "config.json").is_symlink() and (snapshot / "generation_config.json").exists()


def test_a_missing_or_gated_repo_is_a_reason(resolved):
    _, models = resolved
    assert models["hub:testorg/missing"]["error"].startswith("repo testorg/missing not found")
    assert models["hub:testorg/missing"]["model_id"] == "hub:testorg/missing@main"
    assert models["hub:testorg/gated"]["error"].startswith("gated repo testorg/gated")


def test_the_cache_answers_offline_and_no_network_is_a_reason(resolved, tmp_path):
    cache, _ = resolved
    # A repo written by hand in huggingface_hub's cache layout, beside the downloaded ones.
    commit = hubfake.write_cache(str(cache), "testorg/cached", hubfake.repo_files(hubfake.ENCODER, generation=False))
    code, out, err = resolver(["resolve", "hub:testorg/tiny-decoder", "hub:testorg/elsewhere", "hub:testorg/cached",
                               f"hub:testorg/cached@{commit}"], hub_env(cache, "http://127.0.0.1:9", offline=True))
    assert code == 0, err
    models = out["models"]
    assert models["hub:testorg/tiny-decoder"]["model_type"] == "qwen2"
    assert "HF_HUB_OFFLINE=1" in models["hub:testorg/elsewhere"]["error"]
    assert models["hub:testorg/cached"]["commit"] == commit
    assert models[f"hub:testorg/cached@{commit}"]["model_type"] == "bert"
    code, out, err = resolver(["resolve", "hub:testorg/elsewhere"], hub_env(tmp_path, "http://127.0.0.1:9"))
    # One try tells the endpoint is unreachable (hub.unreachable), and says why: no retries.
    error = out["models"]["hub:testorg/elsewhere"]["error"]
    assert error.startswith("no network: the Hub (http://127.0.0.1:9) is unreachable (") and "Retrying" not in err


def test_list_writes_ids_by_sort_and_the_unreachable_hub_is_exit_1(stand_in, tmp_path):
    code, out, err = resolver(["list", "--task", "text-generation", "--sort", "trending", "--limit", "2"],
                              hub_env(tmp_path, stand_in.url))
    assert code == 0, err
    assert out["models"] == ["testorg/tiny-moe", "testorg/tiny-decoder"]
    code, out, _ = resolver(["list", "--limit", "1"], hub_env(tmp_path, "http://127.0.0.1:9"))
    assert code == 1 and "cannot be reached" in out["error"]


def test_a_bad_or_oversize_config_is_its_models_reason_never_an_exit(tmp_path):
    configs = {"bad/not-utf8": b'{"model_type": "gpt2", "x": "\xff"}',
               "bad/deep": b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
               "bad/huge": b'{"x": "' + b"x" * (hub.MAX_CONFIG_BYTES + 1) + b'"}',
               "bad/not-json": b'{"model_type": '}
    for repo, config in configs.items():
        hubfake.write_cache(str(tmp_path), repo, {"config.json": config})
    code, answer, stderr = resolver(["resolve", *(f"hub:{r}" for r in configs)],
                                    hub_env(tmp_path, offline=True))
    assert code == 0, stderr
    errors = {spec[4:]: model["error"] for spec, model in answer["models"].items()}
    assert "config.json is not UTF-8 (byte 29" in errors["bad/not-utf8"]
    assert "config.json is nested too deeply to parse" in errors["bad/deep"]
    assert f"over the limit of {hub.MAX_CONFIG_BYTES} (doc/limits.md)" in errors["bad/huge"]
    assert "config.json is not JSON" in errors["bad/not-json"]


def test_the_resolver_limits_what_it_allocates():
    code = ("import resource; from compatlab_probe.models import hub; hub.limit_memory(1 << 30); "
            "print(resource.getrlimit(resource.RLIMIT_DATA)[0]); bytearray(2 << 30)")
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=PROBE_DIR),
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == [str(1 << 30)] and "MemoryError" in proc.stderr, proc.stderr


def test_hub_ids_are_parsed_strictly():
    assert hub.parse_hub_id("hub:Qwen/Qwen3-0.6B") == ("Qwen/Qwen3-0.6B", "")
    assert hub.parse_hub_id("hub:a/b@v1.0") == ("a/b", "v1.0")
    for bad in ("hub:noslash", "hub:a/b/c", "hub:../x", "hub:a/b@..", "hf:llama"):
        with pytest.raises(hub.HubError):
            hub.parse_hub_id(bad)


# --------------------------------------------------------------------------- kept features


def reduced(config_dict):
    config = CONFIG_MAPPING[config_dict["model_type"]](**{k: v for k, v in config_dict.items() if k != "model_type"})
    return config, factory.reduce_given_config(config)


def test_reduction_keeps_the_gqa_ratio():
    original, small = reduced(hubfake.DECODER)
    assert small.hidden_size < original.hidden_size
    assert small.num_attention_heads // small.num_key_value_heads == 4  # 8:2 stays 4:1
    _, mqa = reduced(dict(hubfake.DECODER, num_key_value_heads=1))
    assert mqa.num_key_value_heads == 1
    _, mha = reduced(dict(hubfake.DECODER, num_key_value_heads=8))
    assert mha.num_attention_heads == mha.num_key_value_heads


def test_reduction_keeps_llama3_rope_scaling():
    original, small = reduced(hubfake.DECODER)
    assert small.rope_parameters == original.rope_parameters
    assert small.rope_parameters["rope_type"] == "llama3"


def test_reduction_keeps_a_sliding_window_that_acts():
    _, small = reduced(hubfake.DECODER)
    assert small.sliding_window == factory.TINY_WINDOW < 32  # shorter than the default sequence
    assert set(small.layer_types) == {"full_attention", "sliding_attention"}


def test_reduction_keeps_experts_and_top_k():
    original, small = reduced(hubfake.MOE)
    assert small.num_experts_per_tok == 2 < small.num_experts < original.num_experts
    _, top1 = reduced(dict(hubfake.MOE, num_experts_per_tok=1))
    assert top1.num_experts_per_tok == 1


def test_reduction_keeps_tied_embeddings():
    for config_dict, tied in ((hubfake.MOE, True), (hubfake.DECODER, False)):
        _, small = reduced(config_dict)
        cls = factory.import_class(small.model_type, config_dict["architectures"][0])
        model = factory.build_model(cls, small, torch.float32, 0)
        same = model.get_output_embeddings().weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
        assert small.tie_word_embeddings is tied and same is tied


def test_full_size_is_built_in_the_dtype_with_the_count_the_config_implies():
    config = CONFIG_MAPPING["qwen3"](hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                     num_key_value_heads=2, head_dim=32, intermediate_size=256, vocab_size=512,
                                     tie_word_embeddings=True)
    cls = factory.import_class("qwen3", "Qwen3ForCausalLM")
    model = factory.build_full_model(cls, config, torch.bfloat16, 0)
    h, layers, heads, kv, hd, inter, vocab = 128, 2, 4, 2, 32, 256, 512
    per_layer = h * heads * hd + 2 * h * kv * hd + heads * hd * h + 3 * h * inter + 2 * h + 2 * hd
    assert sum(p.numel() for p in model.parameters()) == vocab * h + layers * per_layer + h
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert model.lm_head.weight is model.model.embed_tokens.weight
    weights = model.model.layers[0].mlp.up_proj.weight.float()
    assert 0.01 < weights.std().item() < 0.03 and torch.isfinite(weights).all()


def test_weights_are_the_repos_own_and_a_repo_without_them_is_skipped(tmp_path, monkeypatch):
    """--weights (kind_params weights=pretrained): from_pretrained of the cached snapshot, so
    every tensor equals the one saved; a repo without weight files is skipped with the reason."""
    from huggingface_hub import constants
    from transformers import LlamaForCausalLM

    from compatlab_probe.kinds.common import StageFailed, build_model_and_inputs
    from compatlab_probe.protocol.request import parse_request
    from compatlab_probe.protocol.result import Result

    config = CONFIG_MAPPING["llama"](hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, vocab_size=256)
    torch.manual_seed(1234)
    saved = LlamaForCausalLM(config).eval()
    saved.save_pretrained(tmp_path / "saved")
    files = {name: (tmp_path / "saved" / name).read_bytes() for name in os.listdir(tmp_path / "saved")}
    assert "model.safetensors" in files
    cache = tmp_path / "cache"
    hubfake.write_cache(str(cache), "testorg/with-weights", files)
    hubfake.write_cache(str(cache), "testorg/config-only", {"config.json": files["config.json"]})
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))

    def build(repo):
        request = parse_request({"kind": "forward", "mode": "eager", "target": "cpu", "model_id": f"hub:{repo}",
                                 "dtype": "float32", "batch_size": 1, "seq_len": 8,
                                 "kind_params": {"weights": "pretrained"}})
        result = Result()
        try:
            return build_model_and_inputs(request, result, torch.float32, torch.device("cpu")), result
        except StageFailed:
            return None, result

    built, result = build("testorg/with-weights")
    assert built is not None, (result.status, result.status_detail)
    loaded = built.model.state_dict()
    for name, tensor in saved.state_dict().items():
        assert torch.equal(loaded[name], tensor), name
    assert result.metrics["reduced"] == 0 and "own weights" in result.metrics["reduction"]
    assert result.metrics["param_count"] == sum(p.numel() for p in saved.parameters())

    built, result = build("testorg/config-only")
    assert built is None and result.status == "skipped"
    assert result.status_detail.startswith("--weights: no weights:") and "model.safetensors" in result.status_detail
