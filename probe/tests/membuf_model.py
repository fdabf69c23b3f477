"""A test-only model (never in a suite): any built model whose forward also allocates and
touches a known buffer, so its host memory figure has a known answer (issue 10, part 4).

    install(nbytes)   # factory.build_model's models allocate nbytes in every forward call
    python membuf_model.py NBYTES < request.json   # run_one with it installed (a fresh process)
"""

import sys

MIB = 1 << 20


def install(nbytes: int, factory=None) -> None:
    """Wraps factory.build_model: every model it builds gets a forward hook that allocates
    `nbytes` of float32 ones (every page touched) and frees them when the forward ends."""
    import torch

    if factory is None:
        from compatlab_probe.models import factory
    real = factory.build_model

    def build_model(*args, **kwargs):
        model = real(*args, **kwargs)
        held = []

        def pre(module, args_):
            held.append(torch.ones(nbytes // 4, dtype=torch.float32))

        def post(module, args_, output):
            held.clear()
            return output

        model.register_forward_pre_hook(pre)
        model.register_forward_hook(post)
        return model

    factory.build_model = build_model


if __name__ == "__main__":
    # As a zygote's child: the modelling module (and what it loads lazily: scipy, OpenBLAS)
    # imported before the test's memory baseline and limit.
    import transformers.models.bert.modeling_bert  # noqa: F401

    install(int(sys.argv[1]))
    from compatlab_probe.worker import run_one

    sys.exit(run_one.main())
