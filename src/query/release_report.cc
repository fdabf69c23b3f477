#include "query/release_report.h"

#include <algorithm>
#include <set>

#include "core/blame.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "query/builds.h"
#include "query/matrix.h"
#include "query/text_table.h"

namespace compatlab {
namespace {

constexpr size_t kReportCellChars = 160;

// `text` for one Markdown table cell: sanitized, cut, '|' and '`' escaped.
std::string MdCell(std::string_view text) {
  std::string out;
  for (char c : Truncate(text, kReportCellChars)) {
    if (c == '|' || c == '`' || c == '\\' || c == '*' || c == '_' || c == '<') out += '\\';
    out += c;
  }
  return out;
}

// `text` in a code span (signatures): no backtick or '|' inside, cut.
std::string MdCode(std::string_view text) {
  std::string out = Truncate(text, kReportCellChars);
  std::replace(out.begin(), out.end(), '`', '\'');
  std::replace(out.begin(), out.end(), '|', '/');
  return out.empty() ? "" : "`" + out + "`";
}

// The run a change is about: head's when it has one, else base's.
const RunRecord& RunOf(const DiffReport& report, const Change& change) {
  return change.head >= 0 ? report.head[change.head] : report.base[change.base];
}

// The model, the test and its matrix column (ranks and dynamic included, as the matrix
// names them: a test over 2 ranks or a dynamic one is told apart from its twin).
std::string TestCells(const RunRecord& run) {
  std::string column = run.spec.target + "/" + run.spec.mode;
  if (run.spec.ranks != 1) column += fmt::format("/{} ranks", run.spec.ranks);
  if (!run.spec.dynamic.empty()) column += " dynamic=" + run.spec.dynamic;
  return fmt::format("{} | {} | {}", MdCell(run.spec.model_id), MdCell(MatrixTestLabel(run.spec)),
                     MdCell(column));
}

std::string StatusOf(const DiffReport& report, int base, int head, bool of_head) {
  const int index = of_head ? head : base;
  if (index < 0) return "-";
  const RunRecord& run = of_head ? report.head[index] : report.base[index];
  return std::string(TestStatusName(run.result.status));
}

// The changes of `kinds`, by model.
std::vector<const Change*> ChangesOf(const DiffReport& report, std::vector<ChangeKind> kinds) {
  std::vector<const Change*> out;
  for (const Change& change : report.changes) {
    if (std::find(kinds.begin(), kinds.end(), change.kind) != kinds.end()) out.push_back(&change);
  }
  std::stable_sort(out.begin(), out.end(), [&](const Change* a, const Change* b) {
    return RunOf(report, *a).spec.model_id < RunOf(report, *b).spec.model_id;
  });
  return out;
}

std::string KnownCell(const ErrorKnowledgeBase* kb, const RunResult& result) {
  const KnownError* known = kb == nullptr ? nullptr : kb->MatchResult(result);
  if (known == nullptr) return "-";
  return fmt::format("**{}**: {} Workaround: {}", MdCell(known->id), MdCell(known->explanation),
                     MdCell(known->workaround));
}

std::string NewFailures(const DiffReport& report, const ErrorKnowledgeBase* kb) {
  const std::vector<const Change*> changes = ChangesOf(report, {ChangeKind::kNewlyFailing});
  std::string out = fmt::format("\n## New failures ({})\n\n", changes.size());
  if (changes.empty()) return out + "None.\n";
  out += "| model | test | target/mode | was | now | blame | error signature | knowledge base |\n";
  out += "|---|---|---|---|---|---|---|---|\n";
  for (const Change* change : changes) {
    const RunRecord& run = RunOf(report, *change);
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", TestCells(run),
                       StatusOf(report, change->base, change->head, false),
                       StatusOf(report, change->base, change->head, true), MdCell(run.result.blame),
                       MdCode(run.result.error_signature), KnownCell(kb, run.result));
  }
  return out;
}

// A section of status changes (fixes, other) without knowledge-base column.
std::string StatusSection(const DiffReport& report, const std::string& title,
                          std::vector<ChangeKind> kinds) {
  const std::vector<const Change*> changes = ChangesOf(report, std::move(kinds));
  std::string out = fmt::format("\n## {} ({})\n\n", title, changes.size());
  if (changes.empty()) return out + "None.\n";
  out += "| model | test | target/mode | was | now | detail |\n|---|---|---|---|---|---|\n";
  for (const Change* change : changes) {
    out += fmt::format("| {} | {} | {} | {} |\n", TestCells(RunOf(report, *change)),
                       StatusOf(report, change->base, change->head, false),
                       StatusOf(report, change->base, change->head, true), MdCell(change->detail));
  }
  return out;
}

// Slower or faster tests: each change's kind, figures and the rule that decided it.
std::string TimingSection(const DiffReport& report, const std::string& title,
                          std::vector<ChangeKind> kinds) {
  const std::vector<const Change*> changes = ChangesOf(report, std::move(kinds));
  std::string out = fmt::format("\n## {} ({})\n\n", title, changes.size());
  if (changes.empty()) return out + "None.\n";
  out += "| model | test | target/mode | what | figures | rule |\n|---|---|---|---|---|---|\n";
  for (const Change* change : changes) {
    out += fmt::format("| {} | {} | {} | {} |\n", TestCells(RunOf(report, *change)),
                       ChangeKindName(change->kind), MdCell(change->detail), MdCell(change->rule));
  }
  return out;
}

std::string FallbackSection(const DiffReport& report) {
  std::map<std::string, const RunRecord*> base;
  for (const RunRecord& run : report.base) base.emplace(run.test_id, &run);
  std::string rows;
  int64_t count = 0;
  for (const RunRecord& run : report.head) {
    auto it = base.find(run.test_id);
    if (it == base.end()) continue;
    const std::vector<std::string> ops = NewFallbackOps(it->second->result, run.result);
    if (ops.empty()) continue;
    ++count;
    std::string names;
    for (const std::string& op : ops) names += (names.empty() ? "" : ", ") + MdCode(op);
    rows += fmt::format("| {} | {} |\n", TestCells(run), names);
  }
  std::string out = fmt::format("\n## Ops newly falling back ({})\n\n", count);
  if (count == 0)
    return out +
           "None (only audited targets record fallback ops; the cpu target "
           "is not audited).\n";
  return out + "| model | test | target/mode | ops |\n|---|---|---|---|\n" + rows;
}

}  // namespace

std::vector<std::string> NewFallbackOps(const RunResult& base, const RunResult& head) {
  if (head.fallback_audit != "audited") return {};
  const nlohmann::json now = nlohmann::json::parse(head.fallback_ops, nullptr, false);
  if (!now.is_object()) return {};
  nlohmann::json before = nlohmann::json::parse(base.fallback_ops, nullptr, false);
  if (base.fallback_audit != "audited" || !before.is_object()) before = nlohmann::json::object();
  std::vector<std::string> out;
  for (const auto& item : now.items()) {
    if (!before.contains(item.key())) out.push_back(item.key());
  }
  return out;
}

std::string FormatReleaseReport(const DiffReport& report, const std::string& base_name,
                                const std::string& head_name, const ErrorKnowledgeBase* kb) {
  std::string out =
      fmt::format("# Release report: {} -> {}\n\n", MdCell(base_name), MdCell(head_name));
  const std::string builds = BuildsDifferLine(report.base, report.head);
  if (!builds.empty()) out += "> " + MdCell(builds.substr(0, builds.find('\n'))) + "\n\n";
  out += fmt::format("- tests compared: {} (base {}, head {})\n", report.compared,
                     report.base.size(), report.head.size());
  out += fmt::format("- pass rate: base {}; head {}\n", PassRateOf(report.base).Describe(),
                     PassRateOf(report.head).Describe());
  out += fmt::format("- {} regressions, {} improvements (diff's rule: doc/dataset.md, \"Diff\")\n",
                     report.Regressions(), report.Improvements());
  if (report.prepare_not_judged > 0) {
    out += fmt::format("- not judged: prepare_s of {} tests (a first call on a noisy machine)\n",
                       report.prepare_not_judged);
  }
  out += NewFailures(report, kb);
  out += StatusSection(report, "Fixes", {ChangeKind::kNewlyPassing});
  out += StatusSection(report, "Other status changes",
                       {ChangeKind::kStatusChanged, ChangeKind::kSignatureChanged});
  out += TimingSection(
      report, "Slower",
      {ChangeKind::kSlowerSteady, ChangeKind::kSlowerPrepare, ChangeKind::kMoreMemory});
  out += TimingSection(
      report, "Faster",
      {ChangeKind::kFasterSteady, ChangeKind::kFasterPrepare, ChangeKind::kLessMemory});
  out += FallbackSection(report);
  out += fmt::format(
      "\n## Not compared\n\n- only in base: {}\n- only in head: {}\n- another CPU: {}\n- "
      "another deployment stack: {}\n",
      report.Count(ChangeKind::kOnlyInBase), report.Count(ChangeKind::kOnlyInHead),
      report.Count(ChangeKind::kDifferentCpu), report.Count(ChangeKind::kDifferentStack));
  return out;
}

}  // namespace compatlab
