"""Issue 10, part 2: the child's side of a reduction rerun (doc/model-factory.md, "Reduction
reruns"): kind_params size full with fit_bytes builds full size only when the estimate fits,
else the milder reduction."""

import torch
from kind_requests import assert_pass, run_kind
from transformers import CONFIG_MAPPING

from compatlab_probe.models import factory


def test_the_full_size_estimate_is_parameters_times_dtype_plus_the_float64_reference():
    cls = factory.import_class("bert", "BertModel")
    config = CONFIG_MAPPING["bert"]()
    need = factory.full_size_bytes(cls, config, torch.float32)
    with torch.device("meta"):
        full = sum(p.numel() for p in cls(config).parameters())
    assert need == full * (4 + 8)
    assert factory.full_size_bytes(cls, config, torch.bfloat16) == full * (2 + 8)


def test_the_milder_reduction_is_wider_than_the_reduction_and_leaves_the_bounds_as_they_were():
    milder = factory.milder_config(None, "bert")
    assert (milder.hidden_size, milder.intermediate_size, milder.num_hidden_layers) == (256, 512, 4)
    reduced = factory.reduce_config("bert")
    assert (reduced.hidden_size, reduced.intermediate_size, reduced.num_hidden_layers) == (64, 128, 2)


def test_a_rerun_whose_full_size_does_not_fit_runs_at_the_milder_reduction():
    result = run_kind("forward", "bert", kind_params={"size": "full", "fit_bytes": 1 << 20})
    assert_pass(result)
    m = result["metrics"]
    assert m["reduced"] == 1
    assert m["reduction"].startswith("milder reduction (full size needs "), m["reduction"]
    assert "GiB > budget 0.00 GiB)" in m["reduction"], m["reduction"]
    assert "the full config reduced " in m["reduction"] and "hidden_size 768->256" in m["reduction"], m["reduction"]
    assert m["param_count"] < 10_000_000

