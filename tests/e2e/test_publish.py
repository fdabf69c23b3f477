"""A dataset others can load and trust, end to end (doc/dataset.md, "Publishing"):
`export --publish` (the card, every config loaded with `datasets`, the scrubber), then
`publish` to a stand-in Hub API on 127.0.0.1 and `import --from-hub` back."""

import getpass
import json
import os
import re
import socket
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .conftest import REPO, Compatlab

sys.path.insert(0, str(REPO / "probe" / "tests"))
import hubfake  # noqa: E402

HOST = socket.gethostname()
USER = getpass.getuser()
CHECKOUT = str(REPO)
OTHER_TORCH = "2.12.0"


def query(cli, db, *args):
    proc = cli.run("query", "--db", db, "--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def planted(table, home, tmp):
    """`table` with this machine's private text planted in every row, where a real sweep
    puts such text: the model path, the error, its traceback, the output tails, the compile
    options (a compile-cache directory)."""
    def edit(name, value):
        column = [value(old) for old in table.column(name).to_pylist()]
        return table.set_column(table.schema.get_field_index(name), name, pa.array(column, pa.string()))

    table = edit("model_path", lambda _: f"{home}/models/tiny")
    table = edit("error_message", lambda m: f"{m} ({CHECKOUT}/probe/x.py on {HOST} for {USER})")
    table = edit("error_traceback",
                 lambda t: f'{t}\nFile "{home}/.cache/torch/kernel.py", line 3\n'
                           f'File "{CHECKOUT}/.venv/lib/python3.11/site-packages/torch/a.py"')
    table = edit("stdout_tail", lambda t: f"{t}{USER}@{HOST}:{CHECKOUT}$ ls {home}\n")
    table = edit("stderr_tail", lambda t: f"{t}cache {tmp}/compatlab-cache-5f3a/run1/fx\n")
    return edit("compile_options", lambda _: json.dumps({"cache_dir": f"{home}/.cache/inductor"}))


def on_other_stack(table):
    """The same runs as if run on another torch: new run and sweep ids."""
    def edit(name, value):
        column = [value(old) for old in table.column(name).to_pylist()]
        return table.set_column(table.schema.get_field_index(name), name, pa.array(column, pa.string()))

    table = edit("run_id", lambda r: r[::-1])
    table = edit("sweep_id", lambda s: s[::-1])
    return edit("torch_version", lambda _: OTHER_TORCH)


@pytest.fixture(scope="module")
def published(compatlab_bin, tmp_path_factory):
    """A real sweep (two noop passes, a fail_to_run, a crash) with private text planted in
    its rows, over two stacks, in a store; and its `export --publish` under a home of its own.
    Returns (cli, store, sweep_id, published dir, home)."""
    tmp = tmp_path_factory.mktemp("publish")
    cli = Compatlab(compatlab_bin, tmp)
    home = tmp / "home-of-the-exporter"
    home.mkdir()
    cli.env["HOME"] = str(home)
    suite = cli.write_suite("publish", tests=[{"kind": "noop", "repeat": 2}, {"kind": "raise"},
                                              {"kind": "segfault"}])
    sweep_id, _ = cli.sweep("--suite", suite, "--db", tmp / "sweep.db")
    proc = cli.run("export", "--db", tmp / "sweep.db", "--parquet", tmp / "plain")
    assert proc.returncode == 0, proc.stderr
    (path,) = (tmp / "plain").rglob("*.parquet")
    table = planted(pq.read_table(path), home, tmp)
    (tmp / "planted").mkdir()
    pq.write_table(table, tmp / "planted" / "a.parquet")
    pq.write_table(on_other_stack(table), tmp / "planted" / "b.parquet")
    proc = cli.run("import", "--db", tmp / "store.db", tmp / "planted")
    assert proc.returncode == 0, proc.stderr
    proc = cli.run("export", "--db", tmp / "store.db", "--publish", tmp / "dataset")
    assert proc.returncode == 0, proc.stderr
    assert "private text scrubbed from 8 runs" in proc.stderr
    return cli, tmp / "store.db", sweep_id, tmp / "dataset", home


def test_every_config_of_the_card_loads_with_datasets(published, tmp_path):
    import datasets
    from huggingface_hub import DatasetCard

    cli, db, _, out, _ = published
    card = DatasetCard.load(out / "README.md")
    assert card.data.license == "cc-by-4.0"
    assert "compatlab" in card.data.tags
    configs = {c["config_name"]: c for c in card.data.configs}
    local = query(cli, db)
    torch = {r["torch_version"] for r in local} - {OTHER_TORCH}
    stacks = {f"torch-{v.replace('+', '-')}--transformers-{r}": v
              for v in torch | {OTHER_TORCH} for r in {x["transformers_version"] for x in local}}
    assert set(configs) == {"all", *stacks}
    assert configs["all"]["default"] is True
    counts = {}
    for name in configs:
        rows = datasets.load_dataset(str(out), name=name, split="train", cache_dir=str(tmp_path / "hf"))
        expected = [r for r in local if name == "all" or r["torch_version"] == stacks[name]]
        counts[name] = rows.num_rows
        assert rows.num_rows == len(expected), name
        by_id = {r["run_id"]: r for r in expected}
        assert set(rows["run_id"]) == set(by_id), name
        for row in rows:
            stored = by_id[row["run_id"]]
            for field in ("test_id", "sweep_id", "status", "kind", "wall_s", "term_signal", "torch_version"):
                assert row[field] == stored[field], (name, field)
            assert {e["key"]: e["value"] for e in row["kind_params"]} == json.loads(stored["kind_params"])
    print("configs and load_dataset rows:", counts)
    assert counts["all"] == 8


def _strings(value):
    """Every string inside a decoded Parquet value (lists and structs included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def found_private(out, home):
    """The planted strings found in the published directory: paths in any byte of any file,
    names (as words) in any decoded value and any byte of the card."""
    paths = {str(home), CHECKOUT, os.path.realpath(CHECKOUT), os.path.realpath(REPO / ".venv"),
             "compatlab-cache-5f3a"}
    names = [re.compile(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])") for n in (HOST, USER)]
    found = []
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [(path.name, p) for p in paths if p.encode() in data]
        texts = [data.decode()] if path.suffix == ".md" else [
            s for row in pq.read_table(path).to_pylist() for s in _strings(row)]
        found += [(path.name, n.pattern) for text in texts for n in names if n.search(text)]
    return sorted(set(found))


def test_nothing_private_leaves_unless_kept(published):
    cli, db, _, out, home = published
    assert found_private(out, home) == []
    card = (out / "README.md").read_text()
    assert "8 runs were changed" in card and "`<home>`" in card
    kept = out.parent / "kept"
    proc = cli.run("export", "--db", db, "--publish", kept, "--keep-private")
    assert proc.returncode == 0, proc.stderr
    found = {what for _, what in found_private(kept, home)}
    assert {str(home), CHECKOUT, "compatlab-cache-5f3a"} <= found, found
    assert "`--keep-private`" in (kept / "README.md").read_text()


def test_publish_refuses_a_directory_with_files(published):
    cli, db, _, out, _ = published
    proc = cli.run("export", "--db", db, "--publish", out)
    assert proc.returncode == 2
    assert "not an empty directory" in proc.stderr


def test_publish_then_import_from_hub_equals_the_store(published, tmp_path):
    cli, db, sweep_id, out, _ = published
    server = hubfake.StandInHub({})
    try:
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
            cli.env.pop(name, None)
        cli.env.update(HF_ENDPOINT=server.url, HF_HUB_CACHE=str(tmp_path / "hub"),
                       HF_HUB_DISABLE_XET="1", HF_TOKEN="hf_test")
        proc = cli.run("publish", out, "--repo", "lab/results")
        assert proc.returncode == 0, proc.stderr
        local = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
        assert server.datasets["lab/results"]["main"] == local
        proc = cli.run("import", "--from-hub", "lab/results", "--db", tmp_path / "hub.db")
        assert proc.returncode == 0, proc.stderr
        assert "imported 8 runs from 2 files" in proc.stdout
    finally:
        server.close()
    proc = cli.run("import", out, "--db", tmp_path / "local.db")
    assert proc.returncode == 0, proc.stderr
    assert query(cli, tmp_path / "hub.db") == query(cli, tmp_path / "local.db")
    # Against the store it came from: the same runs, statuses and figures; diff sees no change.
    original = {r["run_id"]: r for r in query(cli, db)}
    for row in query(cli, tmp_path / "hub.db"):
        for field in ("test_id", "status", "wall_s", "steady_median_s", "started_at"):
            assert row[field] == original[row["run_id"]][field], field
    expected = tmp_path / "expected"
    proc = cli.run("diff", "--db", db, "--head", sweep_id, "--write-expected", expected)
    assert proc.returncode == 0, proc.stderr
    proc = cli.run("diff", "--db", tmp_path / "hub.db", "--head", sweep_id, "--expected", expected)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_bad_publish_flags_are_bad_input_and_write_nothing(published, tmp_path):
    cli, store, _, _, _ = published
    for args, message in [
        (("export", "--db", store), "give --parquet DIR or --publish DIR"),
        (("export", "--db", store, "--publish", tmp_path / "d", "--license", "a b"),
         "not a Hub license id"),
        (("export", "--db", store, "--publish", store), "--publish "),  # a file
        # Traces hold this machine's paths in their stacks and are not scrubbed.
        (("export", "--db", store, "--publish", tmp_path / "d", "--traces"),
         "are not scrubbed; publish without --traces, or add --keep-private"),
        (("import", "--db", tmp_path / "x.db"), "give PATH... or --from-hub"),
        (("import", "--from-hub", "org/../x", "--db", tmp_path / "x.db"), "is not a Hub dataset id"),
        (("publish", tmp_path, "--repo", "org/x"), "no README.md"),
        (("publish", tmp_path, "--repo", "org/x", "--revision", "a/../b"), "is not a Hub revision"),
    ]:
        proc = cli.run(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert message in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "x.db").exists() and not (tmp_path / "d").exists()
