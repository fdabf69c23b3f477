"""Result objects the child decides itself (run in-process through child.run_test)."""

import time

from compatlab_probe.models import factory
from compatlab_probe.worker.child import run_test

QUICK = {"warmup": 1, "min_iters": 2, "min_time_s": 0.0}


def forward(model_type, **extra):
    request = {"kind": "forward", "mode": "eager", "target": "cpu", "model_type": model_type,
               "dtype": "float32", "batch_size": 1, "seq_len": 16, "measure": QUICK}
    request.update(extra)
    return run_test(request)


def assert_protocol_shape(result):
    for key in ("protocol", "status", "status_detail", "stage", "error_type", "error_message",
                "error_traceback", "model_class", "metrics", "stack"):
        assert key in result
    assert result["protocol"] == 1
    assert set(result["stack"]) == {"python_version", "torch_version", "transformers_version",
                                    "torch_build", "blas", "openmp", "cxx_compiler"}


def test_noop_passes_without_metrics():
    result = run_test({"kind": "noop"})
    assert_protocol_shape(result)
    assert result["status"] == "pass" and result["metrics"] == {}


def test_raise_is_fail_to_run_with_traceback():
    result = run_test({"kind": "raise"})
    assert result["status"] == "fail_to_run"
    assert result["stage"] == "run"
    assert result["error_type"] == "RuntimeError"
    assert "Traceback" in result["error_traceback"] and "raise" in result["error_traceback"]


def test_modes_a_target_or_kind_does_not_take_and_unavailable_targets_are_skipped_with_reason():
    from compatlab_probe.stacks.target import load_profile

    result = forward("llama", target="onnxruntime", target_profile=load_profile("onnxruntime"))
    assert result["status"] == "skipped" and result["status_detail"] == "export-only target"
    result = forward("llama", mode="export", kind="generate")
    assert result["status"] == "skipped" and "mode export takes kind forward only" in result["status_detail"]
    result = forward("llama", target="no-such-device")
    assert result["status"] == "skipped" and "no-such-device" in result["status_detail"]


def test_bogus_input_is_harness_error():
    assert run_test({"kind": "no-such-kind"})["status"] == "harness_error"
    assert forward("llama", mode="sideways")["status"] == "harness_error"
    assert forward("llama", dtype="float7")["status"] == "harness_error"
    assert forward("llama", seq_len=0)["status"] == "harness_error"


def test_oom_kind_refuses_without_memory_limit():
    result = run_test({"kind": "oom"})
    assert result["status"] == "harness_error" and "memory_limit" in result["status_detail"]


def test_flood_writes_then_passes(capfd):
    result = run_test({"kind": "flood", "kind_params": {"bytes": "3000"}})
    assert result["status"] == "pass"
    out, err = capfd.readouterr()
    assert len(out) == 3000 and len(err) == 3000


def test_forward_passes_with_metrics():
    result = forward("llama")
    assert_protocol_shape(result)
    assert result["status"] == "pass", result["error_message"]
    assert result["model_class"] == "LlamaForCausalLM"
    metrics = result["metrics"]
    for key in ("build_s", "prepare_s", "steady_median_s", "steady_p90_s", "param_count",
                "host_peak_rss_bytes", "torch_num_threads"):
        assert metrics[key] > 0, key
    assert metrics["steady_iters"] >= 2
    assert metrics["steady_p90_s"] >= metrics["steady_median_s"]
    assert metrics["memory_method"].startswith("vmhwm")


def test_steady_honours_min_time():
    # The request's min_time_s reaches the steady phase: the test cannot end sooner. (How
    # the calls add up to it is test_noise's, on a fake clock; iters x p90 is no bound of
    # it: a few slow calls above the p90 make up the time on a busy machine.)
    start = time.perf_counter()
    result = forward("llama", measure={"warmup": 0, "min_iters": 1, "min_time_s": 0.3})
    assert result["status"] == "pass"
    assert time.perf_counter() - start >= 0.3


def test_forward_passes_for_several_architectures():
    for model_type in ("bert", "t5", "vit", "whisper", "wav2vec2", "qwen3_moe", "llava", "clip"):
        result = forward(model_type, seq_len=32 if model_type in ("vit", "clip") else 16)  # image-only heads
        assert result["status"] == "pass", (model_type, result["stage"], result["error_message"])


def test_unknown_model_class_is_fail_to_load_at_import():
    result = forward("llama", model_class="LlamaForTimeTravel")
    assert result["status"] == "fail_to_load" and result["stage"] == "import"


def test_broken_config_is_fail_to_load_at_build(monkeypatch):
    monkeypatch.setattr(factory, "model_overrides",
                        lambda model_type: {"config": {"num_attention_heads": 7}})
    result = forward("llama")
    assert result["status"] == "fail_to_load" and result["stage"] == "build"
    assert result["error_traceback"]


def test_forward_exception_is_fail_to_run(monkeypatch):
    monkeypatch.setattr(factory, "model_overrides",
                        lambda model_type: {"inputs": {"input_ids": {"shape": ["batch", "seq"],
                                                                     "dtype": "long", "high": 5000}}})
    result = forward("llama")
    assert result["status"] == "fail_to_run" and result["stage"] == "prepare"


def test_configuration_only_model_type_is_skipped():
    result = forward("align_text_model")
    assert result["status"] == "skipped" and "no modelling class" in result["status_detail"]


def test_unknown_model_type_is_fail_to_load_at_import():
    result = forward("no_such_model_type")
    assert result["status"] == "fail_to_load" and result["stage"] == "import"


def test_p90_is_nearest_rank():
    from compatlab_probe.measure.timing import percentiles

    assert percentiles([1, 2, 3, 4, 5]) == (3, 5)
    assert percentiles(list(range(1, 11))) == (5.5, 9)
    assert percentiles([6, 5, 4, 3, 2, 1]) == (3.5, 6)
    assert percentiles([7]) == (7, 7)


def test_a_required_forward_argument_compatlab_builds_no_input_for_is_its_own_harness_error():
    # Sam2VideoModel.forward requires an inference session; compatlab builds no such input.
    result = forward("sam2_video")
    assert result["status"] == "harness_error" and result["stage"] == "build", result["status_detail"]
    assert result["status_detail"] == ("compatlab builds no input for Sam2VideoModel.forward's required "
                                       "argument(s) 'inference_session'")


def test_a_class_without_a_forward_of_its_own_is_a_harness_error_not_the_models_failure():
    result = forward("bark")
    assert result["status"] == "harness_error" and result["stage"] == "build", result["status_detail"]
    assert result["status_detail"].startswith("BarkModel has no forward of its own")


def _without_overrides(monkeypatch, *model_types):
    """overrides.json as if it had no entry for `model_types` (their inputs as the generic rules make them)."""
    real = factory.model_overrides
    monkeypatch.setattr(factory, "model_overrides", lambda t: {} if t in model_types else real(t))


def test_inputs_compatlab_did_not_build_are_its_harness_error_naming_the_argument(monkeypatch):
    # Real failures of issue 47's hf-all sweep, once blamed on the models: ClvpModelForConditionalGeneration
    # without the spectrogram it declares optional, a PP-OCRv5 recogniser on compatlab's 64x64 default image.
    _without_overrides(monkeypatch, "clvp", "pp_ocrv5_mobile_rec", "voxtral_realtime_text")
    result = forward("clvp", seq_len=32)
    assert (result["status"], result["stage"], result["error_type"]) == ("harness_error", "prepare", "TypeError")
    assert result["error_message"].startswith(
        "compatlab gave ClvpModelForConditionalGeneration.forward no 'input_features' (an input it builds) "
        "and the model read it as None: conv1d() received an invalid combination of arguments - got (NoneType")
    result = forward("pp_ocrv5_mobile_rec", seq_len=32)
    assert (result["status"], result["stage"]) == ("harness_error", "prepare")
    assert result["error_message"].startswith(
        "the 64x64 image compatlab made for 'pixel_values' (the configuration names no image size; compatlab's "
        "default side is 64) is below PPOCRV5MobileRecModel's minimum input size: Given input size: (384x2x2)")
    # None for an argument compatlab does not build by name (the time conditioning the full model
    # passes its text model through **kwargs) stays the model's own failure.
    result = forward("voxtral_realtime_text", seq_len=32)
    assert (result["status"], result["error_type"]) == ("fail_to_run", "TypeError"), result["error_message"]
    assert result["error_message"].startswith("linear(): argument 'input'")


def test_the_input_factory_gives_issue_47s_models_the_inputs_they_read():
    # A text tower declaring its vision sibling's main input (pixel_values) gets input_ids; the others
    # take their overrides.json inputs. clvp then fails on its own default configuration: the decoder's
    # speech tokens (vocabulary 8194) index the speech encoder's embedding (vocabulary 256).
    for model_type in ("sam3_lite_text_text_model", "voxtral_realtime_text", "pp_ocrv5_mobile_rec"):
        result = forward(model_type, seq_len=32)
        assert result["status"] == "pass", (model_type, result["error_message"])
    result = forward("clvp", seq_len=32)
    assert (result["status"], result["error_type"]) == ("fail_to_run", "IndexError"), result["error_message"]


def _raised(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the test wants the exception and its frames
        return exc
    raise AssertionError("no exception")


def test_a_model_refusing_a_call_without_an_input_compatlab_builds_is_the_harness_s_not_the_model_s():
    import torch

    from compatlab_probe.models.inputs import unbuilt_input_reason

    class Speech(torch.nn.Module):  # speech-encoder-decoder's check, as transformers words it
        main_input_name = "inputs"

        def forward(self, inputs=None, input_values=None, input_ids=None, mask=None):
            if inputs is None and input_values is None:
                raise ValueError("You have to specify either input_values or input_features")
            return torch.nn.functional.linear(mask, torch.ones(2, 2))

    model, given = Speech(), {"input_ids": torch.ones(1, 2)}
    exc = _raised(lambda: model(**given))
    assert unbuilt_input_reason(model, given, set(), exc) == (
        "compatlab gave Speech.forward no 'input_values' (an input it builds) and the model refused the call "
        "without it")
    # A refusal that names no input compatlab builds, and None for an argument it does not build by
    # name (a mask), stay the model's.
    exc = _raised(lambda: model(inputs=torch.ones(1), **given))
    assert "NoneType" in str(exc) and unbuilt_input_reason(model, given, set(), exc) == ""
    assert unbuilt_input_reason(model, given, set(), ValueError("You have to specify flattened_patches")) == ""


def test_a_list_of_main_inputs_is_read_as_the_model_s_main_inputs():
    # OneFormer declares main_input_name ["pixel_values", "task_inputs"]; compatlab's own factory once
    # raised "unhashable type: 'list'" on it, stored as the model's fail_to_load.
    result = forward("oneformer", seq_len=32)
    assert (result["status"], result["stage"]) == ("harness_error", "build"), result["error_message"]
    assert result["status_detail"] == ("compatlab builds no input for OneFormerModel.forward's required "
                                       "argument(s) 'task_inputs'")
