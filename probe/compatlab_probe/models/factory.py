"""Model factory: a tiny, seeded model of any transformers architecture, or a local checkpoint.

`reduce_config(model_type)` starts from the architecture's default configuration
(CONFIG_MAPPING[model_type]()) and shrinks it by generic, name-based rules
(reduction.RULES, a table of per-field rules, and the rules over several fields there),
recursing into sub-configurations; per-architecture
exceptions are data in overrides.json. Configurations are dataclasses whose
__post_init__ derives some attributes from others, so a reduced configuration is
rebuilt through the constructor rather than patched in place: derived values
are then recomputed from the reduced ones.

See doc/model-factory.md for the rules and the head-class choice.
"""

from __future__ import annotations

import importlib
import json
import os
from typing import Any

from . import heads
from .reduction import MILDER, TINY, TOKEN_ID, Bounds, Reducer, is_config, is_int, is_int_list

# The tiny model's sizes (reduction.TINY; tests and callers read them here).
TINY_VOCAB = TINY.vocab
TINY_WINDOW = TINY.window

OVERRIDES_PATH = os.path.join(os.path.dirname(__file__), "overrides.json")


def load_overrides(path: str = OVERRIDES_PATH) -> dict[str, Any]:
    """The per-architecture overrides: {model_type: {...}} (see overrides.json's _doc)."""
    with open(path) as f:
        data = json.load(f)
    return data["models"]


def model_overrides(model_type: str) -> dict[str, Any]:
    return load_overrides().get(model_type, {})


# --------------------------------------------------------------------------- reduction


def reduce_config(model_type: str, overrides: dict[str, Any] | None = None, bounds: Bounds = TINY) -> Any:
    """The tiny configuration of `model_type`: defaults shrunk by the rules, then overrides."""
    from transformers import CONFIG_MAPPING

    if overrides is None:
        overrides = model_overrides(model_type)
    config = CONFIG_MAPPING[model_type]()
    return Reducer(overrides.get("config", {}), bounds=bounds).rebuild(config)


def reduce_given_config(config: Any, overrides: dict[str, Any] | None = None, bounds: Bounds = TINY) -> Any:
    """A Hub model's own configuration, shrunk by the same rules with its features kept
    (_kept_features), then the architecture's overrides."""
    overrides = overrides if overrides is not None else model_overrides(config.model_type)
    return Reducer(overrides.get("config", {}), keep_features=True, bounds=bounds).rebuild(config)


# Bytes per parameter a full-size rerun needs besides the model's own dtype: the CPU
# reference's float64 copy.
REFERENCE_BYTES_PER_PARAM = 8


def milder_config(given: Any, model_type: str, overrides: dict[str, Any] | None = None) -> Any:
    """The milder reduction (reduction.MILDER: the bounds of a reduction rerun whose full size
    does not fit its memory budget, doc/model-factory.md, "Reduction reruns") of a Hub config
    (`given`) or of `model_type`'s default config."""
    if given is not None:
        return reduce_given_config(given, overrides, MILDER)
    return reduce_config(model_type, overrides, MILDER)


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
             if k in after and is_int(before[k]) and is_int(after[k]) and before[k] != after[k]]
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
    if is_int(limit) and length > limit:
        return (f"seq_len {length} exceeds the architecture's position limit {limit} "
                f"(overrides.json max_positions: {(overrides or {}).get('_why', 'fixed by the architecture')})")
    wanted = length + POSITION_MARGIN
    changes = {}

    def walk(cfg, prefix, depth):
        if depth > 4:
            return
        for name, value in list(vars(cfg).items()):
            if is_config(value):
                walk(value, f"{prefix}{name}.", depth + 1)
            elif name in POSITION_FIELDS and is_int(value) and value < wanted:
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
            if is_config(value):
                walk(value, depth + 1)
            elif TOKEN_ID.search(name):
                if is_int(value):
                    found.add(value)
                elif is_int_list(value):
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
