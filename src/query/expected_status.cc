#include "query/expected_status.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "fmt/format.h"
#include "query/text_table.h"

namespace compatlab {
namespace {

constexpr std::string_view kHeader =
    "# compatlab expected status, format 2 (doc/expected-status.md)\n";
constexpr std::string_view kColumnsLine =
    "# test_id\tmodel_id\tkind\tmode\ttarget\tstatus\tblame\n";

std::string BlameOf(const RunResult& result) {
  return BlamedOnModel(result) ? std::string(kBlameModel) : result.blame;
}

ExpectedStatus LineOf(const RunRecord& run) {
  return {run.test_id,     run.spec.model_id, run.spec.kind,      run.spec.mode,
          run.spec.target, run.result.status, BlameOf(run.result)};
}

bool IsBlame(std::string_view blame) {
  return blame == kBlameModel || blame == kBlameReduction || blame == kBlameReference ||
         blame == kBlameHarness || blame == kBlameEnvironment;
}

// "fail_to_run", or "fail_to_run (reduction)" for a run not blamed on the model.
std::string StatusText(TestStatus status, const std::string& blame) {
  std::string text(TestStatusName(status));
  if (blame != kBlameModel) text += " (" + blame + ")";
  return text;
}

bool FileOrder(const ExpectedStatus& a, const ExpectedStatus& b) {
  return std::tie(a.model_id, a.kind, a.mode, a.target, a.test_id) <
         std::tie(b.model_id, b.kind, b.mode, b.target, b.test_id);
}

// A field may hold neither a tab nor a line break (it would split the line).
std::string Clean(std::string text) {
  for (char& c : text) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

bool IsTestId(std::string_view id) {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::string FormatExpectedStatus(const std::vector<RunRecord>& runs) {
  std::vector<ExpectedStatus> lines;
  for (const RunRecord& run : runs) lines.push_back(LineOf(run));
  std::sort(lines.begin(), lines.end(), FileOrder);
  std::string out(kHeader);
  out += fmt::format("# pass rate: {}\n", ExpectedPassRate(lines).Describe());
  out += kColumnsLine;
  for (const ExpectedStatus& l : lines) {
    out += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\n", l.test_id, Clean(l.model_id), Clean(l.kind),
                       Clean(l.mode), Clean(l.target), TestStatusName(l.status), l.blame);
  }
  return out;
}

PassRate ExpectedPassRate(const std::vector<ExpectedStatus>& expected) {
  PassRate rate;
  for (const ExpectedStatus& line : expected) rate.Add(line.status, line.blame);
  return rate;
}

absl::StatusOr<std::vector<ExpectedStatus>> ParseExpectedStatus(std::string_view text,
                                                                const std::string& name) {
  std::vector<ExpectedStatus> lines;
  std::set<std::string> seen;
  int number = 0;
  while (!text.empty()) {
    ++number;
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string> fields;
    size_t start = 0;
    while (true) {
      const size_t tab = line.find('\t', start);
      fields.emplace_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
      if (tab == std::string_view::npos) break;
      start = tab + 1;
    }
    auto error = [&](const std::string& why) {
      return absl::InvalidArgumentError(fmt::format("{}:{}: {}", name, number, why));
    };
    if (fields.size() != 6 && fields.size() != 7) {
      return error(
          fmt::format("expected 7 tab-separated fields (test_id, model_id, kind, mode, "
                      "target, status, blame), got {}",
                      fields.size()));
    }
    const std::string blame = fields.size() == 7 ? fields[6] : std::string(kBlameModel);
    if (!IsBlame(blame)) {
      return error(
          fmt::format("'{}' is not a blame (model, reduction, reference, harness)", blame));
    }
    if (!IsTestId(fields[0])) return error(fmt::format("'{}' is not a test_id", fields[0]));
    absl::StatusOr<TestStatus> status = ParseTestStatus(fields[5]);
    if (!status.ok()) return error(std::string(status.status().message()));
    if (!seen.insert(fields[0]).second) {
      return error(fmt::format("test {} appears twice", fields[0]));
    }
    lines.push_back({fields[0], fields[1], fields[2], fields[3], fields[4], *status, blame});
  }
  return lines;
}

std::vector<ExpectedMismatch> CheckExpectedStatus(const std::vector<ExpectedStatus>& expected,
                                                  const std::vector<RunRecord>& runs) {
  std::map<std::string, const RunRecord*> by_test;
  for (const RunRecord& run : runs) by_test[run.test_id] = &run;
  std::vector<ExpectedMismatch> mismatches;
  std::set<std::string> listed;
  for (const ExpectedStatus& line : expected) {
    listed.insert(line.test_id);
    auto it = by_test.find(line.test_id);
    if (it == by_test.end()) {
      mismatches.push_back({ExpectedMismatch::kMissing, line, ""});
    } else if (const RunResult& r = it->second->result;
               r.status != line.status || BlameOf(r) != line.blame) {
      mismatches.push_back({ExpectedMismatch::kChanged, line, StatusText(r.status, BlameOf(r))});
    }
  }
  for (const RunRecord& run : runs) {
    if (listed.count(run.test_id) == 0) {
      mismatches.push_back({ExpectedMismatch::kUnexpected, LineOf(run),
                            StatusText(run.result.status, BlameOf(run.result))});
    }
  }
  std::stable_sort(mismatches.begin(), mismatches.end(),
                   [](const ExpectedMismatch& a, const ExpectedMismatch& b) {
                     return FileOrder(a.expected, b.expected);
                   });
  return mismatches;
}

std::string FormatExpectedMismatches(const std::vector<ExpectedMismatch>& mismatches,
                                     const std::vector<ExpectedStatus>& expected,
                                     const std::vector<RunRecord>& runs) {
  const size_t expected_tests = expected.size();
  std::string out;
  size_t counts[3] = {0, 0, 0};
  if (!mismatches.empty()) {
    using C = TextTable::Column;
    TextTable table({C{"change", TextTable::kLeft}, C{"test", TextTable::kLeft},
                     C{"model", TextTable::kLeft}, C{"target", TextTable::kLeft},
                     C{"mode", TextTable::kLeft}, C{"kind", TextTable::kLeft},
                     C{"expected", TextTable::kLeft}, C{"actual", TextTable::kLeft}});
    for (const ExpectedMismatch& m : mismatches) {
      ++counts[m.what];
      static constexpr std::string_view kWhat[] = {"changed", "missing", "unexpected"};
      const ExpectedStatus& e = m.expected;
      table.AddRow({std::string(kWhat[m.what]), e.test_id.substr(0, 12), e.model_id, e.target,
                    e.mode, e.kind,
                    m.what == ExpectedMismatch::kUnexpected ? "-" : StatusText(e.status, e.blame),
                    m.actual.empty() ? "-" : m.actual});
    }
    out += table.Render();
  }
  out += fmt::format("expected status: {} tests, {} changed, {} missing, {} unexpected\n",
                     expected_tests, counts[0], counts[1], counts[2]);
  out += fmt::format("pass rate: expected {}; actual {}\n", ExpectedPassRate(expected).Describe(),
                     PassRateOf(runs).Describe());
  return out;
}

}  // namespace compatlab
