"""Test-only models (tests/e2e/test_reduction_rerun.py, never in a suite): every model the
factory builds (reduced, milder or full size) of a model type named in
COMPATLAB_TEST_MIN_HIDDEN ("bert=128,gpt2=1000000") raises in its forward when its
config's hidden size is below that number. bert=128 fails only when reduced (64) and
passes at the milder reduction (256) or full size (768); gpt2=1000000 fails at every size,
with the same message. Installed in every interpreter of the sweep by
tests/e2e/reduction_site/sitecustomize.py (on PYTHONPATH)."""

import os

VARIABLE = "COMPATLAB_TEST_MIN_HIDDEN"


def _limits() -> dict[str, int]:
    limits = {}
    for item in filter(None, os.environ.get(VARIABLE, "").split(",")):
        model_type, _, minimum = item.partition("=")
        limits[model_type.strip()] = int(minimum)
    return limits


def _wrap(real, limits):
    def build(cls, config, dtype, seed):
        model = real(cls, config, dtype, seed)
        minimum = limits.get(getattr(model.config, "model_type", ""))
        if minimum is not None and model.config.hidden_size < minimum:
            def refuse(module, args):
                raise RuntimeError(f"planted: this model needs a hidden size of at least {minimum}")

            model.register_forward_pre_hook(refuse)
        return model

    return build


def install() -> None:
    """Wraps factory.build_model and factory.build_full_model when the variable is set."""
    limits = _limits()
    if not limits:
        return
    try:
        from compatlab_probe.models import factory
    except ImportError:  # an interpreter without the probe on its path
        return
    factory.build_model = _wrap(factory.build_model, limits)
    factory.build_full_model = _wrap(factory.build_full_model, limits)
