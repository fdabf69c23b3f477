"""The reduction rules: how a configuration tree shrinks to a tiny model (doc/model-factory.md).

The per-field rules are data: RULES, a table of (fields, conditions, new value) in order; for
each field of one configuration level the first rule whose fields match its name and whose
conditions all hold decides it (`reduce_fields`, a small interpreter). The rules that weigh
several fields at once follow it as functions: a Hub config's kept features (`_kept_features`),
MLA and missing head sizes, multimodal RoPE sections, a backbone's output layers and per-layer
lists. `Reducer.rebuild` walks the tree: a level's values, the rules, its sub-configurations,
then the overrides (overrides.json), and rebuilds each level through its constructor, so that
derived values are recomputed from the reduced ones.

Bounds: TINY (the tiny model) or MILDER (a reduction rerun's milder reduction: four times the
widths, twice the layers; heads, vocabulary, images and the rest as TINY).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class Bounds:
    """The sizes a reduction shrinks to."""

    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 16  # hidden // heads
    intermediate: int = 128
    moe_intermediate: int = 64
    layers: int = 2
    vocab: int = 1024
    experts: int = 4
    top_k: int = 2
    image: int = 64
    source_positions: int = 64
    queries: int = 16  # detection queries; query selection takes top-k of a small image's anchors
    window: int = 16  # a Hub config's sliding window, shorter than the default sequence so that it acts


TINY = Bounds()
MILDER = dataclasses.replace(TINY, hidden=256, head_dim=64, intermediate=512, moe_intermediate=256, layers=4)


@dataclasses.dataclass(frozen=True)
class Fields:
    """Field names a rule applies to: these names, or any name a pattern finds (re.search)."""

    names: frozenset[str] | set[str] = frozenset()
    patterns: tuple[re.Pattern[str], ...] = ()
    excluded: frozenset[str] = frozenset()

    def __contains__(self, name: str) -> bool:
        if name in self.excluded:
            return False
        return name in self.names or any(p.search(name) for p in self.patterns)


def _named(*names: str) -> Fields:
    return Fields(set(names))


def _pattern(*patterns: str) -> Fields:
    return Fields(frozenset(), tuple(re.compile(p) for p in patterns))


def _either(*parts: Fields) -> Fields:
    names: set[str] = set()
    for part in parts:
        names |= set(part.names)
    return Fields(names, tuple(p for part in parts for p in part.patterns))


LAYERS = _pattern(r"^(num_)?(hidden_)?layers$|^num_.*layers$|^n_layers?$|^[a-z_]*_layers$|^depth$|^[a-z_]*_depth$")
HIDDEN = _named("hidden_size", "d_model", "n_embd", "n_embed", "embed_dim", "dim", "model_dim", "hidden_dim",
                "d_embed", "embedding_size", "emb_dim", "word_embed_proj_dim", "projection_dim",
                "text_embed_dim", "vision_embed_dim", "embedding_dim", "condition_dim", "adapter_input_size",
                "upsample_groups")
# Cross-tower sizes that validators require to equal a hidden size (out_hidden_size, text_hidden_size, ...).
HIDDEN_SUFFIX = _pattern(r"^[a-z]+_hidden_size$")
HEADS = _named("num_attention_heads", "num_heads", "n_head", "n_heads", "encoder_attention_heads",
               "decoder_attention_heads", "attention_heads")
# Head counts of a second tower inside one config (pred_num_attention_heads, ...).
HEADS_SUFFIX = _pattern(r"^[a-z]+_num_attention_heads$")
KV_HEADS = _named("num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num")
KV_SUFFIX = _pattern(r"^[a-z]+_num_key_value_heads$")
HEAD_DIM = _named("head_dim", "d_kv", "attention_head_dim", "kv_channels", "d_head")
INTERMEDIATE = _named("intermediate_size", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "d_ff", "n_inner",
                      "ffn_hidden_size", "mlp_dim", "intermediate_dim", "inner_dim", "encoder_intermediate_size",
                      "decoder_intermediate_size")
MOE_INTERMEDIATE = _named("moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size",
                          "moe_ffn_hidden_size")
EXPERTS = _named("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "num_routed_experts")
TOP_K = _named("num_experts_per_tok", "moe_topk", "top_k", "num_experts_per_token", "moe_k", "router_topk",
               "top_k_experts")
ONE = _named("n_group", "topk_group", "n_shared_experts", "num_shared_experts", "first_k_dense_replace")
VOCAB = _named("vocab_size", "text_vocab_size")
# Multi-head latent attention (DeepSeek-style) dimensions.
MLA = {"qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16, "kv_lora_rank": 32, "q_lora_rank": 32}
# Boolean switches that would need timm or downloaded weights.
FALSE = _named("use_timm_backbone", "use_pretrained_backbone")
# State-space (Mamba) sizes.
SSM = {"mamba_n_heads": 4, "mamba_d_state": 16, "state_size": 16, "ssm_state_size": 16, "mamba_chunk_size": 32,
       "chunk_size": 32}
TOKEN_ID = re.compile(r"(token_id|token_index|token_ids|_tokens)$")
# Per-layer kind lists of hybrid models.
LAYER_KIND_LISTS = ("layer_types", "layers_block_type", "block_types", "hybrid_override_pattern_list",
                    "mlp_layer_types", "attn_layer_types")


class Level:
    """One configuration level being reduced: its values and what the rules ask about them."""

    def __init__(self, values: dict[str, Any], bounds: Bounds, map_tokens: Callable[[Any], Any]):
        self.values = values
        self.bounds = bounds
        self.map_tokens = map_tokens
        # Hierarchical (per-stage) attention: head counts given as lists.
        self.hierarchical = any(isinstance(values.get(n), (list, tuple)) for n in HEADS.names)
        self.old_heads = next((values[n] for n in HEADS.names if is_int(values.get(n))), None)
        self.layer_counts: dict[int, int] = {}  # an original layer count -> its reduced count

    def given(self, fields: Fields) -> bool:
        """Whether the level has any field of `fields` (by name)."""
        return any(n in self.values for n in fields.names)


KEEP = object()  # a rule's answer that leaves the field as it is


def _kv_heads(name: str, value: Any, level: Level) -> int:
    """All heads where the kv count equals the head count (plain multi-head), else TINY_KV_HEADS."""
    heads = level.values.get(name.replace("_key_value_", "_attention_"), level.old_heads) \
        if name in KV_SUFFIX else level.old_heads
    return level.bounds.heads if value == heads else level.bounds.kv_heads


def _at_most_one_each(name: str, value: Any, level: Level) -> Any:
    return type(value)(min(v, 1) for v in value)


def _last_layer(name: str, value: Any, level: Level) -> int:
    return level.bounds.layers - 1


def _image_size(name: str, value: Any, level: Level) -> Any:
    reduced = tiny_image(value, level.values.get("patch_size"), level.bounds.image)
    return KEEP if reduced is None else reduced


def _token_ids(name: str, value: Any, level: Level) -> Any:
    mapped = level.map_tokens(value)
    return KEEP if mapped == value else mapped


# Conditions a rule may name. "above": an int above the value the rule sets.
CONDITIONS: dict[str, Callable[[str, Any, Level, Any], bool]] = {
    "int": lambda name, value, level, new: is_int(value),
    "above": lambda name, value, level, new: is_int(value) and value > new,
    "above_one": lambda name, value, level, new: is_int(value) and value > 1,
    "three": lambda name, value, level, new: value == 3,
    "at_least_layers": lambda name, value, level, new: is_int(value) and value >= level.bounds.layers,
    "int_list": lambda name, value, level, new: bool(is_int_list(value)),
    "unset": lambda name, value, level, new: value is None,
    "true": lambda name, value, level, new: value is True,
    "flat": lambda name, value, level, new: not level.hierarchical,
    "heads_known": lambda name, value, level, new: level.old_heads is not None,
    "experts_given": lambda name, value, level, new: level.given(EXPERTS),
    "expert_width_given": lambda name, value, level, new: level.given(MOE_INTERMEDIATE),
    # not a stage count (= len(depths)) of a hierarchical backbone
    "not_stage_count": lambda name, value, level, new: not (is_int_list(level.values.get("depths"))
                                                              and value == len(level.values["depths"])),
}


@dataclasses.dataclass(frozen=True)
class Rule:
    """Fields matching `fields` for which every condition of `when` holds become `to`: a Bounds
    field's name, a literal, or a function (name, value, level) -> new value or KEEP. A
    layer-count rule also notes the count it reduced (per-layer lists follow it)."""

    fields: Fields
    when: tuple[str, ...]
    to: str | int | Callable[[str, Any, Level], Any]
    layer_count: bool = False


def _rule(fields: Fields, when: str, to: Any, layer_count: bool = False) -> Rule:
    return Rule(fields, tuple(c.strip() for c in when.split(",") if c.strip()), to, layer_count)


# In order: the first rule that matches a field decides it.
RULES: tuple[Rule, ...] = (
    _rule(VOCAB, "above", "vocab"),
    _rule(_named("vocab_size"), "unset", "vocab"),  # also where the default leaves it unset
    # a layer count; the KV-sharing count is not one
    _rule(dataclasses.replace(LAYERS, excluded=frozenset({"num_kv_shared_layers"})), "above, not_stage_count",
          "layers", layer_count=True),
    _rule(_pattern(r"^(.*_)?depths$"), "int_list", _at_most_one_each),
    _rule(_either(HIDDEN, HIDDEN_SUFFIX), "above, flat", "hidden"),
    _rule(_either(HEADS, HEADS_SUFFIX), "above, flat", "heads"),
    _rule(_either(HEADS, HEADS_SUFFIX), "int, three, flat", "heads"),
    _rule(_either(KV_HEADS, KV_SUFFIX), "above_one", _kv_heads),
    _rule(Fields(KV_HEADS.names - {"multi_query_group_num"}), "unset, heads_known", "heads"),  # plain multi-head
    _rule(HEAD_DIM, "int, flat", "head_dim"),
    _rule(INTERMEDIATE, "above", "intermediate"),
    _rule(MOE_INTERMEDIATE, "above", "moe_intermediate"),
    _rule(MOE_INTERMEDIATE, "unset, experts_given", "moe_intermediate"),  # an MoE without its expert width
    _rule(EXPERTS, "above", "experts"),
    _rule(EXPERTS, "unset, expert_width_given", "experts"),  # an MoE without its expert count
    _rule(TOP_K, "above", "top_k"),
    _rule(TOP_K, "unset, experts_given", "top_k"),  # some defaults leave the routing width unset
    _rule(_named("num_queries"), "above", "queries"),
    *(_rule(_named(name), "above", size) for name, size in MLA.items()),
    *(_rule(_named(name), "above", size) for name, size in SSM.items()),
    _rule(_named("rotary_dim"), "above", "head_dim"),
    _rule(FALSE, "true", False),
    _rule(_pattern(r"_layer_period$"), "above", "layers"),
    _rule(_pattern(r"_layer_offset$"), "at_least_layers", _last_layer),
    # with two layers, sharing would leave a layer kind without a cache
    _rule(_named("num_kv_shared_layers"), "int", 0),
    # some MoE defaults leave it unset although the model multiplies by it
    _rule(_named("n_shared_experts", "num_shared_experts"), "unset, experts_given", 1),
    _rule(ONE, "above", 1),
    _rule(_named("image_size"), "", _image_size),
    _rule(_named("max_source_positions"), "above", "source_positions"),
    _rule(Fields(frozenset(), (TOKEN_ID,)), "", _token_ids),
)


def _new_value(rule: Rule, name: str, value: Any, level: Level) -> Any:
    """The value `rule` gives the field, or None when the rule does not apply to it."""
    if callable(rule.to):
        new = None
    elif isinstance(rule.to, str):
        new = getattr(level.bounds, rule.to)
    else:
        new = rule.to
    if not all(CONDITIONS[c](name, value, level, new) for c in rule.when):
        return None
    return rule.to(name, value, level) if callable(rule.to) else new


def reduce_fields(level: Level) -> dict[str, Any]:
    """RULES over one level's fields: {name: new value} of the fields a rule changed."""
    out = {}
    for name, value in level.values.items():
        for rule in RULES:
            if name not in rule.fields:
                continue
            new = _new_value(rule, name, value, level)
            if new is None:
                continue
            if new is not KEEP:
                out[name] = new
                if rule.layer_count:
                    level.layer_counts[value] = new
            break
    return out


# --------------------------------------------------------------------------- rules over several fields


def reduce_level(level: Level, keep_features: bool = False, mrope: bool = False) -> dict[str, Any]:
    """{name: new value} for one level: RULES, then the rules that weigh several fields.

    `keep_features`: a Hub model's own config (its GQA ratio and sliding window kept);
    `mrope`: the configuration uses multimodal RoPE sections.
    """
    values = level.values
    out = reduce_fields(level)
    if keep_features:
        out.update(_kept_features(values, out, level.bounds))
    if "qk_rope_head_dim" in out and is_int(values.get("head_dim")):
        out["head_dim"] = out["qk_rope_head_dim"]  # in MLA configs head_dim is the rotary size
    head_dim = _new_head_dim(values, out)
    if head_dim and values.get("head_dim", 0) is None and "head_dim" not in out:
        out["head_dim"] = head_dim  # some models read config.head_dim without a fallback
    if mrope and head_dim:
        out.update(_mrope_sections(values, out, head_dim))
    out.update(_backbone_outputs(values, out, level.bounds))
    out.update(_per_layer_lists(level, out))
    return out


def _kept_features(values: dict[str, Any], out: dict[str, Any], bounds: Bounds) -> dict[str, Any]:
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
    return _kept_gqa_ratio(values, out, bounds) | _kept_window(values, out, bounds)


def _kept_gqa_ratio(values: dict[str, Any], out: dict[str, Any], bounds: Bounds) -> dict[str, Any]:
    """Head and kv-head counts with the config's ratio (see _kept_features), or {}."""
    heads_name = next((n for n in HEADS.names if is_int(values.get(n))), None)
    kv_name = next((n for n in KV_HEADS.names if is_int(values.get(n))), None)
    if not (heads_name and kv_name and values[kv_name] >= 1 and values[heads_name] % values[kv_name] == 0):
        return {}
    ratio = values[heads_name] // values[kv_name]
    kv = 1 if values[kv_name] == 1 else max(1, bounds.heads // ratio)
    heads = bounds.heads if values[kv_name] == 1 else kv * ratio
    hidden = next((out[n] for n in HIDDEN.names if is_int(out.get(n))), None)
    if not any(is_int(values.get(n)) for n in HEAD_DIM.names) and hidden and hidden % heads:
        return {}  # cannot split the hidden size: keep them
    return {heads_name: heads, kv_name: kv}


def _kept_window(values: dict[str, Any], out: dict[str, Any], bounds: Bounds) -> dict[str, Any]:
    """The sliding window and max_window_layers of a Hub config (see _kept_features), or {}."""
    changes = {}
    window = values.get("sliding_window")
    if is_int(window) and window > bounds.window:
        changes["sliding_window"] = bounds.window
    layers_name = next((n for n in ("num_hidden_layers", "num_layers", "n_layer") if is_int(values.get(n))), None)
    start = values.get("max_window_layers")
    if is_int(start) and layers_name and values[layers_name] > 0 and is_int(out.get(layers_name)):
        changes["max_window_layers"] = round(start * out[layers_name] / values[layers_name])
    return changes


def _mrope_sections(values: dict[str, Any], out: dict[str, Any], head_dim: int) -> dict[str, Any]:
    """Multimodal RoPE splits the rotary half-dimension into (t, h, w) sections; modelling code
    defaults them (in ratio 2:3:3) when the config has none. Rescaled to the new head size."""
    rope = out.get("rope_parameters", values.get("rope_parameters"))
    if not (isinstance(rope, dict) and "rope_type" in rope):
        return {}
    partial = rope.get("partial_rotary_factor") or values.get("partial_rotary_factor") or 1.0
    sections = rope.get("mrope_section") if is_int_list(rope.get("mrope_section")) else [2, 3, 3]
    return {"rope_parameters": dict(rope, mrope_section=_rescale(sections, int(head_dim * partial) // 2))}


def _per_layer_lists(level: Level, out: dict[str, Any]) -> dict[str, Any]:
    """Per-layer lists (layer_types, mlp_only_layers masks, ...) cut to their layer count's
    reduced length."""
    changes = {}
    for name, value in level.values.items():
        if name in out or not isinstance(value, (list, tuple)):
            continue
        if len(value) in level.layer_counts and len(value) > level.bounds.layers:
            changes[name] = type(value)(value[: level.layer_counts[len(value)]])
    return changes


def _backbone_outputs(values: dict[str, Any], out: dict[str, Any], bounds: Bounds) -> dict[str, Any]:
    """Keeps a plain (non-hierarchical) backbone's output layers inside its reduced depth.

    A neck that reads k layers of a ViT-like backbone (out_indices [9, 10, 11, 12],
    DPT's backbone_out_indices [2, 5, 8, 11]) gets the last k of max(2, k) layers.
    """
    layers_field = next((n for n in ("num_hidden_layers", "num_layers", "depth") if is_int(out.get(n))), None)
    if layers_field is None or "depths" in values:
        return {}
    changes = {}
    features = values.get("out_features")
    if values.get("out_indices") is None and is_str_list(features) and all(
            re.fullmatch(r"stage\d+", f) for f in features):
        values = dict(values, out_indices=[int(f[5:]) for f in features])
    for name in ("out_indices", "backbone_out_indices"):
        indices = values.get(name)
        if not is_int_list(indices) or max(indices) < out[layers_field]:
            continue
        count = max(bounds.layers, len(indices))
        changes[layers_field] = max(changes.get(layers_field, 0), count)
        first = 1 if name == "out_indices" else 0  # out_indices count the embeddings as stage 0
        changes[name] = type(indices)(range(first + count - len(indices), first + count))
        if name == "out_indices" and "out_features" in values:
            changes["out_features"] = None
    return changes


def _new_head_dim(values: dict[str, Any], out: dict[str, Any]) -> int | None:
    """The attention head size of a reduced level, when it can be told."""
    for name in HEAD_DIM.names:
        if is_int(out.get(name)):
            return out[name]
    hidden = next((out[n] for n in HIDDEN.names if is_int(out.get(n))), None)
    heads = next((out[n] for n in HEADS.names if is_int(out.get(n))), None)
    if hidden and heads:
        return hidden // heads
    return None


def _rescale(sections: list[int], total: int) -> list[int]:
    """Integer sections proportional to `sections`, each >= 1, summing to `total`."""
    scale = total / sum(sections)
    new = [max(1, int(round(x * scale))) for x in sections]
    new[-1] += total - sum(new)
    while new[-1] < 1:  # rounding overshot: take from the largest
        new[new.index(max(new))] -= 1
        new[-1] += 1
    return new


def tiny_image(value: Any, patch: Any, bound: int) -> Any:
    """A small image size (about `bound`) that is a multiple of the patch size, or None to keep `value`."""
    if isinstance(patch, (list, tuple)):
        patch = patch[0] if patch else None
    step = patch if is_int(patch) and patch > 0 else 1
    size = step * max(2, math.ceil(bound / step))
    if is_int(value) and value > size:
        return size
    if is_int_list(value) and any(v > size for v in value):
        return type(value)(min(v, size) for v in value)
    return None


# --------------------------------------------------------------------------- the tree


class Reducer:
    """Shrinks one configuration tree; keeps one special-token id map for the whole tree."""

    def __init__(self, config_overrides: dict[str, Any], keep_features: bool = False, bounds: Bounds = TINY):
        self.overrides = config_overrides  # {"a.b.field": value}
        self.token_map: dict[int, int] = {}
        # A Hub model's own config (doc/model-factory.md, "Hub models"): the features its
        # reduction keeps by rule (GQA ratio, sliding window) where the generic rules would not.
        self.keep_features = keep_features
        self.bounds = bounds

    def _new_token(self, old: int) -> int:
        if old not in self.token_map:
            self.token_map[old] = self.bounds.vocab - 1 - len(self.token_map)
        return self.token_map[old]

    def map_tokens(self, value: Any) -> Any:
        """Special-token ids beyond the reduced vocabulary mapped to its last ids (one map per tree)."""
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            return self._new_token(value) if value >= self.bounds.vocab else value
        if isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return type(value)(self.map_tokens(v) for v in value)
        return value

    def rebuild(self, config: Any, prefix: str = "", init_kwargs: dict[str, Any] | None = None) -> Any:
        """A reduced copy of `config` (a PreTrainedConfig instance).

        `init_kwargs` are the keyword arguments `config` was made with (a parent's
        sub-config spec); the rebuilt configuration gets them plus the reductions.
        """
        cls = type(config)
        is_dataclass, values = _level_values(config)
        sub_keys = set(getattr(cls, "sub_configs", {}) or {}) | {n for n, v in values.items() if is_config(v)}
        plain = _plain_values(config, values, sub_keys)
        kwargs = {k: v for k, v in (init_kwargs or {}).items() if k != "model_type" and k not in sub_keys}
        if self.keep_features:  # a given config: every value of its own, not the class defaults
            kwargs = {k: v for k, v in plain.items() if k != "model_type"} | kwargs
        level = Level(plain, self.bounds, self.map_tokens)
        kwargs.update(reduce_level(level, self.keep_features, _uses_mrope(cls, plain)))
        kwargs.update(self._rebuilt_sub_configs(config, sub_keys, prefix))
        kwargs.update(self._overrides_at(prefix))
        if not is_dataclass:  # a configuration that is not a dataclass: patch in place
            for name, value in kwargs.items():
                setattr(config, name, value)
            return config
        return self._construct(config, plain, kwargs)

    def _rebuilt_sub_configs(self, config: Any, sub_keys: set[str], prefix: str) -> dict[str, Any]:
        """{key: reduced sub-configuration} of `config`'s sub-configurations, in key order."""
        specs = getattr(type(config), "sub_configs_defaults", None) or {}
        out = {}
        for key in sorted(sub_keys):
            original = getattr(config, key, None)
            sub = _native_backbone(original)
            if is_config(sub):
                spec = specs.get(key) if sub is original else None
                out[key] = self.rebuild(sub, f"{prefix}{key}.", getattr(spec, "init_kwargs", None))
        return out

    def _overrides_at(self, prefix: str) -> dict[str, Any]:
        """The config overrides of the level at `prefix` ("a.b."): {field: value}."""
        return {path[len(prefix):]: value for path, value in self.overrides.items()
                if path.startswith(prefix) and "." not in path[len(prefix):]}

    def _construct(self, config: Any, plain: dict[str, Any], kwargs: dict[str, Any]) -> Any:
        """type(config)(**kwargs), re-made with every layer kind of `config` where the
        reduction lost one (or where the constructor refused a hybrid without one)."""
        cls = type(config)
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

    def _keep_layer_kinds(self, old: Any, new: Any, values: dict[str, Any],
                          kwargs: dict[str, Any]) -> dict[str, Any] | None:
        """Constructor kwargs that keep every layer kind of `old`, or None if `new` has them all.

        Hybrid models (attention + linear attention / SSM layers) list their layers'
        kinds; the first two layers alone may all be of one kind.
        """
        changed = {}
        for name in LAYER_KIND_LISTS:
            if name not in values:  # a derived property, not a constructor field
                continue
            before = get(old, name)
            after = get(new, name) if new is not None else list(before or ())[: self.bounds.layers]
            if not (is_str_list(before) and is_str_list(after)) or set(after) >= set(before):
                continue
            changed[name] = _representative(list(before), len(after))
        if not changed:
            return None
        count = max(len(v) for v in changed.values())
        kwargs = dict(kwargs, **changed)
        for name, _value in values.items():
            if name in LAYERS and kwargs.get(name) == self.bounds.layers:
                kwargs[name] = count
        return kwargs


def _level_values(config: Any) -> tuple[bool, dict[str, Any]]:
    """(whether the configuration class is a dataclass, its public field values)."""
    cls = type(config)
    # In declaration order, never a set's: the order in which special-token ids are met
    # decides which reduced id each gets (Reducer.map_tokens), so a set's hash order made
    # a model's reduced config differ from process to process (PYTHONHASHSEED).
    fields = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []
    values = {name: get(config, name) for name in fields if not name.startswith("_")}
    if not fields:
        values = {k: v for k, v in vars(config).items() if not k.startswith("_")}
    return bool(fields), values


def _plain_values(config: Any, values: dict[str, Any], sub_keys: set[str]) -> dict[str, Any]:
    """The level's values that are not sub-configurations, with a backbone's out_indices and
    out_features (properties over private fields) read through their properties."""
    plain = {n: v for n, v in values.items() if n not in sub_keys}
    for name in ("out_indices", "out_features"):
        if name not in plain and isinstance(get(config, name), (list, tuple)):
            plain[name] = list(get(config, name))
    return plain


def _native_backbone(config: Any) -> Any:
    """transformers' own ResNet in place of a timm ResNet backbone (timm is not installed).

    Same output stages and input channels; transformers' ResNet default is the
    ResNet-50 layout that timm's default "resnet50" names.
    """
    if getattr(config, "model_type", None) != "timm_backbone":
        return config
    from transformers import CONFIG_MAPPING

    out_indices = list(getattr(config, "out_indices", None) or [1, 2, 3, 4])
    return CONFIG_MAPPING["resnet"](out_indices=out_indices, num_channels=getattr(config, "num_channels", 3))


def _uses_mrope(cls: type, values: dict[str, Any]) -> bool:
    """Whether a configuration class uses multimodal RoPE sections (declared, or present)."""
    if "mrope_section" in (getattr(cls, "ignore_keys_at_rope_validation", None) or ()):
        return True
    rope = values.get("rope_parameters")
    return isinstance(rope, dict) and bool(is_int_list(rope.get("mrope_section")))


def _representative(kinds: list[str], n: int) -> list[str]:
    """n or more entries of `kinds`, in order, including every distinct kind at least once."""
    firsts = sorted({kinds.index(k) for k in kinds})
    others = [i for i in range(len(kinds)) if i not in firsts]
    picks = sorted(firsts + others[: max(0, n - len(firsts))])
    return [kinds[i] for i in picks]


# --------------------------------------------------------------------------- value kinds


def get(config: Any, name: str) -> Any:
    """config.name, or None where reading it raises (per-layer attributes of heterogeneous configs)."""
    try:
        return getattr(config, name, None)
    except Exception:
        return None


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_int_list(value: Any) -> Any:
    """A non-empty list or tuple of ints (the value itself when so, as a truthy value)."""
    return isinstance(value, (list, tuple)) and value and all(is_int(v) for v in value)


def is_str_list(value: Any) -> Any:
    return isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value)


def is_config(value: Any) -> bool:
    from transformers import PreTrainedConfig

    return isinstance(value, PreTrainedConfig)
