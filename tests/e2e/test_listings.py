"""What `runs` and `suites` print: the documented fields and the shipped suites."""

import json
import pathlib
import re

SCHEMA_DOC = pathlib.Path(__file__).resolve().parents[2] / "doc" / "results-schema.md"


def schema_doc_fields():
    """Field names of the `runs` table in doc/results-schema.md, in order."""
    text = SCHEMA_DOC.read_text()
    section = text.split("## Table `runs`", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", section, re.M)


def test_runs_json_keys_match_results_schema(cli, noop_store):
    fields = schema_doc_fields()
    assert len(fields) > 40 and fields[0] == "run_id"
    rows = cli.runs(noop_store)
    assert rows
    for row in rows:
        assert list(row) == fields


def test_targets_command_lists_the_profiles(cli):
    listing = cli.run("targets")
    assert listing.returncode == 0, listing.stderr
    rows = {line.split()[0]: line.split() for line in listing.stdout.splitlines()[2:] if line.strip()}
    assert {"cpu", "cuda", "neuron", "ctest"} <= set(rows)
    assert rows["neuron"][2] == "neuron" and " no " in listing.stdout.splitlines()[2 + sorted(rows).index("neuron")]


def test_suites_command_lists_and_expands(cli):
    listing = cli.run("suites")
    assert listing.returncode == 0, listing.stderr
    names = {line.split()[0] for line in listing.stdout.splitlines()[2:] if line.strip()}
    assert {"smoke", "ci", "faults", "noop", "hf-all"} <= names

    noop = cli.run("suites", "noop", "--format", "json")
    assert noop.returncode == 0, noop.stderr
    tests = json.loads(noop.stdout)
    assert len(tests) == 300
    assert len({t["test_id"] for t in tests}) == 300
    assert {t["kind"] for t in tests} == {"noop"}


def test_a_query_that_finds_nothing_names_what_the_store_has_and_the_command(cli, noop_store):
    found = cli.run("query", "--db", noop_store, "--model", "acme/none-v2")
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[-1] == (
        "no results for acme/none-v2; none has 1 result; run `compatlab sweep --models hub:acme/none-v2`")
