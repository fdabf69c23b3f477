"""A code model (--model-code tests/e2e/needs_natten.py:build) whose forward imports natten,
which this environment lacks: blamed on the environment (tests/e2e/test_blame_environment.py,
tests/web/blame.test.mjs)."""

from transformers import LlamaConfig, LlamaForCausalLM


def _needs_natten(module, args):
    import natten  # noqa: F401  (neighbourhood attention, as transformers' Dinat needs)

    raise AssertionError("natten is installed here: this test needs an environment without it")


def build():
    config = LlamaConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
                         num_key_value_heads=2, intermediate_size=64, vocab_size=128)
    model = LlamaForCausalLM(config)
    model.register_forward_pre_hook(_needs_natten)
    return model
