"""The request parser (compatlab_probe.protocol.request): defaults, typed parts, malformed requests.

No torch: these take milliseconds. What a malformed request gives in a child (a
harness_error result) is checked through child.run_child.
"""

import pytest

from compatlab_probe.protocol.request import (
    CPU_PROFILE,
    DEFAULT_SEQ_LEN,
    BadRequest,
    KindParams,
    LoadBase,
    LoadSlo,
    MeasureSettings,
    TestRequest,
    parse_request,
    parse_target_profile,
    supervisor_pid_of,
)
from compatlab_probe.stacks import target
from compatlab_probe.worker.child import run_child

# A request as src/runner/protocol.cc sends it (doc/worker-protocol.md, "The test request").
WIRE = {"run_id": "r", "test_id": "t", "model_id": "hf:llama", "model_type": "llama",
        "model_class": "LlamaForCausalLM", "model_path": "", "target": "cpu", "mode": "compile",
        "backend": "aot_eager", "kind": "generate", "dtype": "bf16", "batch_size": 2, "seq_len": 8,
        "kind_params": {"seed": "5", "new_tokens": "4", "rep": "3"}, "timeout_s": 300, "torch_num_threads": 2,
        "memory_limit": {"method": "rlimit", "bytes": 1 << 30, "cgroup_procs": ""}, "supervisor_pid": 999,
        "compile_options": {"dynamic": False}, "compile_cache_dir": "/tmp/c", "cache_phase": "cold",
        "measure": {"warmup": 1, "min_iters": 2, "min_time_s": 0.5},
        "target_profile": target.load_profile("cpu")}


def test_a_wire_request_parses_into_typed_parts():
    r = parse_request(WIRE)
    assert (r.kind, r.mode, r.compiling, r.dtype, r.batch_size, r.seq_len) == ("generate", "compile", True,
                                                                                "bfloat16", 2, 8)
    assert r.kind_params.seed == 5 and r.kind_params.new_tokens == 4 and r.kind_params.steps == 3
    assert r.kind_params.given == {"seed": "5", "new_tokens": "4", "rep": "3"}
    assert r.measure == MeasureSettings(warmup=1, min_iters=2, min_time_s=0.5)
    assert r.memory_limit.method == "rlimit" and r.memory_limit.bytes == 1 << 30
    assert r.compile.backend == "aot_eager" and r.compile.options == {"dynamic": False}
    assert r.compile.cache_dir == "/tmp/c" and r.compile.cache_phase == "cold"
    assert (r.timeout_s, r.torch_num_threads, r.supervisor_pid) == (300.0, 2, 999)
    assert r.target_profile == CPU_PROFILE  # targets/cpu.json is the built-in profile


def test_defaults_live_in_the_dataclasses():
    r = parse_request({"kind": "forward"})
    assert r == TestRequest(kind="forward")
    assert r.seq_len == DEFAULT_SEQ_LEN == 32 and r.batch_size == 1  # one default, for every reader
    assert r.mode == "eager" and r.dtype == "float32" and r.target == "cpu" and r.target_profile is None
    assert r.measure == MeasureSettings(warmup=3, min_iters=10, min_time_s=1.0)
    assert r.kind_params == KindParams(seed=0, new_tokens=16, steps=3)
    assert r.compile.options is None  # absent: the profile's compile.options
    assert parse_request({"kind": "forward", "compile_options": {}}).compile.options == {}  # given: none
    assert r.memory_limit.method == "" and r.torch_num_threads == 0 and r.supervisor_pid == 0
    # null on the wire is the same as absent
    assert parse_request({"kind": "forward", "seq_len": None, "measure": None, "target_profile": None}) == r


def test_a_load_base_parses_and_is_absent_by_default():
    assert parse_request({"kind": "load"}).load_base is None
    r = parse_request(dict(WIRE, load_base={"offline_requests_per_s": 2.5, "run_id": "r0"}))
    assert r.load_base == LoadBase(2.5, "r0")


def test_a_load_objective_parses_and_is_absent_by_default():
    assert parse_request({"kind": "load"}).load_slo is None
    r = parse_request(dict(WIRE, load_slo={"ttft_s": 0.3, "itl_s": 0.02, "run_id": "r1"}))
    assert r.load_slo == LoadSlo(0.3, 0.02, "r1")


def test_a_dynamic_request_parses_its_shapes_and_a_static_one_has_none():
    request = parse_request(dict(WIRE, kind="forward", dynamic="mark", shapes="1x8,2x16"))
    assert request.dynamic == "mark" and request.shapes == ((1, 8), (2, 16))
    static = parse_request(dict(WIRE, kind="forward"))
    assert static.dynamic == "" and static.shapes == ()


def test_a_profile_says_why_its_backend_refuses_dynamic_shapes():
    assert parse_target_profile(target.load_profile("neuron")).dynamic_refused.startswith("the vendor's documentation")
    assert parse_target_profile(target.load_profile("cpu")).dynamic_refused == ""


def test_measure_settings_clamp():
    assert MeasureSettings().clamped({"warmup": 1, "min_iters": 5}) == MeasureSettings(1, 5, 1.0)
    assert MeasureSettings(0, 2, 0.0).clamped({"warmup": 1, "min_iters": 5}) == MeasureSettings(0, 2, 0.0)


@pytest.mark.parametrize("change, message", [
    ({"kind": None}, "unknown kind None"),
    ({"mode": "sideways"}, "unknown mode 'sideways'"),
    ({"dtype": "float7"}, "unknown dtype 'float7'"),
    ({"target": "No Such"}, "bad target 'No Such'"),
    ({"target_profile": {"name": "x"}}, "bad target_profile"),
    ({"seq_len": 0}, "bad seq_len 0"),
    ({"batch_size": "2"}, "bad batch_size '2'"),
    ({"batch_size": True}, "bad batch_size True"),
    ({"measure": {"warmup": -1}}, "bad measure.warmup -1"),
    ({"measure": {"min_time_s": "1"}}, "bad measure.min_time_s '1'"),
    ({"measure": []}, "measure must be an object"),
    ({"kind_params": {"new_tokens": "0"}}, "bad kind_params.new_tokens '0': below 1"),
    ({"kind_params": {"steps": "x"}}, "bad kind_params.steps 'x': not an integer"),
    ({"kind_params": {"seed": [1]}}, "bad kind_params.seed [1]: not a string"),
    ({"compile_options": {"warp_speed": True}}, "unknown compile options ['warp_speed']"),
    ({"memory_limit": {"method": "magic"}}, "unknown memory_limit method 'magic'"),
    ({"memory_limit": {"method": "cgroup_v2"}}, "needs cgroup_procs"),
    ({"model_type": 7}, "bad model_type 7: not a string"),
    ({"load_base": {"offline_requests_per_s": 0}}, "bad load_base.offline_requests_per_s 0"),
    ({"load_base": {"offline_requests_per_s": "2"}}, "bad load_base.offline_requests_per_s '2'"),
    ({"load_base": 2.5}, "load_base must be an object"),
    ({"load_slo": {"ttft_s": 0.3, "itl_s": 0}}, "bad load_slo.itl_s 0"),
    ({"load_slo": {"itl_s": 0.02}}, "bad load_slo.ttft_s None"),
    ({"load_slo": {"ttft_s": "1", "itl_s": 0.02}}, "bad load_slo.ttft_s '1'"),
    ({"load_slo": [0.3, 0.02]}, "load_slo must be an object"),
    ({"dynamic": "true", "shapes": "1x8,1x16"}, "dynamic 'true': true or mark, in mode compile, kind forward"),
    ({"kind": "forward", "dynamic": "always", "shapes": "1x8"}, "dynamic 'always'"),
    ({"kind": "forward", "dynamic": "true", "shapes": ""}, "shapes '': 1 to 64 shapes"),
    ({"kind": "forward", "dynamic": "true", "shapes": "1x8,1x0"}, "shapes '1x8,1x0'"),
    ({"kind": "forward", "dynamic": "mark", "shapes": "1x8,1x8"}, "a shape twice"),
    ({"kind": "forward", "shapes": "1x8"}, "dynamic '': true or mark"),
])
def test_malformed_requests_name_the_field(change, message):
    with pytest.raises(BadRequest, match=message.replace("[", r"\[").replace("(", r"\(")):
        parse_request(dict(WIRE, **change))


def test_a_request_that_is_not_an_object_is_bad():
    with pytest.raises(BadRequest, match="must be an object"):
        parse_request([])


def test_a_malformed_request_is_a_harness_error_result_saying_why():
    result = run_child(dict(WIRE, seq_len="long"))
    assert result["status"] == "harness_error" and result["stage"] == "harness"
    assert result["status_detail"] == "bad seq_len 'long'"
    assert result["error_type"] == "BadRequest" and result["error_message"] == "bad seq_len 'long'"


def test_target_profiles_parse_with_the_field_meanings_of_doc_targets():
    ctest = parse_target_profile(target.load_profile("ctest"))
    assert ctest.device == "ctest" and ctest.imports == ("compatlab_testdevice",)
    assert ctest.memory is not None and ctest.memory.method == "ctest_allocator"
    assert ctest.compile.backend == "ctest" and dict(ctest.compile.options) == {"dynamic": False, "fullgraph": False}
    bare = parse_target_profile({"device": "meta"})
    assert bare.name == "cpu" and bare.memory is None and bare.compile.backend == "inductor"
    with pytest.raises(BadRequest, match="unknown compile options"):
        parse_target_profile({"device": "cpu", "compile": {"options": {"warp": 1}}})


def test_a_profiles_redis_cache_names_the_server_and_turns_both_remote_caches_on_by_default():
    redis = parse_target_profile({"device": "cpu", "redis_cache": {"host": "127.0.0.1", "port": 6380}}).redis_cache
    assert redis is not None and (redis.host, redis.port, redis.fx_graph, redis.aot_autograd) == \
        ("127.0.0.1", 6380, True, True)
    assert parse_target_profile({"device": "cpu"}).redis_cache is None
    for bad in ({"port": 6379}, {"host": "h", "port": 0}, {"host": "h", "port": 70000}, {"host": "h", "port": "1"}):
        with pytest.raises(BadRequest, match="target_profile.redis_cache"):
            parse_target_profile({"device": "cpu", "redis_cache": bad})


def test_supervisor_pid_is_read_leniently_for_the_zygote():
    assert supervisor_pid_of({"supervisor_pid": 12}) == 12
    assert supervisor_pid_of({"supervisor_pid": "x"}) == 0 and supervisor_pid_of([]) == 0
