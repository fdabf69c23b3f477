#include "query/runs_format.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "core/blame.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "query/noise_mark.h"
#include "query/text_table.h"
#include "store/record_json.h"
#include "store/schema.h"
#include "util/utf8.h"

namespace compatlab {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// `value` with `precision` decimals, or "-" when unset.
std::string Number(std::optional<double> value, int precision, double scale = 1.0) {
  if (!value.has_value()) return "-";
  return fmt::format("{:.{}f}", *value * scale, precision);
}

std::string StatusCell(const RunResult& result) {
  std::string status(TestStatusName(result.status));
  if (!result.status_detail.empty()) status += "(" + result.status_detail + ")";
  // A package the environment lacks (core/blame.h): the model was not tested here.
  if (const std::string needs = NotTestedHereText(result); !needs.empty()) {
    status += " (" + needs + ")";
  }
  return status;
}

// Number of ops that ran through the CPU fallback; "n/a" where the audit
// does not apply (the cpu target), "-" where there was none.
std::string FallbackCell(const RunResult& result) {
  if (result.fallback_audit == "not_applicable") return "n/a";
  if (result.fallback_audit != "audited") return "-";
  const std::optional<int64_t> count = FallbackOpCount(result);
  return count ? fmt::format("{}", *count) : "?";
}

// Device memory where the target has statistics, else the test's own host memory
// (doc/results-schema.md, "Host memory"), else (older rows) the host's peak RSS.
std::optional<double> RunPeakMemory(const RunResult& r) {
  if (r.device_peak_bytes) return static_cast<double>(*r.device_peak_bytes);
  if (r.host_mem_bytes) return static_cast<double>(*r.host_mem_bytes);
  if (r.host_peak_rss_bytes) return static_cast<double>(*r.host_peak_rss_bytes);
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> FallbackOpCount(const RunResult& result) {
  if (result.fallback_audit != "audited") return std::nullopt;
  nlohmann::json ops = nlohmann::json::parse(result.fallback_ops, nullptr, false);
  if (!ops.is_object()) return std::nullopt;
  return static_cast<int64_t>(ops.size());
}

std::string FormatRunsTable(const std::vector<RunRecord>& runs, const RunsTableOptions& options) {
  using C = TextTable::Column;
  TextTable table({C{"model", TextTable::kLeft}, C{"target", TextTable::kLeft},
                   C{"mode", TextTable::kLeft}, C{"kind", TextTable::kLeft},
                   C{"shape", TextTable::kRight}, C{"status", TextTable::kLeft},
                   C{"build_s", TextTable::kRight}, C{"prepare_s", TextTable::kRight},
                   C{"warm_s", TextTable::kRight}, C{"steady_ms", TextTable::kRight},
                   C{"speedup", TextTable::kRight}, C{"mem_mib", TextTable::kRight},
                   C{"accuracy", TextTable::kLeft}, C{"breaks", TextTable::kRight},
                   C{"fallback", TextTable::kRight}, C{"wall_s", TextTable::kRight},
                   C{"error", TextTable::kLeft}});
  std::vector<const RunRecord*> shown;
  for (const RunRecord& run : runs) {
    const RunResult& r = run.result;
    const std::optional<double> mem = RunPeakMemory(r);
    const bool steady_noisy = SteadyNoisy(r);
    const bool prepare_noisy = PrepareNoisy(r);
    table.AddRow({Truncate(run.spec.model_id, options.max_model_width), run.spec.target,
                  run.spec.mode, run.spec.kind,
                  fmt::format("{}x{}", run.spec.batch_size, run.spec.seq_len),
                  Truncate(StatusCell(r), options.max_error_width), Number(r.build_s, 3),
                  MarkedFigure(Number(r.prepare_s, 3), prepare_noisy), Number(r.warm_prepare_s, 3),
                  MarkedFigure(Number(r.steady_median_s, 3, 1000.0), steady_noisy),
                  MarkedFigure(Number(r.speedup, 2), steady_noisy), Number(mem, 0, 1.0 / kMiB),
                  r.acc_rule.empty() ? "-" : r.acc_rule,
                  r.graph_breaks ? fmt::format("{}", *r.graph_breaks) : "-", FallbackCell(r),
                  Number(r.wall_s, 3), Truncate(r.error_message, options.max_error_width)});
    shown.push_back(&run);
  }
  return table.Render() + NoisyFootnote(shown, &NoisyRunLabel);
}

std::string FormatLoadTable(const std::vector<RunRecord>& runs) {
  using C = TextTable::Column;
  constexpr auto kL = TextTable::kLeft;
  constexpr auto kR = TextTable::kRight;
  TextTable table({C{"model", kL}, C{"target", kL}, C{"mode", kL}, C{"scenario", kL}, C{"rate", kR},
                   C{"engine", kL}, C{"req_s", kR}, C{"goodput_s", kR}, C{"tok_s", kR},
                   C{"ttft_p50_ms", kR}, C{"ttft_p99_ms", kR}, C{"itl_p50_ms", kR},
                   C{"itl_p99_ms", kR}, C{"e2e_p99_ms", kR}, C{"conc", kR}, C{"recomp", kR},
                   C{"warmup_s", kR}, C{"warmup_recomp", kR}, C{"mem_mib", kR}});
  bool any = false;
  bool own_base = false;
  bool own_objective = false;
  for (const RunRecord& run : runs) {
    const RunResult& r = run.result;
    if (run.spec.kind != "load" || r.status != TestStatus::kPass) continue;
    any = true;
    auto rate = run.spec.kind_params.find("rate");
    const bool own = rate != run.spec.kind_params.end() && r.load_base_source == "this_child";
    own_base = own_base || own;
    auto scenario = run.spec.kind_params.find("scenario");
    const bool own_slo = scenario != run.spec.kind_params.end() &&
                         scenario->second != "single_stream" &&
                         r.load_slo_source == "single_stream_p50x3";
    own_objective = own_objective || own_slo;
    const std::string rate_cell =
        rate == run.spec.kind_params.end()
            ? "-"
            : fmt::format("{}={}/s{}", rate->second, Number(r.load_arrival_rate_per_s, 1),
                          own ? "*" : "");
    auto count = [](const std::optional<int64_t>& v) {
      return v ? fmt::format("{}", *v) : std::string("-");
    };
    table.AddRow({run.spec.model_id, run.spec.target, run.spec.mode, r.load_scenario, rate_cell,
                  r.load_engine, Number(r.load_requests_per_s, 2),
                  Number(r.load_goodput_per_s, 2) + (own_slo ? "^" : ""),
                  Number(r.load_output_tokens_per_s, 1), Number(r.load_ttft_p50_s, 1, 1000.0),
                  Number(r.load_ttft_p99_s, 1, 1000.0), Number(r.load_itl_p50_s, 2, 1000.0),
                  Number(r.load_itl_p99_s, 2, 1000.0), Number(r.load_e2e_p99_s, 1, 1000.0),
                  count(r.load_max_concurrency), count(r.load_recompiles),
                  Number(r.load_warmup_s, 1), count(r.load_warmup_recompiles),
                  Number(RunPeakMemory(r), 0, 1.0 / kMiB)});
  }
  if (!any) return "";
  std::string out = table.Render();
  if (own_base) {
    out +=
        "* the rate's base was measured in the row's own process: its group's offline row did "
        "not pass\n";
  }
  if (own_objective) {
    out +=
        "^ the goodput objective was calibrated in the row's own process: its group's "
        "single_stream row did not pass\n";
  }
  return out;
}

std::string FormatRunsJson(const std::vector<RunRecord>& runs) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const RunRecord& run : runs) array.push_back(RunRecordToJson(run));
  return array.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string CsvField(std::string_view text) {
  const bool quote = text.find_first_of(",\"\r\n") != std::string_view::npos ||
                     (!text.empty() && (text.front() == ' ' || text.back() == ' '));
  if (!quote) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string FormatRunsCsv(const std::vector<RunRecord>& runs) {
  constexpr std::string_view kLineEnd = "\r\n";
  const std::vector<FieldDef>& fields = ResultFields();
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += ',';
    out += CsvField(fields[i].name);
  }
  out += kLineEnd;
  for (const RunRecord& run : runs) {
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) out += ',';
      const FieldValue value = fields[i].get(run);
      if (const auto* v = std::get_if<int64_t>(&value)) {
        out += fmt::format("{}", *v);
      } else if (const auto* d = std::get_if<double>(&value)) {
        out += fmt::format("{}", *d);
      } else if (const auto* t = std::get_if<std::string>(&value)) {
        // Control characters (ESC, BEL, NUL) escaped: CSV is read on terminals too.
        out += CsvField(EscapeControls(ToValidUtf8(*t), true));
      }
    }
    out += kLineEnd;
  }
  return out;
}

namespace {

// One timing column of a summary row: the quiet runs' figures and the noisy runs'
// (query/noise_mark.h), kept apart.
struct SplitFigures {
  std::vector<double> quiet, noisy;
  void Add(std::optional<double> value, bool is_noisy) {
    if (value) (is_noisy ? noisy : quiet).push_back(*value);
  }
};

// Figures of the passing runs of one summary row.
struct PassFigures {
  SplitFigures prepare_s, steady_s, speedups;
  int64_t noisy_runs = 0;  // passing runs with a noisy timing figure
  PassRate rate;           // core/blame.h: skipped and not-the-model's runs counted apart
  void Add(const RunResult& r) {
    rate.Add(r);
    if (r.status != TestStatus::kPass || !BlamedOnModel(r)) return;
    if (AnyNoisy(r)) ++noisy_runs;
    prepare_s.Add(r.prepare_s, PrepareNoisy(r));
    steady_s.Add(r.steady_median_s, SteadyNoisy(r));
    if (r.speedup && *r.speedup > 0) speedups.Add(r.speedup, SteadyNoisy(r));
  }
};

std::optional<double> Median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::optional<double> Geomean(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  double logs = 0;
  for (double v : values) logs += std::log(v);
  return std::exp(logs / static_cast<double>(values.size()));
}

// The quiet runs' `summary` of a column; when it has no quiet run, its noisy runs'
// marked (query/noise_mark.h), so a type timed only on a busy machine still shows.
std::string QuietFigure(const SplitFigures& f,
                        std::optional<double> (*summary)(std::vector<double>), int precision,
                        double scale = 1.0) {
  if (!f.quiet.empty()) return Number(summary(f.quiet), precision, scale);
  return MarkedFigure(Number(summary(f.noisy), precision, scale), !f.noisy.empty());
}

std::optional<double> GeomeanOf(std::vector<double> values) { return Geomean(values); }

// Under the closing table, when some passing runs were noisy: that the figures leave
// them out, then NoisyFootnote of the passing runs (how many, each one's reason).
std::string SummaryNoisyNote(const std::vector<RunRecord>& runs, int64_t noisy_runs) {
  if (noisy_runs == 0) return "";
  std::vector<const RunRecord*> passing;
  for (const RunRecord& run : runs) {
    if (run.result.status == TestStatus::kPass && BlamedOnModel(run.result)) {
      passing.push_back(&run);
    }
  }
  return fmt::format(
             "\nprepare_s, steady_ms and speedup leave the noisy runs' figures out ({} marks a "
             "type's figure when all its runs were noisy)\n",
             kNoisyMark) +
         NoisyFootnote(passing, &NoisyRunLabel);
}

}  // namespace

std::string FormatSweepSummary(const std::vector<RunRecord>& runs) {
  if (runs.empty()) return "no runs\n";
  std::map<std::string, std::map<TestStatus, int64_t>> counts;  // model type -> status -> n
  std::map<std::string, PassFigures> figures;                   // model type -> passing figures
  PassFigures all_figures;
  std::set<TestStatus> present;
  for (const RunRecord& run : runs) {
    const std::string& type = run.spec.model_type.empty() ? run.spec.model_id : run.spec.model_type;
    ++counts[type][run.result.status];
    figures[type].Add(run.result);
    all_figures.Add(run.result);
    present.insert(run.result.status);
  }
  std::vector<TestStatus> statuses;
  for (TestStatus status : AllTestStatuses()) {
    if (present.count(status) > 0) statuses.push_back(status);
  }
  std::vector<TextTable::Column> columns = {{"model_type", TextTable::kLeft}};
  for (TestStatus status : statuses) {
    columns.push_back({std::string(TestStatusName(status)), TextTable::kRight});
  }
  columns.push_back({"total", TextTable::kRight});
  // Runs blamed on compatlab (core/blame.h) and passes over the tested runs blamed on the
  // model (skipped runs are in their status column, not in the rate).
  columns.push_back({"not_model", TextTable::kRight});
  columns.push_back({"pass_rate", TextTable::kRight});
  // Of the passing runs: how many were noisy; the quiet ones' median prepare and steady
  // times and geometric-mean speedup.
  columns.push_back({"noisy", TextTable::kRight});
  columns.push_back({"prepare_s", TextTable::kRight});
  columns.push_back({"steady_ms", TextTable::kRight});
  columns.push_back({"speedup", TextTable::kRight});
  TextTable table(std::move(columns));
  std::map<TestStatus, int64_t> totals;
  auto add_row = [&](const std::string& name, const std::map<TestStatus, int64_t>& by_status,
                     const PassFigures& f) {
    std::vector<std::string> cells = {name};
    int64_t total = 0;
    for (TestStatus status : statuses) {
      auto it = by_status.find(status);
      const int64_t n = it == by_status.end() ? 0 : it->second;
      cells.push_back(n == 0 ? "." : std::to_string(n));
      total += n;
    }
    cells.push_back(std::to_string(total));
    cells.push_back(f.rate.not_model == 0 ? "." : std::to_string(f.rate.not_model));
    const std::optional<double> rate = f.rate.Rate();
    cells.push_back(rate ? fmt::format("{:.1f}%", 100.0 * *rate) : "-");
    cells.push_back(f.noisy_runs == 0 ? "." : std::to_string(f.noisy_runs));
    cells.push_back(QuietFigure(f.prepare_s, &Median, 3));
    cells.push_back(QuietFigure(f.steady_s, &Median, 3, 1000.0));
    cells.push_back(QuietFigure(f.speedups, &GeomeanOf, 2));
    table.AddRow(std::move(cells));
  };
  for (const auto& [type, by_status] : counts) {
    add_row(type, by_status, figures[type]);
    for (const auto& [status, n] : by_status) totals[status] += n;
  }
  table.AddSeparator();
  add_row("total", totals, all_figures);
  return table.Render() + SummaryNoisyNote(runs, all_figures.noisy_runs);
}

}  // namespace compatlab
