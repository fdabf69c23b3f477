"""A team's own modelling code: `code:NAME@HASH` models (doc/probe.md, "Own code").

The request's model_path is "FILE.py:FUNCTION". FUNCTION is either
  - a callable returning a model, or (model, inputs), or {"model": ..., "inputs": ...}
    (inputs: {name: tensor}, on the CPU), called with no arguments after
    torch.manual_seed(seed); or
  - a PreTrainedModel subclass, built here from its own config class's defaults, reduced as
    the factory reduces an architecture's default config, seeded.
The file is imported under a module name of its own (not added to sys.modules' usual names),
so two code models in one zygote never share a module.

Checkpoints whose config.json names custom code (`auto_map`) are loaded here too, with
transformers' trust_remote_code, only when the request's kind_params say trust_remote_code.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from typing import Any

from . import heads

# model_id prefix of code models.
PREFIX = "code:"
# Hex digits of the file's SHA-256 kept in the model id.
ID_HASH_CHARS = 16


def split_spec(spec: str) -> tuple[str, str]:
    """("FILE.py", "FUNCTION") of "FILE.py:FUNCTION"; ValueError when malformed."""
    path, sep, function = spec.rpartition(":")
    if not sep or not path or not function or not function.isidentifier():
        raise ValueError(f"--model-code {spec!r}: not FILE.py:FUNCTION")
    return path, function


def file_sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load_object(spec: str) -> Any:
    """The object FUNCTION of FILE (imported fresh under a private module name)."""
    path, function = split_spec(spec)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"model code file {path} does not exist")
    name = "compatlab_code_" + hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:12]
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    if not hasattr(module, function):
        raise AttributeError(f"{path} defines no {function}")
    return getattr(module, function)


def registered_head(model_type: str, cls: type) -> tuple[str, str]:
    """(registered class name, head kind) of the first class in cls's MRO that transformers
    registers for `model_type`; (cls.__name__, "base") when none is."""
    for base in cls.__mro__:
        kind = heads.head_kind_of_class(model_type, base.__name__) if model_type else None
        if kind:
            return base.__name__, kind
    return cls.__name__, "base"


def stock_class(model_type: str, cls: type) -> type | None:
    """The class transformers itself registers for the model's architecture: the first class
    of cls's MRO that it registers for `model_type` (the baseline's code), else None."""
    from . import factory

    name, kind = registered_head(model_type, cls)
    if not model_type or heads.head_kind_of_class(model_type, name) is None:
        return None
    return factory.import_class(model_type, name)


def model_class(spec: str, model_type: str, seed: int) -> tuple[type, str]:
    """(class, head kind) of the code model `spec`: the class FUNCTION names, else the class
    of the model the function returns (built once, seeded, to see it)."""
    obj = load_object(spec)
    cls = obj if _is_model_class(obj) else type(build(spec, seed)[0])
    return cls, registered_head(model_type, cls)[1]


def _is_model_class(obj: Any) -> bool:
    try:
        from transformers import PreTrainedModel
    except ImportError:  # pragma: no cover - transformers is pinned
        return False
    return isinstance(obj, type) and issubclass(obj, PreTrainedModel)


def build(spec: str, seed: int, overrides_of=None) -> tuple[Any, dict[str, Any] | None, Any]:
    """(model in eval mode, its inputs or None, the config it was built from or None)."""
    import torch

    obj = load_object(spec)
    torch.manual_seed(seed)
    if _is_model_class(obj):
        from . import factory

        config_class = getattr(obj, "config_class", None)
        if config_class is None:
            raise TypeError(f"{spec}: {obj.__name__} has no config_class")
        model_type = getattr(config_class, "model_type", "") or ""
        overrides = (overrides_of or factory.model_overrides)(model_type) if model_type else {}
        config = factory.reduce_given_config(config_class(), overrides)
        return factory.build_model(obj, config, torch.float32, seed), None, config
    if not callable(obj):
        raise TypeError(f"{spec}: not a callable or a PreTrainedModel subclass")
    out = obj()
    inputs = None
    if isinstance(out, tuple) and len(out) == 2:
        out, inputs = out
    elif isinstance(out, dict) and "model" in out:
        out, inputs = out["model"], out.get("inputs")
    if not isinstance(out, torch.nn.Module):
        raise TypeError(f"{spec} returned {type(out).__name__}, not a torch.nn.Module "
                        "(or (model, inputs), or {'model': ..., 'inputs': ...})")
    if inputs is not None and (not isinstance(inputs, dict)
                               or not all(isinstance(v, torch.Tensor) for v in inputs.values())):
        raise TypeError(f"{spec}: its inputs must be a dict of tensors")
    return out.eval(), inputs, None


def describe(spec: str) -> dict[str, Any]:
    """{"code": {...}} for `compatlab_probe.catalog --model-code`: what planning needs."""
    path, function = split_spec(spec)
    model, inputs, _ = build(spec, 0)
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", "") or ""
    head_class, head_kind = registered_head(model_type, type(model))
    return {"code": {"model_type": model_type, "model_class": type(model).__name__,
                     "head_class": head_class, "head_kind": head_kind,
                     "sha256": file_sha256(path), "has_inputs": inputs is not None}}


# --------------------------------------------------------------------------- remote code


def auto_map(path: str) -> dict[str, Any]:
    """The auto_map of a checkpoint's config.json ({} when none)."""
    try:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError):
        return {}
    value = config.get("auto_map") if isinstance(config, dict) else None
    return value if isinstance(value, dict) else {}


# auto_map keys by preference, with the head kind of each.
_AUTO_KEYS = (("AutoModelForCausalLM", "causal_lm"), ("AutoModelForSeq2SeqLM", "seq2seq_lm"),
              ("AutoModelForMaskedLM", "masked_lm"),
              ("AutoModelForSequenceClassification", "sequence_classification"), ("AutoModel", "base"))


def remote_class(path: str) -> tuple[type, str]:
    """(class, head kind) of a trusted checkpoint's auto_map: its own modelling code."""
    from transformers.dynamic_module_utils import get_class_from_dynamic_module

    mapping = auto_map(path)
    for key, kind in _AUTO_KEYS:
        ref = mapping.get(key)
        if isinstance(ref, (list, tuple)):
            ref = ref[0]
        if isinstance(ref, str) and ref:
            return get_class_from_dynamic_module(ref, path, local_files_only=True), kind
    raise LookupError(f"checkpoint {path}: its auto_map names no model class ({sorted(mapping)})")


def remote_head(path: str) -> tuple[str, str, str]:
    """(model_type, head class, head kind) of a trusted checkpoint with custom code."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(path, local_files_only=True, trust_remote_code=True)
    cls, kind = remote_class(path)
    return config.model_type, cls.__name__, kind
