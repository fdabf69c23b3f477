"""Issue 10, part 2: a reduced model's failure is blamed on the reduction only when a rerun
proves it (doc/results-schema.md, "Reduction reruns"). The models are test-only
(tests/e2e/reduction_model.py): bert fails only below hidden size 128 (reduced: 64), gpt2 at
every size. --mem-limit 1400M lies between their full-size estimates (parameters x (4 + 8
bytes of the float64 reference): bert's 1.32 GB fits, gpt2's 1.49 GB does not), so bert's
rerun is the real model at full size (hidden 768, random weights) and gpt2's runs at the
milder reduction (hidden 256), as a test with a small memory limit would."""

import os

from .conftest import REPO

HERE = REPO / "tests" / "e2e"


def test_a_failure_only_when_reduced_is_the_reductions_and_one_at_every_size_the_models(cli, db):
    cli.env["PYTHONPATH"] = os.pathsep.join([str(HERE / "reduction_site"), str(HERE)])
    cli.env["COMPATLAB_TEST_MIN_HIDDEN"] = "bert=128,gpt2=1000000"
    suite = cli.write_suite("reduction", models=["bert", "gpt2"], kinds=["forward"], modes=["eager"],
                            seq_lens=[8])
    _, proc = cli.sweep("--suite", suite, "--db", db, "--mem-limit", "1400M", "--max-measure-s", "0",
                        timeout=600)
    rows = {r["model_type"]: r for r in cli.runs(db)}
    assert set(rows) == {"bert", "gpt2"}, proc.stderr[-3000:]
    bert, gpt2 = rows["bert"], rows["gpt2"]

    assert bert["status"] == "fail_to_run" and bert["reduced"] == 1, (bert["status"], bert["error_message"])
    assert "at least 128" in bert["error_message"]
    assert bert["rerun_status"] == "pass", (bert["rerun_status"], bert["rerun_error_signature"])
    assert bert["rerun_size"] == "full", (bert["rerun_size"], bert["rerun_reduction"])
    assert bert["blame"] == "reduction"

    assert gpt2["status"] == "fail_to_run" and gpt2["rerun_status"] == "fail_to_run"
    assert gpt2["rerun_error_signature"] == gpt2["error_signature"]
    assert gpt2["rerun_size"] == "milder"
    assert gpt2["rerun_reduction"].startswith("milder reduction (full size needs"), gpt2["rerun_reduction"]
    assert gpt2["blame"] == "model"

    # The end-of-sweep summary counts bert as not the model's: gpt2's 0% is the only rate.
    summary = proc.stdout
    assert "not_model" in summary, summary

