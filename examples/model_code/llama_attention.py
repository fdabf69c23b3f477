"""A team's own llama for `compatlab sweep --model-code`: transformers' LlamaForCausalLM at a
tiny size, with its attention changed (the softmax temperature: scores scaled by
SCALE / sqrt(head_dim) instead of 1 / sqrt(head_dim)).

    compatlab sweep --model-code examples/model_code/llama_attention.py:build --baseline llama
    compatlab compare --base hf:llama --head code:llama_attention.build@HASH
"""

from transformers import LlamaConfig, LlamaForCausalLM

SCALE = 0.5


def build():
    """The model (compatlab seeds torch before the call; inputs are made from its config).
    The sizes are those compatlab reduces llama to (hf:llama), so the two compare like for like."""
    config = LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                         num_key_value_heads=4, intermediate_size=128, vocab_size=1024,
                         max_position_embeddings=2048)
    model = LlamaForCausalLM(config)
    for layer in model.model.layers:
        layer.self_attn.scaling = SCALE * layer.self_attn.head_dim ** -0.5
    return model


class ScaledLlama(LlamaForCausalLM):
    """The same change as a PreTrainedModel subclass (--model-code FILE:ScaledLlama): built
    from LlamaConfig's defaults, reduced as compatlab reduces llama."""

    def __init__(self, config):
        super().__init__(config)
        for layer in self.model.layers:
            layer.self_attn.scaling = SCALE * layer.self_attn.head_dim ** -0.5
