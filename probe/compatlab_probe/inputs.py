"""Seeded inputs for a built model, chosen from its main input, forward signature and config.

The main input (model.main_input_name) decides the modality:
  input_ids      text: input_ids [batch, seq_len] with special-token ids left out,
                 attention_mask; decoder_input_ids for encoder-decoders
  pixel_values   images [batch, channels, size, size] at the vision config's
                 image size (videos [batch, frames, channels, size, size])
  input_values   raw audio [batch, samples], seq_len frames of 320 samples
  input_features log-mel features: [batch, mel, frames] (whisper layout) or
                 [batch, frames, features] when the config has input_feat_per_channel
Two-tower heads (zero-shot image classification, CLIP-like base models) get
both text and images. Per-architecture hints in overrides.json ("inputs") can
add or change inputs; see doc/model-factory.md.
"""

import inspect

import torch

from .factory import special_token_ids

SAMPLES_PER_FRAME = 320
TWO_TOWER_KINDS = {"zero_shot_image_classification"}


def _vision_config(config):
    return getattr(config, "vision_config", None) or config


def _text_config(config):
    try:
        return config.get_text_config(decoder=True)
    except Exception:  # configs without a text part
        return config


def _image_size(config):
    size = getattr(_vision_config(config), "image_size", None) or 64
    if isinstance(size, dict):
        size = [size.get("height", 64), size.get("width", 64)]
    if isinstance(size, (list, tuple)):
        return int(size[0]), int(size[-1])
    return int(size), int(size)


def _token_ids(config, shape, gen, vocab=None):
    """Random token ids below the vocabulary size, never a special token id."""
    vocab = vocab or getattr(_text_config(config), "vocab_size", None) or getattr(config, "vocab_size", None) or 1000
    specials = special_token_ids(config)
    allowed = torch.tensor([i for i in range(min(vocab, 4096)) if i not in specials] or [0])
    picks = torch.randint(0, len(allowed), shape, generator=gen)
    return allowed[picks]


def make_inputs(model, config, head_kind, batch_size, seq_len, seed=0, hints=None):
    """The keyword arguments of one forward call of `model`."""
    hints = dict(hints or {})
    gen = torch.Generator().manual_seed(seed)
    params = inspect.signature(model.forward).parameters
    main = getattr(model, "main_input_name", "input_ids") or "input_ids"
    main = hints.pop("main_input", main)
    b, s = batch_size, seq_len
    inputs = {}

    wants_text = main == "input_ids" or head_kind in TWO_TOWER_KINDS or (
        "input_ids" in params and "pixel_values" in params and main == "pixel_values"
        and getattr(config, "text_config", None) is not None)
    wants_image = main == "pixel_values" or head_kind in TWO_TOWER_KINDS

    if wants_text and "input_ids" in params:
        inputs["input_ids"] = _token_ids(config, (b, s), gen)
        if "attention_mask" in params:
            inputs["attention_mask"] = torch.ones(b, s, dtype=torch.long)
    if wants_image:
        h, w = _image_size(config)
        channels = getattr(_vision_config(config), "num_channels", 3) or 3
        frames = getattr(_vision_config(config), "num_frames", None)
        shape = (b, frames, channels, h, w) if frames else (b, channels, h, w)
        inputs["pixel_values"] = torch.randn(shape, generator=gen)
    if main == "input_values":
        inputs["input_values"] = torch.randn(b, s * SAMPLES_PER_FRAME + 80, generator=gen)
    if main == "input_features":
        inputs["input_features"] = _audio_features(config, b, s, gen)
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in params:
        inputs["decoder_input_ids"] = _token_ids(config, (b, s), gen)
    for name, value in hints.items():
        inputs[name] = _from_hint(value, b, s, gen)
    return inputs


def _audio_features(config, b, s, gen):
    mel = getattr(config, "num_mel_bins", None)
    positions = getattr(config, "max_source_positions", None)
    if getattr(config, "input_feat_per_channel", None):
        feats = config.input_feat_per_channel * getattr(config, "input_channels", 1)
        return torch.randn(b, s * 4, feats, generator=gen)
    frames = 2 * positions if positions else s * 4
    return torch.randn(b, mel or 80, frames, generator=gen)


def _from_hint(value, b, s, gen):
    """A tensor from an overrides.json input hint: {"shape": [...], "dtype": ..., "high": n}.

    Shape entries may be "batch" or "seq" for the request's batch size and
    sequence length; a plain number or list is used as given.
    """
    if not isinstance(value, dict):
        return torch.tensor(value)
    shape = [b if d == "batch" else s if d == "seq" else int(d) for d in value["shape"]]
    dtype = value.get("dtype", "float32")
    if dtype in ("long", "int64"):
        return torch.randint(0, int(value.get("high", 2)), shape, generator=gen)
    if dtype == "ones":
        return torch.ones(shape, dtype=torch.long)
    return torch.randn(shape, generator=gen)
