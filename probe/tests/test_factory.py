"""The tiny-config factory: reduced sizes, special-token ids, head choice."""

import dataclasses

import pytest

from compatlab_probe.models import factory, heads, reduction

LAYER_FIELDS = ("num_hidden_layers", "num_layers", "encoder_layers", "decoder_layers",
                "num_decoder_layers", "n_layer", "depth")
HIDDEN_FIELDS = ("hidden_size", "d_model", "n_embd", "embed_dim")


def walk(config):
    """The configuration and all its sub-configurations."""
    yield config
    for key in type(config).sub_configs or {}:
        sub = getattr(config, key, None)
        if sub is not None:
            yield from walk(sub)


def level_of(values, bounds=reduction.TINY):
    return reduction.Level(values, bounds, reduction.Reducer({}, bounds=bounds).map_tokens)


def test_every_reduction_rule_names_known_conditions_and_bounds():
    bounds = {f.name for f in dataclasses.fields(reduction.Bounds)}
    for rule in reduction.RULES:
        assert rule.when or callable(rule.to), rule  # a rule with no condition decides by function
        assert all(c in reduction.CONDITIONS for c in rule.when), rule
        assert callable(rule.to) or not isinstance(rule.to, str) or rule.to in bounds, rule


def test_the_first_rule_that_matches_a_field_decides_it():
    out = reduction.reduce_fields(level_of({"num_attention_heads": 3, "hidden_size": 4096, "num_hidden_layers": 2,
                                            "vocab_size": None, "image_size": 32, "patch_size": 16}))
    # 3 heads do not divide 64; a layer count at the bound and a small image stay as they are.
    assert out == {"num_attention_heads": 4, "hidden_size": 64, "vocab_size": 1024}
    hierarchical = level_of({"num_heads": [3, 6, 12], "hidden_size": 768, "num_key_value_heads": None})
    assert reduction.reduce_fields(hierarchical) == {}  # per-stage heads: widths kept, no heads known


def test_the_milder_bounds_give_wider_layers_and_more_of_them():
    values = {"hidden_size": 4096, "num_hidden_layers": 32, "intermediate_size": 11008, "layer_types": ["full"] * 32}
    tiny = reduction.reduce_level(level_of(values))
    milder = reduction.reduce_level(level_of(values, reduction.MILDER))
    assert tiny == {"hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 128, "layer_types": ["full"] * 2}
    assert milder == {"hidden_size": 256, "num_hidden_layers": 4, "intermediate_size": 512,
                      "layer_types": ["full"] * 4}


@pytest.mark.parametrize("model_type", ["llama", "bert", "t5", "vit", "whisper", "qwen3_moe", "mixtral"])
def test_reduction_yields_two_layers_and_small_hidden_size(model_type):
    config = factory.reduce_config(model_type)
    for cfg in walk(config):
        for name in LAYER_FIELDS:
            value = getattr(cfg, name, None)
            if isinstance(value, int):
                assert value <= 2, f"{type(cfg).__name__}.{name} = {value}"
        for name in HIDDEN_FIELDS:
            value = getattr(cfg, name, None)
            if isinstance(value, int):
                assert value <= 64, f"{type(cfg).__name__}.{name} = {value}"
        if getattr(cfg, "vocab_size", None):
            assert cfg.vocab_size <= factory.TINY_VOCAB


def test_moe_reduction_keeps_four_experts_top_two():
    config = factory.reduce_config("qwen3_moe")
    assert config.num_experts == 4
    assert config.num_experts_per_tok == 2


def test_vision_reduction_shrinks_image_to_patch_multiple():
    config = factory.reduce_config("vit")
    assert config.image_size <= 64 and config.image_size % config.patch_size == 0


def test_per_layer_lists_follow_layer_count():
    config = factory.reduce_config("gemma3")
    text = config.text_config
    assert len(text.layer_types) == text.num_hidden_layers == 2


@pytest.mark.parametrize("model_type", ["llama", "whisper", "t5", "llava", "gemma3", "bart"])
def test_special_token_ids_are_below_vocab(model_type):
    config = factory.reduce_config(model_type)
    vocab = config.get_text_config(decoder=True).vocab_size
    ids = factory.special_token_ids(config)
    assert ids, "expected some special-token ids"
    assert all(0 <= i < vocab for i in ids), sorted(ids)


def test_remapped_special_tokens_keep_their_equalities():
    # whisper's pad, bos and eos are one token; decoder_start is another.
    config = factory.reduce_config("whisper")
    assert config.pad_token_id == config.bos_token_id == config.eos_token_id
    assert config.decoder_start_token_id != config.eos_token_id


def test_head_rule_prefers_the_main_use_of_an_architecture():
    assert heads.head_for("llama") == ("LlamaForCausalLM", "causal_lm")
    assert heads.head_for("whisper") == ("WhisperForConditionalGeneration", "speech_seq2seq")
    assert heads.head_for("bart") == ("BartForConditionalGeneration", "seq2seq_lm")
    assert heads.head_for("bert") == ("BertForMaskedLM", "masked_lm")
    assert heads.head_for("vit") == ("ViTForImageClassification", "image_classification")


def test_overrides_are_data_with_reasons():
    for model_type, entry in factory.load_overrides().items():
        assert model_type in heads.registered_model_types(), model_type
        assert entry.get("_why"), f"override for {model_type} needs a _why"


def test_hybrid_models_keep_every_layer_kind():
    default = __import__("transformers").CONFIG_MAPPING["qwen3_next"]()
    config = factory.reduce_config("qwen3_next")
    assert set(config.layer_types) == set(default.layer_types)
    assert config.num_hidden_layers == len(config.layer_types) == 2


def test_backbone_outputs_stay_inside_the_reduced_depth():
    config = factory.reduce_config("depth_anything")
    backbone = config.backbone_config
    assert len(backbone.out_indices) == 4
    assert max(backbone.out_indices) <= backbone.num_hidden_layers


def test_timm_backbones_are_replaced_by_native_resnet():
    config = factory.reduce_config("detr")
    assert config.backbone_config.model_type == "resnet"
    assert all(d <= 1 for d in config.backbone_config.depths)


def test_multimodal_rope_sections_fit_the_reduced_head():
    text = factory.reduce_config("qwen2_vl").text_config
    head_dim = text.hidden_size // text.num_attention_heads
    assert sum(text.rope_parameters["mrope_section"]) == head_dim // 2


def test_a_levels_fields_are_read_in_declaration_order():
    # The order in which special-token ids are met decides the reduced id each gets; read
    # from a set, it followed the process's string hashing (PYTHONHASHSEED), and 102 of 804
    # model types (clip among them) were reduced differently from one process to the next.
    import transformers

    config = transformers.CLIPTextConfig()
    declared = [f.name for f in dataclasses.fields(type(config)) if not f.name.startswith("_")]
    assert list(reduction._level_values(config)[1]) == declared
