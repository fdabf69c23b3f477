// Stored runs rendered for people (aligned tables) and for programs (JSON).
// JSON exists here, at the output edge; the rest works on RunRecord.
#ifndef COMPATLAB_QUERY_RUNS_FORMAT_H_
#define COMPATLAB_QUERY_RUNS_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/records.h"

namespace compatlab {

// Number of distinct ops that ran through the CPU fallback (fallback_ops);
// unset where the run was not audited or the text does not parse.
std::optional<int64_t> FallbackOpCount(const RunResult& result);

struct RunsTableOptions {
  size_t max_error_width = 60;  // error_message is cut to this many characters (>= 3)
  size_t max_model_width = 40;  // so is the model column (>= 3)
};

// The passing load runs of `runs` (kind load, doc/probe.md), one line each in
// the given order, under a header:
//   model  target  mode  scenario  rate  engine  req_s  goodput_s  tok_s
//   ttft_p50_ms  ttft_p99_ms  itl_p50_ms  itl_p99_ms  e2e_p99_ms  conc  recomp  mem_mib
// rate is the server row's multiple and arrival rate ("1.5x=12.3/s"), "-"
// otherwise; a '*' and a footnote line mark a rate whose base the row measured
// itself (load_base_source this_child) instead of sharing its group's offline
// row's; a '^' and a footnote line mark the goodput of an offline or server row
// judged by an objective of its own (load_slo_source single_stream_p50x3) instead
// of its group's single_stream row's. "" when there are none; else ends in '\n'.
std::string FormatLoadTable(const std::vector<RunRecord>& runs);

// One line per run, in the given order, under a header:
//   model  target  mode  kind  status  build_s  prepare_s  steady_ms  rss_mib  wall_s  error
// status is "crash(SIGSEGV)" when status_detail is set; a metric that was not
// measured shows as "-"; steady_ms is steady_median_s in milliseconds; rss_mib
// is host_peak_rss_bytes in MiB; error is error_message, on one line and cut.
// Text is sanitized for the terminal. Ends in '\n'.
std::string FormatRunsTable(const std::vector<RunRecord>& runs,
                            const RunsTableOptions& options = {});

// A JSON array with one object per run: every field of schema.h, keyed by its
// name, in schema order; numbers as numbers, unmeasured metrics as null,
// kind_params as its canonical JSON text. Bytes that are not valid UTF-8 (a
// cut output tail) become U+FFFD. Two-space indentation, ends in '\n'.
std::string FormatRunsJson(const std::vector<RunRecord>& runs);

// RFC 4180 CSV: a header line with every field of schema.h (in schema
// order), then one record per run; lines end in CRLF. A NULL metric is an
// empty field; numbers are written as the shortest text that reads back to
// the same value; kind_params is its canonical JSON text; text that is not
// valid UTF-8 gets U+FFFD in place of each ill-formed sequence. Fields are
// quoted as CsvField does.
std::string FormatRunsCsv(const std::vector<RunRecord>& runs);

// One CSV field: quoted (and its '"' doubled) when it holds a comma, a
// double quote, CR or LF, or starts or ends with a space; else as is.
std::string CsvField(std::string_view text);

// Counts per model type (rows, sorted; model_id when model_type is empty) and
// status (columns: the statuses present, in AllTestStatuses() order), with a
// total column and a total row (zero counts print as "."): the table
// printed at the end of a sweep.
// Ends in '\n'; "no runs\n" for no runs.
std::string FormatSweepSummary(const std::vector<RunRecord>& runs);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_RUNS_FORMAT_H_
