"""Blame environment (issue 47, doc/results-schema.md "Missing packages"): a model whose code
imports a package this environment lacks (natten, really not installed) is not the model's
failure: the row names the package, query shows "not tested here: needs natten", the pass
rate leaves it out and `errors --blame` lists it under the environment."""

import json
import pathlib

from .conftest import Compatlab

CODE = pathlib.Path(__file__).with_name("needs_natten.py")


def test_a_package_the_environment_lacks_is_blamed_on_the_environment(compatlab_bin, tmp_path):
    cli, db = Compatlab(compatlab_bin, tmp_path), tmp_path / "store.db"
    code = tmp_path / "needs_natten.py"
    code.write_text(CODE.read_text())
    _, proc = cli.sweep("--model-code", f"{code}:build", "--modes", "eager", "--kinds", "forward",
                        "--seq-lens", "8", "--max-measure-s", "0", "--db", db)
    [row] = cli.runs(db)
    assert row["status"] in ("fail_to_load", "fail_to_run"), row["status"]
    assert row["error_message"] == "No module named 'natten'"
    assert (row["blame"], row["missing_packages"]) == ("environment", "natten")
    # The summary: 1 failure, 1 not the model's, no pass rate (no run blamed on the model).
    [total] = [line.split() for line in proc.stdout.splitlines() if line.startswith("total")]
    assert total[1:5] == ["1", "1", "1", "-"], proc.stdout

    table = cli.run("query", "--db", db)
    assert table.returncode == 0, table.stderr
    assert "not tested here: needs natten" in table.stdout

    report = cli.run("errors", "--db", db, "--blame", "--format", "json")
    assert report.returncode == 0, report.stderr
    report = json.loads(report.stdout)
    [group] = report["groups"]
    assert (group["blame"], group["missing_packages"]) == ("environment", ["natten"])
    assert report["summary"]["blames"] == [{"blame": "environment", "failures": 1, "signatures": 1}]
    assert report["groups"][0]["known"]["id"] == "missing-natten"
