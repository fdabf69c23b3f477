"""Kind load's rates through the real binary: every server row of a group multiplies the
one throughput its group's offline row measured, and every row of a group is judged by the
one goodput objective its single_stream row measured (doc/probe.md, "Kind load").

One small eager sweep on a tiny llama (two rates, 4 requests of 4 new tokens, --jobs 2 so
that the other rows must wait for the single_stream and offline rows);
tests/e2e/test_field_matrix.py runs load in both modes at one rate and checks every figure.
"""

import json

RATES = {"0.5x": 0.5, "1.5x": 1.5}


def test_the_server_rows_of_a_group_are_their_multiples_of_the_offline_rows_throughput(cli, tmp_path):
    db = tmp_path / "store.db"
    _, proc = cli.sweep("--models", "llama", "--kinds", "load", "--modes", "eager", "--seq-lens", "16",
                        "--rates", ",".join(RATES), "--load-requests", "4", "--new-tokens", "4", "--jobs", "2",
                        "--db", db, timeout=600)
    rows = cli.runs(db)
    assert [r["status"] for r in rows] == ["pass"] * 4, [(r["status_detail"], r["error_message"]) for r in rows]
    by_scenario = {}
    for row in rows:
        by_scenario.setdefault(json.loads(row["kind_params"])["scenario"], []).append(row)
    (offline,) = by_scenario["offline"]
    servers = by_scenario["server"]
    base = offline["load_requests_per_s"]
    assert base > 0 and len(servers) == len(RATES)
    for row in servers:
        where = row["kind_params"]
        assert row["load_base_source"] == "offline_row", where
        assert row["load_base_run_id"] == offline["run_id"], where
        assert row["load_offline_requests_per_s"] == base, where
        assert row["started_at"] >= offline["finished_at"], where  # it waited for its base
        multiple = RATES[json.loads(row["kind_params"])["rate"]]
        assert row["load_rate_multiple"] == multiple, where
        assert abs(row["load_arrival_rate_per_s"] - multiple * base) <= 1e-9 * base, where
    (single,) = by_scenario["single_stream"]
    assert single["load_slo_source"] == "single_stream_p50x3" and single["load_slo_ttft_s"] > 0
    for row in [offline, *servers]:  # one objective, measured once by the single_stream row
        where = row["kind_params"]
        assert (row["load_slo_source"], row["load_slo_run_id"]) == ("single_stream_row", single["run_id"]), where
        assert (row["load_slo_ttft_s"], row["load_slo_itl_s"]) == (single["load_slo_ttft_s"],
                                                                  single["load_slo_itl_s"]), where
        assert row["started_at"] >= single["finished_at"], where  # it waited for its objective
    # The load table after the sweep shows each rate's arrival rate from the one base.
    for text, multiple in RATES.items():
        assert f"{text}={multiple * base:.1f}/s" in proc.stdout + proc.stderr, (text, proc.stdout[-3000:])
