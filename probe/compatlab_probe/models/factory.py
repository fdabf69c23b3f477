"""Model factory: a tiny, seeded model of any transformers architecture, or a local checkpoint.

`reduce_config(model_type)` starts from the architecture's default configuration
(CONFIG_MAPPING[model_type]()) and shrinks it by generic, name-based rules
(the field-name sets below and _Reducer._reduce_fields), recursing into
sub-configurations; per-architecture
exceptions are data in overrides.json. Configurations are dataclasses whose
__post_init__ derives some attributes from others, so a reduced configuration is
rebuilt through the constructor rather than patched in place: derived values
are then recomputed from the reduced ones.

See doc/model-factory.md for the rules and the head-class choice.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import os
import re
from typing import Any

from . import heads

TINY_HIDDEN = 64
TINY_HEADS = 4
TINY_KV_HEADS = 2
TINY_HEAD_DIM = TINY_HIDDEN // TINY_HEADS
TINY_INTERMEDIATE = 128
TINY_MOE_INTERMEDIATE = 64
TINY_LAYERS = 2
TINY_VOCAB = 1024
TINY_EXPERTS = 4
TINY_TOP_K = 2
TINY_IMAGE = 64
TINY_SOURCE_POSITIONS = 64
TINY_QUERIES = 16  # detection queries; query selection takes top-k of a small image's anchors
TINY_WINDOW = 16  # a Hub config's sliding window, shorter than the default sequence so that it acts

_LAYERS = re.compile(r"^(num_)?(hidden_)?layers$|^num_.*layers$|^n_layers?$|^[a-z_]*_layers$|^depth$|^[a-z_]*_depth$")
_HIDDEN = {"hidden_size", "d_model", "n_embd", "n_embed", "embed_dim", "dim", "model_dim", "hidden_dim",
           "d_embed", "embedding_size", "emb_dim", "word_embed_proj_dim", "projection_dim",
           "text_embed_dim", "vision_embed_dim", "embedding_dim", "condition_dim", "adapter_input_size",
           "upsample_groups"}
# Cross-tower sizes that validators require to equal a hidden size (out_hidden_size, text_hidden_size, ...).
_HIDDEN_SUFFIX = re.compile(r"^[a-z]+_hidden_size$")
_HEADS = {"num_attention_heads", "num_heads", "n_head", "n_heads", "encoder_attention_heads",
          "decoder_attention_heads", "attention_heads"}
# Head counts of a second tower inside one config (pred_num_attention_heads, ...).
_HEADS_SUFFIX = re.compile(r"^[a-z]+_num_attention_heads$")
_KV_SUFFIX = re.compile(r"^[a-z]+_num_key_value_heads$")
_KV_HEADS = {"num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num"}
_HEAD_DIM = {"head_dim", "d_kv", "attention_head_dim", "kv_channels", "d_head"}
_INTERMEDIATE = {"intermediate_size", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "d_ff", "n_inner",
                 "ffn_hidden_size", "mlp_dim", "intermediate_dim", "inner_dim", "encoder_intermediate_size",
                 "decoder_intermediate_size"}
_MOE_INTERMEDIATE = {"moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size",
                     "moe_ffn_hidden_size"}
_EXPERTS = {"num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "num_routed_experts"}
_TOP_K = {"num_experts_per_tok", "moe_topk", "top_k", "num_experts_per_token", "moe_k", "router_topk",
          "top_k_experts"}
_ONE = {"n_group", "topk_group", "n_shared_experts", "num_shared_experts", "first_k_dense_replace"}
_VOCAB = {"vocab_size", "text_vocab_size"}
# Multi-head latent attention (DeepSeek-style) dimensions.
_MLA = {"qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16, "kv_lora_rank": 32, "q_lora_rank": 32}
# Boolean switches that would need timm or downloaded weights.
_FALSE = {"use_timm_backbone", "use_pretrained_backbone"}
# State-space (Mamba) sizes.
_SSM = {"mamba_n_heads": 4, "mamba_d_state": 16, "state_size": 16, "ssm_state_size": 16, "mamba_chunk_size": 32,
        "chunk_size": 32}
_TOKEN_ID = re.compile(r"(token_id|token_index|token_ids|_tokens)$")

OVERRIDES_PATH = os.path.join(os.path.dirname(__file__), "overrides.json")


def load_overrides(path: str = OVERRIDES_PATH) -> dict[str, Any]:
    """The per-architecture overrides: {model_type: {...}} (see overrides.json's _doc)."""
    with open(path) as f:
        data = json.load(f)
    return data["models"]


def model_overrides(model_type: str) -> dict[str, Any]:
    return load_overrides().get(model_type, {})


# --------------------------------------------------------------------------- reduction


class _Reducer:
    """Shrinks one configuration tree; keeps one special-token id map for the whole tree."""

    def __init__(self, config_overrides, keep_features=False):
        self.overrides = config_overrides  # {"a.b.field": value}
        self.token_map = {}
        # A Hub model's own config (doc/model-factory.md, "Hub models"): the features its
        # reduction keeps by rule (GQA ratio, sliding window) where the generic rules would not.
        self.keep_features = keep_features

    def _new_token(self, old):
        if old not in self.token_map:
            self.token_map[old] = TINY_VOCAB - 1 - len(self.token_map)
        return self.token_map[old]

    def _map_tokens(self, value):
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            return self._new_token(value) if value >= TINY_VOCAB else value
        if isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return type(value)(self._map_tokens(v) for v in value)
        return value

    def _reduce_fields(self, values, mrope=False):
        """Field name -> reduced value, for the fields of one configuration level.

        `mrope`: the configuration uses multimodal RoPE sections.
        """
        out = {}
        hierarchical = any(isinstance(values.get(n), (list, tuple)) for n in _HEADS)
        old_heads = next((values[n] for n in _HEADS if _is_int(values.get(n))), None)
        layer_counts = {}
        for name, value in values.items():
            if name in _VOCAB and ((_is_int(value) and value > TINY_VOCAB) or (value is None and name == "vocab_size")):
                out[name] = TINY_VOCAB  # also where the default leaves it unset
            elif _is_layer_count(name, value, values):
                out[name] = TINY_LAYERS
                layer_counts[value] = TINY_LAYERS
            elif (name == "depths" or name.endswith("_depths")) and _is_int_list(value):
                out[name] = type(value)(min(v, 1) for v in value)
            elif (name in _HIDDEN or _HIDDEN_SUFFIX.match(name)) and _is_int(value) and value > TINY_HIDDEN \
                    and not hierarchical:
                out[name] = TINY_HIDDEN
            elif (name in _HEADS or _HEADS_SUFFIX.match(name)) and _is_int(value) and not hierarchical and (
                    value > TINY_HEADS or value == 3):
                out[name] = TINY_HEADS
            elif (name in _KV_HEADS or _KV_SUFFIX.match(name)) and _is_int(value) and value > 1:
                heads = values.get(name.replace("_key_value_", "_attention_"), old_heads) \
                    if _KV_SUFFIX.match(name) else old_heads
                out[name] = TINY_HEADS if value == heads else TINY_KV_HEADS
            elif name in _KV_HEADS and value is None and old_heads is not None and name != "multi_query_group_num":
                out[name] = TINY_HEADS  # unset: plain multi-head attention
            elif name in _HEAD_DIM and _is_int(value) and not hierarchical:
                out[name] = TINY_HEAD_DIM
            elif name in _INTERMEDIATE and _is_int(value) and value > TINY_INTERMEDIATE:
                out[name] = TINY_INTERMEDIATE
            elif name in _MOE_INTERMEDIATE and _is_int(value) and value > TINY_MOE_INTERMEDIATE:
                out[name] = TINY_MOE_INTERMEDIATE
            elif name in _MOE_INTERMEDIATE and value is None and any(n in values for n in _EXPERTS):
                out[name] = TINY_MOE_INTERMEDIATE  # an MoE whose default leaves the expert width unset
            elif name in _EXPERTS and _is_int(value) and value > TINY_EXPERTS:
                out[name] = TINY_EXPERTS
            elif name in _EXPERTS and value is None and any(n in values for n in _MOE_INTERMEDIATE):
                out[name] = TINY_EXPERTS  # an MoE whose default leaves the expert count unset
            elif name in _TOP_K and _is_int(value) and value > TINY_TOP_K:
                out[name] = TINY_TOP_K
            elif name in _TOP_K and value is None and any(n in values for n in _EXPERTS):
                out[name] = TINY_TOP_K  # some defaults leave the routing width unset
            elif name == "num_queries" and _is_int(value) and value > TINY_QUERIES:
                out[name] = TINY_QUERIES
            elif name in _MLA and _is_int(value) and value > _MLA[name]:
                out[name] = _MLA[name]
            elif name in _SSM and _is_int(value) and value > _SSM[name]:
                out[name] = _SSM[name]
            elif name == "rotary_dim" and _is_int(value) and value > TINY_HEAD_DIM:
                out[name] = TINY_HEAD_DIM
            elif name in _FALSE and value is True:
                out[name] = False
            elif name.endswith("_layer_period") and _is_int(value) and value > TINY_LAYERS:
                out[name] = TINY_LAYERS
            elif name.endswith("_layer_offset") and _is_int(value) and value >= TINY_LAYERS:
                out[name] = TINY_LAYERS - 1
            elif name == "num_kv_shared_layers" and _is_int(value):
                out[name] = 0  # with two layers, sharing would leave a layer kind without a cache
            elif name in ("n_shared_experts", "num_shared_experts") and value is None and any(
                    n in values for n in _EXPERTS):
                out[name] = 1  # some MoE defaults leave it unset although the model multiplies by it
            elif name in _ONE and _is_int(value) and value > 1:
                out[name] = 1
            elif name == "image_size":
                reduced = _tiny_image(value, values.get("patch_size"))
                if reduced is not None:
                    out[name] = reduced
            elif name == "max_source_positions" and _is_int(value) and value > TINY_SOURCE_POSITIONS:
                out[name] = TINY_SOURCE_POSITIONS
            elif _TOKEN_ID.search(name):
                mapped = self._map_tokens(value)
                if mapped != value:
                    out[name] = mapped
        if self.keep_features:
            out.update(_kept_features(values, out))
        if "qk_rope_head_dim" in out and _is_int(values.get("head_dim")):
            out["head_dim"] = out["qk_rope_head_dim"]  # in MLA configs head_dim is the rotary size
        head_dim = _new_head_dim(values, out)
        if head_dim and values.get("head_dim", 0) is None and "head_dim" not in out:
            out["head_dim"] = head_dim  # some models read config.head_dim without a fallback
        rope = out.get("rope_parameters", values.get("rope_parameters"))
        if isinstance(rope, dict) and "rope_type" in rope and head_dim and mrope:
            # Multimodal RoPE splits the rotary half-dimension into (t, h, w) sections;
            # modelling code defaults them (in ratio 2:3:3) when the config has none.
            partial = rope.get("partial_rotary_factor") or values.get("partial_rotary_factor") or 1.0
            sections = rope.get("mrope_section") if _is_int_list(rope.get("mrope_section")) else [2, 3, 3]
            out["rope_parameters"] = dict(rope, mrope_section=_rescale(sections, int(head_dim * partial) // 2))
        out.update(_backbone_outputs(values, out))
        # Per-layer lists (layer_types, mlp_only_layers masks, ...) follow the layer count.
        for name, value in values.items():
            if name in out or not isinstance(value, (list, tuple)):
                continue
            if len(value) in layer_counts and len(value) > TINY_LAYERS:
                out[name] = type(value)(value[: layer_counts[len(value)]])
        return out

    def rebuild(self, config, prefix="", init_kwargs=None):
        """A reduced copy of `config` (a PreTrainedConfig instance).

        `init_kwargs` are the keyword arguments `config` was made with (a parent's
        sub-config spec); the rebuilt configuration gets them plus the reductions.
        """
        cls = type(config)
        fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
        values = {name: _get(config, name) for name in fields if not name.startswith("_")}
        if not fields:
            values = {k: v for k, v in vars(config).items() if not k.startswith("_")}
        sub_keys = set(getattr(cls, "sub_configs", {}) or {}) | {n for n, v in values.items() if _is_config(v)}
        plain = {n: v for n, v in values.items() if n not in sub_keys}
        for name in ("out_indices", "out_features"):  # backbone properties over private fields
            if name not in plain and isinstance(_get(config, name), (list, tuple)):
                plain[name] = list(_get(config, name))

        kwargs = {k: v for k, v in (init_kwargs or {}).items() if k != "model_type" and k not in sub_keys}
        if self.keep_features:  # a given config: every value of its own, not the class defaults
            kwargs = {k: v for k, v in plain.items() if k != "model_type"} | kwargs
        kwargs.update(self._reduce_fields(plain, _uses_mrope(cls, plain)))
        specs = getattr(cls, "sub_configs_defaults", None) or {}
        for key in sorted(sub_keys):
            original = getattr(config, key, None)
            sub = _native_backbone(original)
            if _is_config(sub):
                spec = specs.get(key) if sub is original else None
                kwargs[key] = self.rebuild(sub, f"{prefix}{key}.", getattr(spec, "init_kwargs", None))
        for path, value in self.overrides.items():
            if path.startswith(prefix) and "." not in path[len(prefix):]:
                kwargs[path[len(prefix):]] = value
        if not fields:  # a configuration that is not a dataclass: patch in place
            for name, value in kwargs.items():
                setattr(config, name, value)
            return config
        try:
            reduced, error = cls(**kwargs), None
        except Exception as exc:  # a validator may refuse a hybrid with no layer of some kind
            reduced, error = None, exc
        kept = self._keep_layer_kinds(config, reduced, plain, kwargs)
        if kept:
            return cls(**kept)
        if error is not None:
            raise error
        return reduced

    def _keep_layer_kinds(self, old, new, values, kwargs):
        """Constructor kwargs that keep every layer kind of `old`, or None if `new` has them all.

        Hybrid models (attention + linear attention / SSM layers) list their layers'
        kinds; the first two layers alone may all be of one kind.
        """
        changed = {}
        for name in _LAYER_KIND_LISTS:
            if name not in values:  # a derived property, not a constructor field
                continue
            before = _get(old, name)
            after = _get(new, name) if new is not None else list(before or ())[:TINY_LAYERS]
            if not (_is_str_list(before) and _is_str_list(after)) or set(after) >= set(before):
                continue
            changed[name] = _representative(list(before), len(after))
        if not changed:
            return None
        count = max(len(v) for v in changed.values())
        kwargs = dict(kwargs, **changed)
        for name, _value in values.items():
            if _LAYERS.match(name) and kwargs.get(name) == TINY_LAYERS:
                kwargs[name] = count
        return kwargs


def _kept_features(values, out):
    """The reductions of a Hub config that keep its attention features (doc/model-factory.md):

    - GQA ratio: heads / kv heads stays the same (kv = max(1, TINY_HEADS // ratio), heads =
      kv * ratio); multi-query attention (one kv head) keeps one; plain multi-head stays so.
    - sliding window: a window wider than TINY_WINDOW becomes TINY_WINDOW, shorter than the
      test's default sequence, so the windowed layers really mask; max_window_layers (the
      layers before sliding starts) keeps its fraction of the layer stack.
    Rope scaling (rope_parameters), experts and top-k (the generic rules: TINY_EXPERTS experts,
    top-k at most TINY_TOP_K, so top-1 stays top-1 and k < experts) and tie_word_embeddings
    are kept by the generic rules already.
    """
    changes = {}
    heads_name = next((n for n in _HEADS if _is_int(values.get(n))), None)
    kv_name = next((n for n in _KV_HEADS if _is_int(values.get(n))), None)
    if heads_name and kv_name and values[kv_name] >= 1 and values[heads_name] % values[kv_name] == 0:
        ratio = values[heads_name] // values[kv_name]
        kv = 1 if values[kv_name] == 1 else max(1, TINY_HEADS // ratio)
        heads = TINY_HEADS if values[kv_name] == 1 else kv * ratio
        hidden = next((out[n] for n in _HIDDEN if _is_int(out.get(n))), None)
        if not any(_is_int(values.get(n)) for n in _HEAD_DIM) and hidden and hidden % heads:
            heads, kv = values[heads_name], values[kv_name]  # cannot split the hidden size: keep them
        else:
            changes[heads_name], changes[kv_name] = heads, kv
    window = values.get("sliding_window")
    if _is_int(window) and window > TINY_WINDOW:
        changes["sliding_window"] = TINY_WINDOW
    layers_name = next((n for n in ("num_hidden_layers", "num_layers", "n_layer") if _is_int(values.get(n))), None)
    start = values.get("max_window_layers")
    if _is_int(start) and layers_name and values[layers_name] > 0 and _is_int(out.get(layers_name)):
        changes["max_window_layers"] = round(start * out[layers_name] / values[layers_name])
    return changes


def _native_backbone(config):
    """transformers' own ResNet in place of a timm ResNet backbone (timm is not installed).

    Same output stages and input channels; transformers' ResNet default is the
    ResNet-50 layout that timm's default "resnet50" names.
    """
    if getattr(config, "model_type", None) != "timm_backbone":
        return config
    from transformers import CONFIG_MAPPING

    out_indices = list(getattr(config, "out_indices", None) or [1, 2, 3, 4])
    return CONFIG_MAPPING["resnet"](out_indices=out_indices, num_channels=getattr(config, "num_channels", 3))


def _uses_mrope(cls, values):
    """Whether a configuration class uses multimodal RoPE sections (declared, or present)."""
    if "mrope_section" in (getattr(cls, "ignore_keys_at_rope_validation", None) or ()):
        return True
    rope = values.get("rope_parameters")
    return isinstance(rope, dict) and _is_int_list(rope.get("mrope_section"))


def _is_layer_count(name, value, values):
    """A reducible layer count: not a stage count (= len(depths)), not the KV-sharing count."""
    if not (_LAYERS.match(name) and _is_int(value) and value > TINY_LAYERS) or name == "num_kv_shared_layers":
        return False
    depths = values.get("depths")
    return not (_is_int_list(depths) and value == len(depths))


def _backbone_outputs(values, out):
    """Keeps a plain (non-hierarchical) backbone's output layers inside its reduced depth.

    A neck that reads k layers of a ViT-like backbone (out_indices [9, 10, 11, 12],
    DPT's backbone_out_indices [2, 5, 8, 11]) gets the last k of max(2, k) layers.
    """
    layers_field = next((n for n in ("num_hidden_layers", "num_layers", "depth") if _is_int(out.get(n))), None)
    if layers_field is None or "depths" in values:
        return {}
    changes = {}
    features = values.get("out_features")
    if values.get("out_indices") is None and _is_str_list(features) and all(
            re.fullmatch(r"stage\d+", f) for f in features):
        values = dict(values, out_indices=[int(f[5:]) for f in features])
    for name in ("out_indices", "backbone_out_indices"):
        indices = values.get(name)
        if not _is_int_list(indices) or max(indices) < out[layers_field]:
            continue
        count = max(TINY_LAYERS, len(indices))
        changes[layers_field] = max(changes.get(layers_field, 0), count)
        first = 1 if name == "out_indices" else 0  # out_indices count the embeddings as stage 0
        changes[name] = type(indices)(range(first + count - len(indices), first + count))
        if name == "out_indices" and "out_features" in values:
            changes["out_features"] = None
    return changes


def _new_head_dim(values, out):
    """The attention head size of a reduced level, when it can be told."""
    for name in _HEAD_DIM:
        if _is_int(out.get(name)):
            return out[name]
    hidden = next((out[n] for n in _HIDDEN if _is_int(out.get(n))), None)
    heads = next((out[n] for n in _HEADS if _is_int(out.get(n))), None)
    if hidden and heads:
        return hidden // heads
    return None


def _rescale(sections, total):
    """Integer sections proportional to `sections`, each >= 1, summing to `total`."""
    scale = total / sum(sections)
    new = [max(1, int(round(x * scale))) for x in sections]
    new[-1] += total - sum(new)
    while new[-1] < 1:  # rounding overshot: take from the largest
        new[new.index(max(new))] -= 1
        new[-1] += 1
    return new


# Per-layer kind lists of hybrid models.
_LAYER_KIND_LISTS = ("layer_types", "layers_block_type", "block_types", "hybrid_override_pattern_list",
                     "mlp_layer_types", "attn_layer_types")


def _is_str_list(value):
    return isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value)


def _representative(kinds, n):
    """n or more entries of `kinds`, in order, including every distinct kind at least once."""
    firsts = sorted({kinds.index(k) for k in kinds})
    others = [i for i in range(len(kinds)) if i not in firsts]
    picks = sorted(firsts + others[: max(0, n - len(firsts))])
    return [kinds[i] for i in picks]


def _get(config, name):
    """config.name, or None where reading it raises (per-layer attributes of heterogeneous configs)."""
    try:
        return getattr(config, name, None)
    except Exception:
        return None


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_int_list(value):
    return isinstance(value, (list, tuple)) and value and all(_is_int(v) for v in value)


def _is_config(value):
    from transformers import PreTrainedConfig

    return isinstance(value, PreTrainedConfig)


def _tiny_image(value, patch):
    """A small image size that is a multiple of the patch size, or None to keep `value`."""
    if isinstance(patch, (list, tuple)):
        patch = patch[0] if patch else None
    step = patch if _is_int(patch) and patch > 0 else 1
    size = step * max(2, math.ceil(TINY_IMAGE / step))
    if _is_int(value) and value > size:
        return size
    if _is_int_list(value) and any(v > size for v in value):
        return type(value)(min(v, size) for v in value)
    return None


def reduce_config(model_type: str, overrides: dict[str, Any] | None = None) -> Any:
    """The tiny configuration of `model_type`: defaults shrunk by the rules, then overrides."""
    from transformers import CONFIG_MAPPING

    if overrides is None:
        overrides = model_overrides(model_type)
    config = CONFIG_MAPPING[model_type]()
    return _Reducer(overrides.get("config", {})).rebuild(config)


def reduce_given_config(config: Any, overrides: dict[str, Any] | None = None) -> Any:
    """A Hub model's own configuration, shrunk by the same rules with its features kept
    (_kept_features), then the architecture's overrides."""
    overrides = overrides if overrides is not None else model_overrides(config.model_type)
    return _Reducer(overrides.get("config", {}), keep_features=True).rebuild(config)


# The milder reduction of a reduction rerun whose full size does not fit its memory budget
# (doc/model-factory.md, "Reduction reruns"): the same rules with these bounds instead of
# the TINY_* ones (four times the widths, twice the layers; heads, vocabulary, images and
# the rest as reduced).
MILDER = {"TINY_HIDDEN": 256, "TINY_HEAD_DIM": 64, "TINY_INTERMEDIATE": 512,
          "TINY_MOE_INTERMEDIATE": 256, "TINY_LAYERS": 4}
# Bytes per parameter a full-size rerun needs besides the model's own dtype: the CPU
# reference's float64 copy.
REFERENCE_BYTES_PER_PARAM = 8


def milder_config(given: Any, model_type: str, overrides: dict[str, Any] | None = None) -> Any:
    """The milder reduction of a Hub config (`given`) or of `model_type`'s default config."""
    saved = {name: globals()[name] for name in MILDER}
    globals().update(MILDER)
    try:
        return reduce_given_config(given, overrides) if given is not None else reduce_config(model_type, overrides)
    finally:
        globals().update(saved)


def full_size_bytes(cls: type, config: Any, dtype: Any) -> int | None:
    """What a full-size rerun of `cls(config)` is estimated to need: its parameter count
    (built on the meta device: no memory, no init) times (the dtype's size + the float64
    reference's 8 bytes). None when the model cannot be built on the meta device."""
    import torch

    try:
        with torch.device("meta"):
            model = cls(fit_config_to_class(cls, config))
        count = sum(p.numel() for p in model.parameters())
    except Exception:  # noqa: BLE001 - any failure to build is "unknown": the milder reduction runs
        return None
    return count * (torch.empty((), dtype=dtype).element_size() + REFERENCE_BYTES_PER_PARAM)


def describe_reduction(original: Any, reduced: Any, limit: int = 400) -> str:
    """The top-level numbers a reduction changed: "hidden_size 1024->64, ..." (bounded)."""
    before, after = original.to_dict(), reduced.to_dict()
    parts = [f"{k} {before[k]}->{after[k]}" for k in sorted(before)
             if k in after and _is_int(before[k]) and _is_int(after[k]) and before[k] != after[k]]
    text = ", ".join(parts) or "no size field changed"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Fields that bound how many positions (tokens) a model takes.
POSITION_FIELDS = ("max_position_embeddings", "n_positions", "n_ctx", "max_seq_len", "max_sequence_length",
                   "max_target_positions")
# Learned position tables of some architectures start at an offset (RoBERTa: padding_idx + 1).
POSITION_MARGIN = 2


def fit_positions(config: Any, length: int, overrides: dict[str, Any] | None = None) -> dict[str, Any] | str:
    """Raises the position limits of a reduced configuration tree to take `length` tokens.

    Every POSITION_FIELDS value below length + POSITION_MARGIN, at any level of
    the tree, is set to length + POSITION_MARGIN (the model is built from the
    config afterwards, so its position tables and masks follow). Returns
    {"dotted.field": new value}, or a string (the skip reason) when the
    architecture cannot take that many positions: overrides "max_positions".
    """
    limit = (overrides or {}).get("max_positions")
    if _is_int(limit) and length > limit:
        return (f"seq_len {length} exceeds the architecture's position limit {limit} "
                f"(overrides.json max_positions: {(overrides or {}).get('_why', 'fixed by the architecture')})")
    wanted = length + POSITION_MARGIN
    changes = {}

    def walk(cfg, prefix, depth):
        if depth > 4:
            return
        for name, value in list(vars(cfg).items()):
            if _is_config(value):
                walk(value, f"{prefix}{name}.", depth + 1)
            elif name in POSITION_FIELDS and _is_int(value) and value < wanted:
                setattr(cfg, name, wanted)
                changes[prefix + name] = wanted

    walk(config, "", 0)
    return changes


def special_token_ids(config: Any) -> set[int]:
    """Every special-token id in a configuration tree (ints), to keep out of random inputs."""
    found = set()

    def walk(cfg, depth=0):
        if depth > 4:
            return
        for name, value in list(vars(cfg).items()):  # raw values: no per-layer attribute lookups
            if _is_config(value):
                walk(value, depth + 1)
            elif _TOKEN_ID.search(name):
                if _is_int(value):
                    found.add(value)
                elif _is_int_list(value):
                    found.update(value)

    walk(config)
    return found


# --------------------------------------------------------------------------- classes


def head_class_name(model_type: str, requested: str = "") -> tuple[str | None, str | None]:
    """(class name, head kind) to test `model_type` with: overrides, then request, then the rule."""
    override = model_overrides(model_type).get("head_class")
    name = override or requested
    if name:
        return name, heads.head_kind_of_class(model_type, name) or "base"
    return heads.head_for(model_type)


def import_class(model_type: str, class_name: str) -> type:
    """The modelling class `class_name`; imports the modelling module of `model_type` first."""
    import transformers

    if model_type:
        try:
            module = importlib.import_module(heads.modeling_module_name(model_type))
            if hasattr(module, class_name):
                return getattr(module, class_name)
        except ModuleNotFoundError as exc:
            if not exc.name or not exc.name.startswith("transformers.models."):
                raise
    cls = getattr(transformers, class_name, None)
    if cls is None:
        raise ImportError(f"transformers has no class {class_name}")
    return cls


def fit_config_to_class(cls: type, config: Any) -> Any:
    """The configuration `cls` expects: `config` itself or one of its sub-configurations."""
    expected = getattr(cls, "config_class", None)
    if not isinstance(expected, type) or isinstance(config, expected):
        return config
    for key in getattr(type(config), "sub_configs", {}) or {}:
        sub = getattr(config, key, None)
        if isinstance(sub, expected):
            return sub
    return config


def build_model(cls: type, config: Any, dtype: Any, seed: int) -> Any:
    """A seeded, randomly initialised `cls(config)` in eval mode, cast to `dtype`."""
    import torch

    torch.manual_seed(seed)
    model = cls(fit_config_to_class(cls, config))
    return model.to(dtype=dtype).eval()


def build_full_model(cls: type, config: Any, dtype: Any, seed: int) -> Any:
    """`cls(config)` at its real size in `dtype` without the cost of initialisation: built
    under transformers' no_init_weights (parameters allocated in `dtype`, no init kernels),
    then filled in one seeded pass (matrices: a seeded normal(0, 0.02) block tiled from a
    random offset each; vectors: weights 1, biases 0);
    buffers computed at construction (rotary frequencies) are the module's own; tied
    parameters stay one tensor."""
    import torch
    from transformers.initialization import no_init_weights

    with no_init_weights():
        model = cls._from_config(fit_config_to_class(cls, config), dtype=dtype)
    model.tie_weights()
    generator = torch.Generator().manual_seed(seed)
    block = (torch.randn(_FILL_BLOCK, generator=generator) * 0.02).to(dtype)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                _tile(p.view(-1), block.roll(int(torch.randint(_FILL_BLOCK, (1,), generator=generator))))
            elif name.endswith("bias"):
                p.zero_()
            else:
                p.fill_(1.0)
    return model.eval()


# The seeded block full-size matrices are tiled from (a prime count of values, so rows of
# common widths do not repeat in step): one normal_ over 600 M values costs ~30 s on one core.
_FILL_BLOCK = 1_048_573


def _tile(flat: Any, block: Any) -> None:
    for start in range(0, flat.numel(), block.numel()):
        n = min(block.numel(), flat.numel() - start)
        flat[start:start + n].copy_(block[:n])


# --------------------------------------------------------------------------- checkpoints


def checkpoint_head(path: str) -> tuple[str, str | None, str | None]:
    """(model_type, head class name, head kind) of a local checkpoint directory."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(path, local_files_only=True, trust_remote_code=False)
    model_type = config.model_type
    for name in config.architectures or []:
        if import_class_or_none(model_type, name) is not None:
            return model_type, name, heads.head_kind_of_class(model_type, name) or "base"
    head_class, head_kind = heads.head_for(model_type)
    return model_type, head_class, head_kind


def import_class_or_none(model_type: str, class_name: str) -> type | None:
    try:
        return import_class(model_type, class_name)
    except ImportError:
        return None


def checkpoint_class(path: str, class_name: str = "") -> tuple[type, str]:
    """(modelling class, head kind) to load a local checkpoint with.

    `class_name` wins when given; else the checkpoint's own architectures, else the rule.
    """
    model_type, default_class, head_kind = checkpoint_head(path)
    if class_name and class_name != default_class:
        head_kind = heads.head_kind_of_class(model_type, class_name) or "base"
    if not (class_name or default_class):
        raise LookupError(f"checkpoint {path} (model type {model_type!r}) has no modelling class")
    return import_class(model_type, class_name or default_class), head_kind
