"""The reproduction-script generator (compatlab_probe.repro): what it embeds and how.

Running a generated script end to end is tests/e2e/test_repro.py; these checks
need no torch import and take milliseconds.
"""

import json
import os
import runpy
import subprocess
import sys

from compatlab_probe import repro

REQUEST = {"run_id": "r1", "test_id": "t1", "model_id": "hf:gpt2", "model_type": "gpt2",
           "model_class": "GPT2LMHeadModel", "model_path": "", "target": "cpu", "mode": "eager",
           "backend": "", "kind": "forward", "dtype": "float32", "batch_size": 1, "seq_len": 16,
           "kind_params": {"seed": "3"}, "timeout_s": 60, "torch_num_threads": 1,
           "memory_limit": {"method": "rlimit", "bytes": 1}, "supervisor_pid": 1,
           "measure": {"warmup": 1, "min_iters": 2, "min_time_s": 0.0}}


def load(tmp_path, text):
    """The script's globals, without running its main."""
    path = tmp_path / "repro.py"
    path.write_text(text)
    return runpy.run_path(str(path), run_name="not_main")


def test_embeds_every_probe_file_a_child_runs_verbatim(tmp_path):
    names = load(tmp_path, repro.script(REQUEST, {"status": "pass"}))
    embedded = names["PROBE_FILES"]
    for rel, text in embedded.items():
        with open(os.path.join(repro.PACKAGE_DIR, rel), encoding="utf-8", newline="") as f:
            assert f.read() == text, rel  # byte for byte, backslashes and quotes included
    on_disk = {os.path.relpath(os.path.join(root, n), repro.PACKAGE_DIR).replace(os.sep, "/")
               for root, dirs, files in os.walk(repro.PACKAGE_DIR) if "__pycache__" not in root
               for n in files if n.endswith((".py", ".json"))}
    assert repro.NOT_EMBEDDED <= on_disk  # the entry points left out name files that are there
    assert set(embedded) == on_disk - repro.NOT_EMBEDDED
    for needed in ("worker/child.py", "kinds/forward.py", "kinds/context.py", "models/factory.py",
                   "models/inputs.py", "models/heads.py", "measure/timing.py", "models/overrides.json",
                   "host/runtime.py", "protocol/__init__.py"):
        assert needed in embedded


def test_the_request_is_the_test_without_the_supervisors_plumbing(tmp_path):
    names = load(tmp_path, repro.script(REQUEST, {"status": "fail_to_run", "error_type": "RuntimeError"},
                                        {"id": "x", "explanation": "E", "cause": "C", "workaround": "W"}))
    assert names["REQUEST"] == {k: v for k, v in REQUEST.items() if k not in ("memory_limit", "supervisor_pid")}
    assert names["RECORDED"]["status"] == "fail_to_run"
    text = (tmp_path / "repro.py").read_text()
    assert "# Known error (compatlab errors knowledge base, entry x):\n#   E\n" in text
    assert "# Workaround:\n#   W\n" in text
    assert "hf:gpt2 (GPT2LMHeadModel): forward, eager on cpu, float32, batch 1 x seq 16, seed=3" in text


def test_literals_survive_awkward_text():
    for text in ["a'''b", "ends with '", "back\\slash\\n", "cr\r\nlf", '"""', "é ✓", ""]:
        assert eval(repro._literal(text)) == text


def test_command_line_reads_stdin_only_and_refuses_bad_input():
    env = dict(os.environ, PYTHONPATH=os.path.dirname(repro.PACKAGE_DIR))
    data = json.dumps({"request": REQUEST, "recorded": {}, "known_error": None})
    ok = subprocess.run([sys.executable, "-m", "compatlab_probe.repro"], input=data, env=env,
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stdout.startswith("#!/usr/bin/env python3\n"), ok.stderr
    compile(ok.stdout, "repro.py", "exec")
    # The input never travels on the command line (stored text does not belong in argv).
    argv = subprocess.run([sys.executable, "-m", "compatlab_probe.repro", "--input", data], env=env,
                          capture_output=True, text=True, timeout=60)
    assert argv.returncode == 2 and argv.stdout == "" and "unrecognized arguments" in argv.stderr
    bad = subprocess.run([sys.executable, "-m", "compatlab_probe.repro"], input="[]", env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stdout == ""
    assert "must be an object with a \"request\" object" in bad.stderr


# --- imported runs (untrusted requests) ---------------------------------------------------

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def compiled(**changes):
    return {**REQUEST, "mode": "compile", "backend": "inductor", **changes}


def test_every_string_valued_inductor_option_is_left_out_of_an_untrusted_request():
    import torch._inductor.config as inductor_config

    config = inductor_config.get_config_copy()
    strings = {key: value for key, value in config.items() if isinstance(value, str)}
    assert len(strings) > 10  # the walk sees torch's real options
    # Every key of the config, with its own string value or a program path as one.
    for key, default in config.items():
        for value in {default if isinstance(default, str) else "/some/program", "/some/program"}:
            kept, left_out = repro.untrusted_request(compiled(compile_options={"options": {key: value}}))
            assert key not in kept["compile_options"]["options"], key
            assert left_out == [(f'["compile_options"]["options"][{key!r}]', value)]
    kept, _ = repro.untrusted_request(compiled(compile_options={"options": {"cpp.cxx": ["/some/program"]}}))
    assert kept["compile_options"] == {"options": {}}


def test_an_untrusted_request_keeps_only_the_typed_allow_list():
    request = compiled(backend="pkg.mod:fn", model_path="/models/x",
                       compile_options={"dynamic": None, "fullgraph": True, "mode": "max-autotune",
                                        "extra": 1, "dynamic_shapes": "x"},
                       target_profile={"name": "ctest", "device": "cpu", "pythonpath": ["/evil"],
                                       "import": ["evil"], "setup": "evil:run",
                                       "compile": {"backend": "inductor"}})
    kept, left_out = repro.untrusted_request(request)
    assert kept["compile_options"] == {"dynamic": None, "fullgraph": True, "mode": "max-autotune"}
    assert kept["backend"] == "" and kept["model_path"] == ""
    assert (kept["target_profile"]["pythonpath"], kept["target_profile"]["import"],
            kept["target_profile"]["setup"]) == ([], [], "")
    assert {where for where, _ in left_out} == {
        "[\"compile_options\"]['extra']", "[\"compile_options\"]['dynamic_shapes']", '["backend"]',
        '["model_path"]', "[\"target_profile\"]['pythonpath']", "[\"target_profile\"]['import']",
        "[\"target_profile\"]['setup']"}
    for bad in ({"fullgraph": 1}, {"dynamic": "true"}, {"mode": "os.system"}):
        assert repro.untrusted_request(compiled(compile_options=bad))[0]["compile_options"] == {}


def test_the_shipped_profiles_compile_settings_pass_the_allow_list():
    for name in sorted(os.listdir(os.path.join(REPO, "targets"))):
        with open(os.path.join(REPO, "targets", name), encoding="utf-8") as f:
            compile_spec = json.load(f).get("compile")
        if compile_spec is None:  # an export-only profile (onnxruntime, executorch, aoti) takes no compile mode
            continue
        _, left_out = repro.untrusted_request(compiled(backend=compile_spec["backend"],
                                                       compile_options=compile_spec.get("options", {})))
        assert left_out == [], name


def test_a_trusted_request_is_kept_whole_and_an_untrusted_one_is_commented_out(tmp_path):
    request = compiled(compile_options={"options": {"cpp.cxx": ["/some/program"]}})
    trusted = load(tmp_path, repro.script(request, {"status": "pass"}, trusted=True))
    assert trusted["REQUEST"]["compile_options"] == {"options": {"cpp.cxx": ["/some/program"]}}
    assert trusted["LEFT_OUT"] == 0
    text = repro.script(request, {"status": "pass"})
    assert "# REQUEST[\"compile_options\"][\"options\"]['cpp.cxx'] = ['/some/program']" in text
    assert load(tmp_path, text)["REQUEST"]["compile_options"] == {"options": {}}


def test_stored_text_cannot_break_the_script(tmp_path):
    nasty = "a\x00b\x1b[2J\x07c\rd\u2028e\u0085f\ud800g"
    text = repro.script(REQUEST, {"status": "fail_to_run", "host": nasty, "signature": nasty,
                                  "error_message": nasty})
    for char in ("\x00", "\x1b", "\x07", "\r", "\u2028", "\u0085", "\ud800"):
        assert char not in text
    names = load(tmp_path, text.encode("utf-8").decode("utf-8"))
    assert names["RECORDED"]["host"] == nasty


def test_figures_are_judged_within_their_interval_only_on_the_recorded_cpu_and_stack(tmp_path, capsys):
    names = load(tmp_path, repro.script(REQUEST, {"status": "pass"}))
    cpu = names["_cpu_model"]()
    stack = {"torch_version": "2.13.0+cpu", "transformers_version": "5.23.0", "python_version": "3.11.7"}
    recorded = {"status": "pass", "cpu_model": cpu, **stack, "stack_versions": "",
                "steady_median_s": 0.010, "steady_ci_low_s": 0.0099, "steady_ci_high_s": 0.0101, "noisy": 0}
    names["RECORDED"].clear()
    names["RECORDED"].update(recorded)
    report = names["_report"]

    def rerun(median, noisy=0):
        metrics = {"steady_median_s": median, "steady_ci_low_s": median * 0.99,
                   "steady_ci_high_s": median * 1.01, "noisy": noisy}
        code = report({"status": "pass", "metrics": metrics, "stack": dict(stack)}, False)
        return code, capsys.readouterr().out

    code, out = rerun(0.0100)
    assert code == 0 and ": within\n" in out and "reproduced: yes" in out
    code, out = rerun(0.317)  # 30x: apart, even from a noisy rerun's widened interval
    assert code == 1 and ": apart\n" in out and "reproduced: no" in out
    code, out = rerun(0.317, noisy=1)
    assert code == 1 and "reproduced: no" in out
    code, out = rerun(0.015, noisy=1)  # 1.5x on a loaded machine: within the widened interval
    assert code == 0 and "reproduced: yes" in out
    names["RECORDED"]["cpu_model"] = "another cpu"
    code, out = rerun(0.317)
    assert code == 0 and "figures not comparable here (cpu_model another cpu recorded" in out
    assert "reproduced: yes" in out  # status only
