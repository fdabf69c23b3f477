"""`compatlab ops` end to end on the test device (doc/ops.md): the real binary runs PyTorch's
OpInfo entries on ctest in forked children. The op table shows exactly ctest's registered
kernels as native and the rest as fallback (checked against the device's own kernel list), a
planted wrong kernel fails its op, a planted crashing kernel costs only its op, target
exclusions and PyTorch's skips are data, `--check-skips` lists the stale ones, and `ops diff`
between the two stores finds the regression. Two op runs of a few ops each (make test's
subset); the whole op_db is `bench/ops/run.sh`'s."""

import json
import pathlib
import subprocess

import pytest

from .conftest import VENV_PYTHON, Compatlab

REPO = pathlib.Path(__file__).resolve().parents[2]
# Ops of op_db: ctest has kernels for add, mul, mm and relu (nn.functional.relu) (doc/test-device.md), none for the
# rest; bernoulli is skipped by PyTorch itself for a device-against-CPU comparison.
OPS = "add,mul,mm,nn.functional.relu,tanh,neg,nn.functional.softsign,bernoulli"
RUN = ("ops", "run", "--max-samples", "2", "--batch-size", "16")


def registered_kernels():
    """ctest's kernel list, read from the dispatcher by the device's own API."""
    code = ("import json, sys; sys.path.insert(0, 'testdevice'); import compatlab_testdevice as c; "
            "c.load(); print(json.dumps(sorted(c.registered_kernels())))")
    out = subprocess.run([str(VENV_PYTHON), "-c", code], cwd=REPO, capture_output=True, text=True,
                         check=True)
    return set(json.loads(out.stdout))


def show(cli, db, *args):
    proc = cli.run("ops", "show", "--db", db, "--format", "json", "--limit", "0", *args)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    return report, {c["key"]: c for c in report["cases"]}


def ctest_profile(tmp, name, **changes):
    """targets/ctest.json with `changes`, written as tmp/NAME/ctest.json (the same target)."""
    profile = json.loads((REPO / "targets" / "ctest.json").read_text())
    profile.update(pythonpath=[str(REPO / "testdevice"), str(REPO / "tests" / "e2e")], **changes)
    (tmp / name).mkdir()
    path = tmp / name / "ctest.json"
    path.write_text(json.dumps(profile))
    return path


@pytest.fixture(scope="module")
def stores(compatlab_bin, tmp_path_factory):
    """(cli, plain store, planted store, planted run): the ops on ctest with exp excluded by
    its profile, and on ctest with a wrong neg, a crashing sigmoid and tanh excluded, run with
    --check-skips."""
    tmp = tmp_path_factory.mktemp("ops")
    cli = Compatlab(compatlab_bin, tmp)
    plain, planted = tmp / "plain.db", tmp / "planted.db"
    exclude_exp = [{"op": "exp", "reason": "no exp here", "citation": "tests/e2e/test_ops.py"}]
    path = ctest_profile(tmp, "plain", op_exclusions=exclude_exp)
    proc = cli.run(*RUN, "--db", plain, "--target", path, "--allow-profile-paths",
                   "--ops", OPS + ",exp", timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    exclude_tanh = [{"op": "tanh", "reason": "no tanh on this device", "citation": "tests/e2e/test_ops.py"}]
    path = ctest_profile(tmp, "planted", setup="planted_kernel:load", op_exclusions=exclude_tanh)
    proc = cli.run(*RUN, "--db", planted, "--target", path, "--allow-profile-paths",
                   "--ops", OPS + ",sigmoid,exp", "--check-skips", timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return cli, plain, planted, proc


def test_ctest_table_is_its_kernel_list_native_and_the_rest_fallback(stores):
    cli, plain, _, _ = stores
    kernels = registered_kernels()
    report, cases = show(cli, plain)
    assert report["op_sweep"]["target"] == "ctest"
    assert report["counts"]["total"] == len(OPS.split(",")) + 1
    for key in ("add", "mul", "mm", "nn.functional.relu"):
        assert cases[key]["category"] == "native", cases[key]
    for key in ("tanh", "neg", "nn.functional.softsign"):
        assert cases[key]["category"] == "fallback", cases[key]
    for case in cases.values():
        if case["status"] != "pass":
            continue
        fallback = set(case["fallback_ops"])
        assert not fallback & kernels, case  # a fallback op never has a ctest kernel
        executed_on_ctest = set(case["aten_ops"])
        native_ops = executed_on_ctest & kernels
        if case["category"] == "native":
            assert not fallback and native_ops, case
        else:
            assert fallback and fallback <= executed_on_ctest, case
    assert cases["tanh"]["fallback_ops"] == {"aten::tanh": 1}
    assert cases["bernoulli"]["status"] == "skipped"
    assert cases["bernoulli"]["skip_source"] == "pytorch"
    assert "non-deterministic" in cases["bernoulli"]["skip_reason"]


def test_a_planted_wrong_kernel_fails_its_op_and_a_crash_costs_only_its_op(stores):
    cli, _, planted, _ = stores
    _, cases = show(cli, planted)
    neg = cases["neg"]
    assert neg["status"] == "fail_accuracy", neg
    assert neg["category"] == "fail"
    assert neg["max_abs_err"] > 0
    assert "aten::neg" in neg["aten_ops"] and neg["fallback_ops"] == {}
    assert cases["sigmoid"]["status"] == "crash", cases["sigmoid"]
    assert "SIGSEGV" in cases["sigmoid"]["detail"]
    assert cases["exp"]["status"] == "pass"  # after the crash, in the batch run again
    assert cases["add"]["category"] == "native"


def test_exclusions_and_pytorch_skips_are_data_and_check_skips_lists_the_stale_ones(stores):
    cli, _, planted, proc = stores
    report, cases = show(cli, planted)
    tanh = cases["tanh"]
    assert tanh["skip_source"] == "target" and tanh["skip_kind"] == "exclude"
    assert tanh["skip_reason"] == "no tanh on this device (tests/e2e/test_ops.py)"
    assert tanh["status"] == "pass" and tanh["stale_skip"]
    assert cases["bernoulli"]["skip_source"] == "pytorch"
    stale = {c["key"] for c in cases.values() if c["stale_skip"]}
    assert report["counts"]["stale"] == len(stale)
    assert "stale skips (skipped, run anyway, passed): " in proc.stdout
    for key in stale:
        assert f"  {key} float32 [" in proc.stdout


def test_an_excluded_op_is_skipped_without_a_run(stores):
    cli, plain, _, _ = stores
    _, cases = show(cli, plain)
    exp = cases["exp"]
    assert exp["status"] == "skipped" and exp["samples"] == 0 and exp["wall_s"] == 0
    assert (exp["skip_source"], exp["skip_kind"]) == ("target", "exclude")
    assert exp["skip_reason"] == "no exp here (tests/e2e/test_ops.py)"


def test_ops_diff_between_two_stores_finds_the_regression(stores):
    cli, plain, planted, _ = stores
    torch = show(cli, plain)[0]["op_sweep"]["torch_version"]
    proc = cli.run("ops", "diff", "--base-db", plain, "--db", planted, "--base", f"torch={torch}",
                   "--head", f"torch={torch}", "--fail-on-regression")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert "ops diff: target ctest, mode eager: " in out
    failing = out.split("newly failing: ")[1].split("newly skipped")[0]
    assert failing.startswith("1\n  neg float32: fallback -> fail"), out
    supported = out.split("newly supported: ")[1].split("newly failing")[0]
    assert "  exp float32: skipped -> fallback" in supported, out  # excluded on the base only
    other = out.split("other changes: ")[1]
    assert "  sigmoid float32: absent -> crash" in other, out  # not in the base's ops
    assert "regressions (newly failing): 1" in out
    base_id = show(cli, plain)[0]["op_sweep"]["op_sweep_id"]
    proc = cli.run("ops", "diff", "--db", plain, "--base", base_id, "--head", base_id,
                   "--fail-on-regression")
    out = proc.stdout
    assert proc.returncode == 0 and "unchanged: 7" in out and "still excluded: 2" in out, out


def test_an_op_is_matched_by_its_exact_key_never_a_substring(cli, tmp_path):
    proc = cli.run(*RUN, "--db", tmp_path / "s.db", "--ops", "max")
    assert proc.returncode == 2
    assert proc.stderr.startswith("compatlab: error: no op max in torch ")
    assert not (tmp_path / "s.db").exists()
    proc = cli.run(*RUN, "--db", tmp_path / "s.db", "--dtypes", "int64")
    assert proc.returncode == 2 and "--dtypes int64" in proc.stderr


def test_op_results_go_through_parquet_and_a_bad_file_is_refused(stores, tmp_path):
    cli, _, planted, _ = stores
    proc = cli.run("export", "--db", planted, "--parquet", tmp_path / "ds")
    assert proc.returncode == 0, proc.stderr
    file = tmp_path / "ds" / "op_results.ops.parquet"
    assert f"{file}\t10 op results" in proc.stdout
    proc = cli.run("import", "--db", tmp_path / "copy.db", tmp_path / "ds")
    assert proc.returncode == 0, proc.stderr
    assert "10 op results" in proc.stdout
    before, after = show(cli, planted), show(cli, tmp_path / "copy.db")
    assert after[0]["counts"] == before[0]["counts"]
    assert after[1]["neg"]["first_failure"] == before[1]["neg"]["first_failure"]
    proc = cli.run("import", "--db", tmp_path / "copy.db", tmp_path / "ds")
    assert proc.returncode == 0 and "op results" not in proc.stdout  # nothing new
    proc = cli.run("import", "--db", tmp_path / "direct.db", file)  # the file itself
    assert proc.returncode == 0 and "10 op results" in proc.stdout, proc.stdout + proc.stderr
    file.write_bytes(file.read_bytes()[: len(file.read_bytes()) // 2])
    proc = cli.run("import", "--db", tmp_path / "other.db", file)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "op_results.ops.parquet: not a readable Parquet file" in proc.stderr
    assert not (tmp_path / "other.db").exists()
