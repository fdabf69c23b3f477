"""What kinds generate and load share about decoding with transformers' generate: whether a
class can generate with a static cache (`not_applicable`), the greedy static-cache generation
config (`generation_config`) and its compile config (`compile_config_of`), and the logits
processor that timestamps each step (`StepRecorder`, `processors`)."""

from __future__ import annotations

import copy
import time
from typing import TYPE_CHECKING, Any

from ..host import osutil
from ..protocol.request import TestRequest
from ..stacks.compiler import backend_of, options_of

if TYPE_CHECKING:
    from ..stacks.target import Target

# Head kinds that generate text; any other head kind is skipped. The class must also
# say it can generate (GenerationMixin.can_generate).
GENERATE_HEADS = ("causal_lm", "seq2seq_lm", "speech_seq2seq", "image_text_to_text", "multimodal_lm")


def not_applicable(cls: type, head_kind: str) -> str | None:
    """None when `cls` (of head kind `head_kind`) can run kind generate, else the skip reason."""
    can = getattr(cls, "can_generate", None)
    if head_kind not in GENERATE_HEADS or not (callable(can) and can()):
        return f"kind generate does not apply to {head_kind} models ({cls.__name__} has no generation head)"
    supports = getattr(cls, "_supports_default_dynamic_cache", None)
    if callable(supports) and not supports():
        return (f"kind generate needs a static cache, which {cls.__name__} does not support "
                "(transformers ignores cache_implementation='static' for it)")
    return None


class StepRecorder:
    """A logits processor (last in the list) that sees each step's processed scores:
    it timestamps them after a device sync, and keeps a CPU copy when asked."""

    def __init__(self, sync=None, keep_scores=False, memory=False):
        self.sync = sync
        self.keep_scores = keep_scores
        self.memory = memory
        self.times = []
        self.scores = []
        self.rss = []

    def __call__(self, input_ids, scores):
        if self.sync is not None:
            self.sync()
            self.times.append(time.perf_counter())
        if self.memory:
            self.rss.append(osutil.rss_bytes())
        if self.keep_scores:
            self.scores.append(scores.detach().to("cpu").clone())
        return scores


def processors(recorder):
    """A LogitsProcessorList holding only `recorder`."""

    from transformers import LogitsProcessorList

    return LogitsProcessorList([recorder])


def generation_config(model: Any, new_tokens: int, compile_config: Any = None) -> Any:
    """The model's generation config set for greedy, static-cache decoding of exactly N tokens."""
    gc = copy.deepcopy(model.generation_config)
    gc.max_new_tokens = new_tokens
    gc.min_new_tokens = new_tokens
    gc.max_length = None
    gc.min_length = None
    gc.do_sample = False
    gc.num_beams = 1
    gc.num_return_sequences = 1
    gc.cache_implementation = "static"
    gc.compile_config = compile_config
    gc.disable_compile = compile_config is None
    config = model.config
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    eos = gc.eos_token_id if gc.eos_token_id is not None else getattr(text, "eos_token_id", None)
    if gc.pad_token_id is None:
        pad = getattr(text, "pad_token_id", None)
        if pad is None:
            pad = eos[0] if isinstance(eos, (list, tuple)) and eos else eos
        gc.pad_token_id = pad if pad is not None else 0
    if getattr(config, "is_encoder_decoder", False) and gc.decoder_start_token_id is None \
            and gc.bos_token_id is None:
        start = getattr(config, "decoder_start_token_id", None)
        gc.decoder_start_token_id = start if start is not None else gc.pad_token_id
    return gc


def compile_config_of(request: TestRequest, target: Target) -> Any:
    """A transformers CompileConfig with the request's backend and torch.compile options,
    flagged to compile on every device (the CPU included)."""
    from transformers.generation.configuration_utils import CompileConfig

    options = options_of(request, target)
    cc = CompileConfig(fullgraph=bool(options.get("fullgraph", False)), dynamic=options.get("dynamic"),
                       backend=backend_of(request, target), mode=options.get("mode"),
                       options=options.get("options"))
    cc._compile_all_devices = True
    return cc
