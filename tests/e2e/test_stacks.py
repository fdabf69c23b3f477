"""Stacks end to end (doc/stacks.md, issue 45): `stack add` makes a second stack from the
package registries, `sweep --stacks` runs one plan on both, `matrix --stacks` shows them side
by side. The quick version is a same-torch overlay with another transformers release (its wheel
is on this machine's disk: seconds); the slow one installs torch 2.14.1 (about 5-6 GB)."""

import json
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
# The wheels scripts/setup-python.sh fetched (tests/e2e/stack_wheels.txt): the quick tests'
# pip reads only these, never a registry.
WHEELS = REPO / ".stamps" / "wheels"
OTHER_TRANSFORMERS = "5.18.0"


def stack_cli(cli, tmp_path, offline=True):
    """`cli` with its stacks directory in the test's tmp directory, never the project's; pip
    installs from the set-up's wheels only, unless `offline` is False (the slow test)."""
    cli.env["COMPATLAB_STACKS"] = str(tmp_path / "stacks")
    if offline:
        cli.env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(WHEELS))
    return cli


def leftovers(stacks):
    """What a failed `stack add` may not leave behind: records, environments, work dirs."""
    return [p for sub in ("names", "envs", "tmp") for p in (stacks / sub).glob("*")]


def add_stack(cli, name, *pins, timeout=600):
    proc = cli.run("stack", "add", name, *pins, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def side_by_side(cli, db, names):
    proc = cli.run("matrix", "--db", db, "--stacks", names, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_package_that_cannot_be_had_is_one_line_and_leaves_nothing(cli, tmp_path):
    cli = stack_cli(cli, tmp_path)
    proc = cli.run("stack", "add", "nope", "torch==2.13.0", "transformers==99.0.0")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == ("compatlab: error: cannot install transformers==99.0.0: no such release "
                         "in the package registries"), proc.stderr
    assert leftovers(tmp_path / "stacks") == []
    listed = cli.run("stack", "ls")
    assert listed.returncode == 0 and "nope" not in listed.stdout


def test_bad_stack_requests_are_refused_before_anything_is_made(cli, tmp_path):
    cli = stack_cli(cli, tmp_path)
    for args, says in [(["default", "torch==2.13.0", "transformers==5.18.0"], "default"),
                       (["x", "torch==2.13.0"], "transformers"),
                       (["x", "torch>=2.13", "transformers==5.18.0"], "not a pinned package"),
                       (["../up", "torch==2.13.0", "transformers==5.18.0"], "not a stack name")]:
        proc = cli.run("stack", "add", *args)
        assert proc.returncode == 2 and says in proc.stderr, (args, proc.stderr)
    assert not (tmp_path / "stacks" / "envs").exists()
    assert cli.run("stack", "rm", "default").returncode == 2
    assert cli.run("stack", "rm", "missing").returncode == 2


def test_a_second_stack_swept_beside_default_and_shown_side_by_side(cli, tmp_path, db):
    cli = stack_cli(cli, tmp_path)
    made = add_stack(cli, "t518", "torch==2.13.0", f"transformers=={OTHER_TRANSFORMERS}")
    assert "same torch as default" in made.stderr
    record = json.loads((tmp_path / "stacks" / "names" / "t518.json").read_text())
    assert record["layout"].startswith("overlay ")
    assert record["resolved"]["transformers"] == OTHER_TRANSFORMERS
    assert record["resolved"]["torch"] == "2.13.0+cpu"
    env = tmp_path / "stacks" / "envs" / record["env"]
    assert (env / "bin" / "python").exists()
    assert list((tmp_path / "stacks" / "tmp").glob("*")) == []  # the work directory is gone
    listed = cli.run("stack", "ls")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[2].split()[0] == "default" and lines[3].split()[:4] == [
        "t518", record["env"], "2.13.0+cpu", OTHER_TRANSFORMERS], listed.stdout

    proc = cli.run("sweep", "--db", db, "--stacks", "default,t518", "--models", "gpt2",
                   "--modes", "eager", "--max-measure-s", "0", timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stderr.count("compatlab: sweep ") >= 2  # one sweep (and zygote) per stack
    runs = json.loads(cli.run("query", "--db", db, "--format", "json").stdout)
    assert sorted((r["stack"], r["transformers_version"], r["status"]) for r in runs) == [
        ("default", "5.23.0", "pass"), ("t518", OTHER_TRANSFORMERS, "pass")]

    out = side_by_side(cli, db, "default,t518")
    assert [(c["stack"], c["target"], c["mode"]) for c in out["columns"]] == [
        ("default", "cpu", "eager"), ("t518", "cpu", "eager")]
    (row,) = out["rows"]
    assert [c["transformers_version"] for c in row["cells"]] == ["5.23.0", OTHER_TRANSFORMERS]
    assert row["cells"][0]["changes"] == []  # the base
    for change in row["cells"][1]["changes"]:  # whatever diff's rule found, with its rule
        assert change["kind"] and change["rule"], change
    table = cli.run("matrix", "--db", db, "--stacks", "default,t518")
    assert table.returncode == 0 and "t518:cpu/eager" in table.stdout, table.stdout
    # The plain matrix still shows one stack; the named one only its own runs.
    assert len(side_by_side(cli, db, "t518")["columns"]) == 1

    removed = cli.run("stack", "rm", "t518")
    assert removed.returncode == 0, removed.stderr
    assert not env.exists()


@pytest.mark.slow
def test_torch_2_14_1_made_by_stack_add_swept_beside_default(cli, tmp_path, db):
    cli = stack_cli(cli, tmp_path, offline=False)
    made = add_stack(cli, "t2141", "torch==2.14.1", "transformers==5.23.0", timeout=3600)
    record = json.loads((tmp_path / "stacks" / "names" / "t2141.json").read_text())
    assert record["layout"] == "full" and record["resolved"]["torch"].startswith("2.14.1"), made
    proc = cli.run("sweep", "--db", db, "--stacks", "default,t2141", "--models", "gpt2,bert",
                   "--modes", "eager", timeout=1200)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = side_by_side(cli, db, "default,t2141")
    assert [c["stack"] for c in out["columns"]] == ["default", "t2141"]
    for row in out["rows"]:
        torch = [c["torch_version"] for c in row["cells"]]
        assert torch[0] == "2.13.0+cpu" and torch[1].startswith("2.14.1"), row
