"""Seeded inputs for a built model, chosen from its main input, forward signature and config.

The main input (model.main_input_name) and the forward's required parameters
decide what is made:
  input_ids      text: input_ids [batch, seq_len] with special-token ids left out,
                 attention_mask; decoder_input_ids for encoder-decoders
  pixel_values   images [batch, channels, size, size] at the vision config's
                 image size (videos [batch, frames, channels, size, size],
                 image pairs [batch, 2, ...] for keypoint matchers)
  input_values   raw audio [batch, samples], seq_len frames of 320 samples
                 ([batch, channels, samples] for neural audio codecs)
  input_features log-mel features: [batch, mel, 2 * max_source_positions]
                 (whisper layout) or [batch, 4 * seq_len, features]
  grid_thw       Qwen-VL-style vision towers: flattened patches and their grid
  spatial_shapes NaFlex (SigLIP 2) towers: patchified images, mask and grid
Two-tower heads (zero-shot image classification, CLIP-like base models
without an image placeholder token) get both text and images. Per-architecture
hints in overrides.json ("inputs") can add or change inputs; see
doc/model-factory.md.
"""

from __future__ import annotations

import inspect
import os
import re
from typing import Any

import torch

from .factory import special_token_ids

SAMPLES_PER_FRAME = 320
TWO_TOWER_KINDS = {"zero_shot_image_classification"}
DEFAULT_IMAGE_SIZE = 64  # the image side when the configuration names none
# The forward arguments make_inputs builds by name (_input): compatlab could have given them.
BUILT_BY_NAME = ("input_ids", "pixel_values", "pixel_values_videos", "input_values", "input_features")
# An op refusing an input smaller than its window (pooling, convolution, padding).
_TOO_SMALL = re.compile(r"Output size is too small|Kernel size can't be greater than actual input size|"
                        r"Padding size should be less than the corresponding input dimension")


def _vision_config(config):
    return getattr(config, "vision_config", None) or config


def _text_config(config):
    try:
        return config.get_text_config(decoder=True)
    except Exception:  # configs without a text part
        return config


def _configured_image_size(config):
    """The vision configuration's image_size, or None where it names none."""
    return getattr(_vision_config(config), "image_size", None)


def _image_size(config):
    size = _configured_image_size(config) or DEFAULT_IMAGE_SIZE
    if isinstance(size, dict):
        size = [size.get("height", 64), size.get("width", 64)]
    if isinstance(size, (list, tuple)):
        return int(size[0]), int(size[-1])
    return int(size), int(size)


def allowed_token_ids(config) -> list[int]:
    """The ids random inputs are drawn from: below the vocabulary size (at most 4096), no special id."""
    vocab = getattr(_text_config(config), "vocab_size", None) or getattr(config, "vocab_size", None) or 1000
    specials = special_token_ids(config)
    return [i for i in range(min(vocab, 4096)) if i not in specials] or [0]


def _token_ids(config, shape, gen):
    """Random token ids below the vocabulary size, never a special token id."""
    allowed = torch.tensor(allowed_token_ids(config))
    picks = torch.randint(0, len(allowed), shape, generator=gen)
    return allowed[picks]


def uncallable_reason(model: Any, inputs: dict[str, Any]) -> str:
    """Why compatlab cannot call `model` with the inputs it built, from the class itself
    (never from an error's text), or "" when it can: the class has no forward of its own
    (nn.Module's placeholder: a composite whose parts are called one by one), or its
    forward requires an argument compatlab builds no input for (a video session, query
    embeddings, latents). Such a test is compatlab's failure, not the model's."""
    cls = type(model).__name__
    if getattr(type(model).forward, "__name__", "") == "_forward_unimplemented":
        return (f"{cls} has no forward of its own (a composite called part by part): compatlab cannot "
                f"call it as one model")
    params = inspect.signature(model.forward).parameters
    missing = [name for name, p in params.items()
               if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               and name not in inputs]
    if missing:
        return (f"compatlab builds no input for {cls}.forward's required argument(s) "
                f"{', '.join(repr(n) for n in missing)}")
    return ""


def unbuilt_input_reason(model: Any, inputs: dict[str, Any], hinted: set[str], exc: BaseException) -> str:
    """Why a forward call that raised `exc` failed on an input compatlab did not build (or built
    too small), from the call's own facts, or "" when it is the model's failure:
      - a tensor argument reached an op as None (a TypeError or AttributeError naming NoneType)
        and the innermost frame of the model's code (below torch's own) holds None in an
        argument of `model.forward` compatlab left out though it builds it by name
        (BUILT_BY_NAME, or the model's main input): the argument is named;
      - an op refused an input as smaller than its window (_TOO_SMALL) and the images were
        sized by compatlab itself (the configuration names no image size, no overrides hint in
        `hinted`): the argument and its size are named.
    Such a failure is compatlab's (harness_error), never the model's."""
    cls = type(model).__name__
    if isinstance(exc, (TypeError, AttributeError)) and "NoneType" in str(exc):
        name = _argument_left_none(model, inputs, exc)
        if name:
            return (f"compatlab gave {cls}.forward no {name!r} (an input it builds) and the model read it as None")
    if _TOO_SMALL.search(str(exc)):
        for name in ("pixel_values", "pixel_values_videos"):
            value = inputs.get(name)
            config = getattr(model, "config", None)
            if value is not None and name not in hinted and config is not None \
                    and _configured_image_size(config) is None:
                h, w = value.shape[-2:]
                return (f"the {h}x{w} image compatlab made for {name!r} (the configuration names no image size; "
                        f"compatlab's default side is {DEFAULT_IMAGE_SIZE}) is below {cls}'s minimum input size")
    return ""


def _argument_left_none(model: Any, inputs: dict[str, Any], exc: BaseException) -> str:
    """The forward argument compatlab builds by name but left out whose None value the
    innermost frame of the model's code holds when `exc` was raised, or ""."""
    import torch

    params = inspect.signature(model.forward).parameters
    buildable = set(BUILT_BY_NAME) | {getattr(model, "main_input_name", "") or "input_ids"}
    left_out = [n for n in params if n in buildable and n not in inputs]
    torch_dir = os.path.dirname(torch.__file__) + os.sep
    frame, tb = None, exc.__traceback__
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(torch_dir):
            frame = tb.tb_frame
        tb = tb.tb_next
    if frame is None:
        return ""
    return next((n for n in left_out if n in frame.f_locals and frame.f_locals[n] is None), "")


def make_inputs(model: Any, config: Any, head_kind: str, batch_size: int, seq_len: int, seed: int = 0,
                hints: dict[str, Any] | None = None) -> dict[str, Any]:
    """The keyword arguments of one forward call of `model`."""
    hints = dict(hints or {})
    gen = torch.Generator().manual_seed(seed)
    params = inspect.signature(model.forward).parameters
    required = [name for name, p in params.items()
                if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    main = hints.pop("main_input", None) or _main_input(model, params)
    b, s = batch_size, seq_len
    wanted = _wanted(main, required, params, config, head_kind)
    inputs = {}
    for name in params:  # in the signature's order: the generator's draws follow it
        if name in wanted:
            inputs.update(_input(name, params, required, config, b, s, gen))
    for name in required:  # a required mask of an input made above: all ones
        base = inputs.get(name[: -len("_mask")]) if name.endswith("_mask") else None
        if name not in inputs and base is not None:
            inputs[name] = torch.ones(base.shape[:2], dtype=torch.long)
    if "input_ids" in inputs and "attention_mask" in params:
        inputs["attention_mask"] = torch.ones(b, s, dtype=torch.long)
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in params:
        inputs["decoder_input_ids"] = _token_ids(config, (b, s), gen)
    for name, value in hints.items():
        inputs[name] = _from_hint(value, b, s, gen)
    return inputs


def _main_input(model: Any, params: Any) -> str:
    """The model's main input (main_input_name); input_ids where the forward does not take the
    main input its class declares (a text tower declaring its vision sibling's pixel_values)."""
    main = getattr(model, "main_input_name", "input_ids") or "input_ids"
    if main not in params and "input_ids" in params:
        return "input_ids"
    return main


def _wanted(main: str, required: list[str], params: Any, config: Any, head_kind: str) -> set[str]:
    """The forward arguments to make: the main input, the required ones, and the second tower's."""
    wanted = {main, *required}
    if main == "input_ids" and "pixel_values" in params and _two_tower(config, head_kind):
        wanted.add("pixel_values")
    if main == "pixel_values" and "input_ids" in params and getattr(config, "text_config", None) is not None:
        wanted.add("input_ids")  # image-to-text models (BLIP): the caption tokens go with the image
    if head_kind in TWO_TOWER_KINDS:
        wanted |= {"input_ids", "pixel_values"}
    if {"grid_thw", "image_grid_thw"} & set(required):
        wanted.discard("pixel_values")
        wanted.discard("hidden_states")
    return wanted


def _input(name: str, params: Any, required: list[str], config: Any, b: int, s: int,
           gen: torch.Generator) -> dict[str, Any]:
    """{argument: tensor} that forward argument `name` brings (none for one compatlab does
    not make; a patchified image or a patch grid brings its companions)."""
    if name == "input_ids":
        return {name: _token_ids(config, (b, s), gen)}
    if name == "pixel_values" and "spatial_shapes" in params:
        return _patchified(config, b, gen)
    if name in ("pixel_values", "pixel_values_videos"):
        return {name: _pixels(config, b, gen, video=name.endswith("videos"), pair=_matches_pairs(config))}
    if name == "input_values":
        return {name: _waveform(config, b, s, gen)}
    if name == "input_features":
        return {name: _audio_features(config, b, s, gen)}
    if name in ("grid_thw", "image_grid_thw"):
        return _patch_grid(config, name, required, gen)
    return {}


def _matches_pairs(config):
    """Keypoint matchers (SuperGlue, LightGlue, LoFTR) take image pairs."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_KEYPOINT_MATCHING_MAPPING_NAMES

    return getattr(config, "model_type", None) in MODEL_FOR_KEYPOINT_MATCHING_MAPPING_NAMES


def _two_tower(config, head_kind):
    """True for text+image models with no image placeholder token (CLIP-like base models)."""
    if head_kind not in ("base", "zero_shot_image_classification"):
        return False
    if getattr(config, "vision_config", None) is None:
        return False
    return not any("image_token" in name or "vision_start" in name for name in vars(config))


def _pixels(config, b, gen, video=False, pair=False):
    """Images [batch, C, H, W]; videos [batch, frames, C, H, W]; image pairs [batch, 2, C, H, W]."""
    vision = _vision_config(config)
    h, w = _image_size(config)
    channels = getattr(vision, "num_channels", None) or 3
    frames = getattr(vision, "num_frames", None) or getattr(vision, "frames_per_clip", None)
    if video and not frames:
        frames = 8
    if pair:
        frames = 2
    shape = (b, frames, channels, h, w) if frames else (b, channels, h, w)
    return torch.randn(shape, generator=gen)


def _patchified(config, b, gen, side=4):
    """NaFlex-style (SigLIP 2) images: patches [batch, side*side, C*p*p], their mask and grid shape."""
    vision = _vision_config(config)
    patch = getattr(vision, "patch_size", 16)
    channels = getattr(vision, "num_channels", None) or 3
    return {
        "pixel_values": torch.randn(b, side * side, channels * patch * patch, generator=gen),
        "pixel_attention_mask": torch.ones(b, side * side, dtype=torch.long),
        "spatial_shapes": torch.tensor([[side, side]] * b),
    }


def _patch_grid(config, grid_name, required, gen):
    """Qwen-VL-style vision input: flattened patches [t*h*w, C*tp*p*p] and their grid [[t, h, w]]."""
    vision = _vision_config(config)
    patch = getattr(vision, "patch_size", 14)
    patch = patch[0] if isinstance(patch, (list, tuple)) else patch
    temporal = getattr(vision, "temporal_patch_size", None) or getattr(vision, "patch_temporal", None) or 1
    temporal = temporal[0] if isinstance(temporal, (list, tuple)) else temporal
    channels = getattr(vision, "in_channels", None) or getattr(vision, "num_channels", None) or 3
    merge = getattr(vision, "spatial_merge_size", None) or 1
    side = 2 * merge
    patches = torch.randn(side * side, channels * temporal * patch * patch, generator=gen)
    name = next((n for n in required if n in ("hidden_states", "pixel_values")), "pixel_values")
    return {name: patches, grid_name: torch.tensor([[1, side, side]])}


# Config fields of neural audio codecs, whose waveform input has a channel axis.
_CODEC_FIELDS = ("audio_channels", "upsampling_ratios", "downsampling_ratios", "hop_length")


def _waveform(config, b, s, gen):
    """Raw audio [batch, samples]; [batch, channels, samples] for codecs; a spectrogram for AST."""
    samples = s * SAMPLES_PER_FRAME + 80
    mel, frames = getattr(config, "num_mel_bins", None), getattr(config, "max_length", None)
    if mel and frames:  # a spectrogram transformer (AST): [batch, max_length frames, mel]
        return torch.randn(b, frames, mel, generator=gen)
    if any(getattr(config, name, None) is not None for name in _CODEC_FIELDS):
        channels = getattr(config, "audio_channels", None) or 1
        return torch.randn(b, channels, samples, generator=gen)
    return torch.randn(b, samples, generator=gen)


def _find(config, names):
    """The first set value of `names` in a configuration or its sub-configurations (breadth first)."""
    queue = [config]
    while queue:
        cfg = queue.pop(0)
        for name in names:
            value = vars(cfg).get(name)
            if value is not None:
                return value
        queue.extend(v for v in vars(cfg).values() if hasattr(v, "to_dict") and hasattr(v, "model_type"))
    return None


def _audio_features(config, b, s, gen):
    """Whisper-style [batch, mel, 2 * max_source_positions], else [batch, 4 * seq_len, features]."""
    mel = getattr(config, "num_mel_bins", None)
    positions = getattr(config, "max_source_positions", None)
    if mel and positions:
        return torch.randn(b, mel, 2 * positions, generator=gen)
    per_channel = _find(config, ("input_feat_per_channel",))
    if per_channel:
        features = per_channel * (_find(config, ("input_channels",)) or 1)
    else:
        features = _find(config, ("feature_projection_input_dim", "num_mel_bins", "feature_size")) or 80
    return torch.randn(b, s * 4, features, generator=gen)


def _from_hint(value, b, s, gen):
    """A tensor from an overrides.json input hint: {"shape": [...], "dtype": ..., "high": n}.

    Shape entries may be "batch" or "seq" for the request's batch size and
    sequence length; a plain number or list is used as given. dtype: float32
    (random normal, the default), long/int64 (random in [0, high)), ones (a long
    all-ones mask) or zeros (float).
    """
    if not isinstance(value, dict):
        return torch.tensor(value)
    shape = [b if d == "batch" else s if d == "seq" else int(d) for d in value["shape"]]
    dtype = value.get("dtype", "float32")
    if dtype in ("long", "int64"):
        return torch.randint(0, int(value.get("high", 2)), shape, generator=gen)
    if dtype == "ones":
        return torch.ones(shape, dtype=torch.long)
    if dtype == "zeros":
        return torch.zeros(shape)
    return torch.randn(shape, generator=gen)
