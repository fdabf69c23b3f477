"""Own modelling code (--model-code), checkpoints with custom code (--trust-remote-code), a
variant swept with its baseline (--baseline) and `compatlab compare`, and repro of code models."""

import hashlib
import json
import pathlib
import re
import shutil
import subprocess

import pytest

from .conftest import REPO, Compatlab

EXAMPLE = REPO / "examples" / "model_code" / "llama_attention.py"
CODE_ID = re.compile(r"code:my_llama\.build@[0-9a-f]{16}")

# A checkpoint whose config names its own code (auto_map), as a Hub repo with custom code has.
CUSTOM_CONFIG = '''
from transformers import LlamaConfig


class TinyConfig(LlamaConfig):
    model_type = "tinycustom"
'''
CUSTOM_MODELING = '''
from transformers import LlamaForCausalLM

from .configuration_tiny import TinyConfig


class TinyForCausalLM(LlamaForCausalLM):
    config_class = TinyConfig
'''
SAVE_CUSTOM = """
import sys, shutil, pathlib
out = pathlib.Path(sys.argv[1]); src = pathlib.Path(sys.argv[2])
sys.path.insert(0, str(src))
import importlib
pkg = importlib.import_module("tinypkg.modeling_tiny")
cfg = importlib.import_module("tinypkg.configuration_tiny")
config = cfg.TinyConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, num_key_value_heads=2,
                        intermediate_size=64, vocab_size=500, max_position_embeddings=128)
config.auto_map = {"AutoConfig": "configuration_tiny.TinyConfig",
                   "AutoModelForCausalLM": "modeling_tiny.TinyForCausalLM"}
pkg.TinyForCausalLM(config).save_pretrained(out)
for name in ("configuration_tiny.py", "modeling_tiny.py"):
    shutil.copy(src / "tinypkg" / name, out / name)
"""


# FILE of the swept code model: the example's attention lives in the package beside it, so
# FILE's code files are FILE, the package's __init__.py and the example (not transformers).
WRAPPER = "from variants.llama_attention import build  # noqa: F401\n"
CODE_RELS = ["my_llama.py", "variants/__init__.py", "variants/llama_attention.py"]


def _code_file(tmp_path):
    path = tmp_path / "llama_attention.py"
    shutil.copy(EXAMPLE, path)
    return path


@pytest.fixture(scope="module")
def swept(compatlab_bin, tmp_path_factory):
    """One sweep of the code model my_llama.py:build (eager and compile, forward) with its
    baseline llama: (cli, db, FILE, the imported helper, the rows). Measured at the minimums
    (--max-measure-s 0): what is checked here is where the rows go, not the figures."""
    tmp = tmp_path_factory.mktemp("model-code")
    (tmp / "code" / "variants").mkdir(parents=True)  # not the commands' working directory
    (tmp / "code" / "variants" / "__init__.py").write_text("")
    helper = tmp / "code" / "variants" / "llama_attention.py"
    shutil.copy(EXAMPLE, helper)
    code = tmp / "code" / "my_llama.py"
    code.write_text(WRAPPER)
    cli, db = Compatlab(compatlab_bin, tmp), tmp / "store.db"
    cli.sweep("--model-code", f"{code}:build", "--baseline", "llama", "--modes", "eager,compile",
              "--backend", "aot_eager", "--kinds", "forward", "--seq-lens", "16",
              "--max-measure-s", "0", "--db", db)
    return cli, db, code, helper, cli.runs(db)


def test_code_model_with_baseline_is_its_own_model_and_compares(swept):
    cli, db, code, _, rows = swept
    ids = sorted({r["model_id"] for r in rows})
    assert len(ids) == 2 and ids[1] == "hf:llama" and CODE_ID.fullmatch(ids[0]), ids
    code_id = ids[0]
    for row in rows:
        assert row["status"] == "pass", (row["model_id"], row["mode"], row["error_message"])
    variant = [r for r in rows if r["model_id"] == code_id]
    assert sorted(r["mode"] for r in variant) == ["compile", "eager"]
    for row in variant:
        assert row["model_source"] == "code"
        assert row["model_path"] == f"{code}:build"
        # FILE and what it imports from its own directory, each with its hash; transformers
        # and torch (site-packages) are not code files.
        files = json.loads(row["code_files"])
        assert [f["rel"] for f in files] == CODE_RELS
        for f in files:
            assert f["path"] == str(code.parent / f["rel"])
            assert f["sha256"] == hashlib.sha256(pathlib.Path(f["path"]).read_bytes()).hexdigest()
    # The baseline's history holds none of the variant's rows.
    baseline = cli.runs(db, "--model", "hf:llama")
    assert {r["model_id"] for r in baseline} == {"hf:llama"} and len(baseline) == 2

    report = cli.run("compare", "--db", db, "--base", "hf:llama", "--head", code_id)
    assert report.returncode == 0, report.stderr
    assert "summary: 2 compared, 0 only in base, 0 only in head" in report.stdout, report.stdout
    as_json = cli.run("compare", "--db", db, "--base", "hf:llama", "--head", code_id, "--format",
                      "json")
    assert as_json.returncode == 0, as_json.stderr
    out = json.loads(as_json.stdout)
    assert sorted(t["mode"] for t in out["tests"]) == ["compile", "eager"]
    for t in out["tests"]:
        assert t["base"]["model_id"] == "hf:llama" and t["head"]["model_id"] == code_id
        assert t["steady_ratio"] > 0 and t["prepare_ratio"] > 0
        # The changed attention against the baseline's reference (stock llama, same weights).
        assert t["head"]["baseline_ref_class"] == "LlamaForCausalLM"
        assert t["head"]["baseline_cosine"] < 0.99999


def test_editing_only_an_imported_module_is_another_model_and_repro_refuses(swept):
    """Runs after the test above: it edits the swept model's helper."""
    cli, db, code, helper, rows = swept
    tmp = code.parent.parent
    run_id = next(r["run_id"] for r in rows if r["model_id"].startswith("code:"))
    old_id = next(r["model_id"] for r in rows if r["model_id"].startswith("code:"))
    # A code run that came through import is not ours to run.
    exported = cli.run("export", "--db", db, "--parquet", tmp / "dataset")
    assert exported.returncode == 0, exported.stderr
    other = tmp / "other.db"
    imported = cli.run("import", "--db", other, tmp / "dataset")
    assert imported.returncode == 0, imported.stderr
    foreign = cli.run("repro", "--db", other, run_id)
    assert foreign.returncode != 0 and "came through `compatlab import`" in foreign.stderr, foreign.stderr

    # The script of a local run checks every code file's stored hash.
    script = cli.run("repro", "--db", db, run_id)
    assert script.returncode == 0, script.stderr
    assert "CODE_FILES = " in script.stdout and str(helper) in script.stdout
    recorded = hashlib.sha256(helper.read_bytes()).hexdigest()
    helper.write_text(helper.read_text().replace("SCALE = 0.5", "SCALE = 0.25"))
    now = hashlib.sha256(helper.read_bytes()).hexdigest()
    refused = cli.run("repro", "--db", db, run_id)
    assert refused.returncode != 0
    assert f"{helper} changed since the run" in refused.stderr, refused.stderr
    (tmp / "repro.py").write_text(script.stdout)
    stale = subprocess.run([str(REPO / ".venv" / "bin" / "python"), str(tmp / "repro.py")],
                           env=cli.env, capture_output=True, text=True, timeout=120)
    assert stale.returncode == 2, stale.stderr
    [line] = [x for x in stale.stderr.splitlines() if x.startswith("refused:")]
    assert str(helper) in line and now[:16] in line and recorded[:16] in line, line

    # FILE is unchanged, its helper is not: another model.
    cli.sweep("--model-code", f"{code}:build", "--modes", "eager", "--kinds", "forward",
              "--seq-lens", "16", "--max-measure-s", "0", "--db", db)
    new_ids = {r["model_id"] for r in cli.runs(db)} - {r["model_id"] for r in rows}
    assert len(new_ids) == 1 and CODE_ID.fullmatch(new_id := new_ids.pop()) and new_id != old_id


def test_bad_model_code_is_one_clear_line(cli, db, tmp_path):
    code = _code_file(tmp_path)
    for spec, says in [(f"{code}", "not FILE.py:FUNCTION"),
                       (f"{tmp_path}/missing.py:build", "no such file"),
                       (f"{code}:nope", "defines no nope")]:
        proc = cli.run("sweep", "--model-code", spec, "--db", db)
        assert proc.returncode == 2, proc.stderr
        lines = [line for line in proc.stderr.splitlines() if line.startswith("compatlab: error:")]
        assert len(lines) == 1 and says in lines[0], proc.stderr
    assert not db.exists()


def test_checkpoint_with_custom_code_needs_trust_remote_code(cli, db, tmp_path, venv_python):
    src = tmp_path / "src" / "tinypkg"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text("")
    (src / "configuration_tiny.py").write_text(CUSTOM_CONFIG)
    (src / "modeling_tiny.py").write_text(CUSTOM_MODELING)
    ckpt = tmp_path / "custom-ckpt"
    cli.env["HF_HOME"] = str(tmp_path / "hf-home")  # transformers copies the custom code there
    subprocess.run([venv_python, "-c", SAVE_CUSTOM, str(ckpt), str(src.parent)], env=cli.env,
                   check=True, capture_output=True, timeout=180)
    assert "auto_map" in json.loads((ckpt / "config.json").read_text())

    refused = cli.run("sweep", "--model-path", ckpt, "--modes", "eager", "--kinds", "forward",
                      "--db", db)
    assert refused.returncode == 2
    [line] = [x for x in refused.stderr.splitlines() if x.startswith("compatlab: error:")]
    assert "custom code" in line and "--trust-remote-code" in line, refused.stderr
    assert not db.exists()

    cli.sweep("--model-path", ckpt, "--trust-remote-code", "--modes", "eager", "--kinds", "forward",
              "--seq-lens", "16", "--max-measure-s", "0", "--db", db)
    [row] = cli.runs(db)
    assert row["status"] == "pass", row["error_message"]
    assert row["resolved_model_class"] == "TinyForCausalLM"
    assert row["model_type"] == "tinycustom"
