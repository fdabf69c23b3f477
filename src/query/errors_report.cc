#include "query/errors_report.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/strings/str_split.h"
#include "core/blame.h"
#include "core/limits.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "query/text_table.h"

namespace compatlab {
namespace {

constexpr size_t kNamedModels = 5;  // models named per group; the rest are counted
constexpr size_t kWrapWidth = 100;  // text width of the explanation lines

// `text` (sanitized) wrapped at spaces to lines of at most `width` code
// points after `indent`; the first line is not indented (its label is there).
std::string Wrap(std::string_view text, size_t indent, size_t width = kWrapWidth) {
  const std::string clean = SanitizeForTerminal(text);
  std::string out;
  std::string line;
  auto flush = [&] {
    if (!out.empty()) out += "\n" + std::string(indent, ' ');
    out += line;
    line.clear();
  };
  size_t start = 0;
  while (start <= clean.size()) {
    size_t end = clean.find(' ', start);
    if (end == std::string::npos) end = clean.size();
    std::string word = clean.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (!line.empty() && DisplayWidth(line) + 1 + DisplayWidth(word) > width) flush();
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty() || out.empty()) flush();
  return out;
}

std::string Join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

// "a, b, c, d, e, +3 more" (the first kNamedModels); the count is glued
// with a no-break space so that Wrap keeps it on one line.
std::string NamedAndCounted(const std::vector<std::string>& items) {
  std::vector<std::string> named(items.begin(),
                                 items.begin() + std::min(items.size(), kNamedModels));
  std::string out = Join(named, ", ");
  if (items.size() > kNamedModels) {
    out += fmt::format(", +{}\u00a0more", items.size() - kNamedModels);
  }
  return out;
}

std::string Plural(int64_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

int64_t DistinctModels(const ErrorGroup& g) { return static_cast<int64_t>(g.model_ids.size()); }

// Where a blame's groups come in errors --blame: the model's first (what the
// pass rate counts), then what compatlab could not test.
int BlameRank(std::string_view blame) {
  constexpr std::string_view kOrder[] = {kBlameModel, kBlameEnvironment, kBlameHarness,
                                         kBlameReference, kBlameReduction};
  for (int i = 0; i < static_cast<int>(std::size(kOrder)); ++i) {
    if (kOrder[i] == blame) return i;
  }
  return static_cast<int>(std::size(kOrder));
}

// Failures and signatures per blame, in the groups' order (groups made by_blame).
struct BlameCount {
  std::string blame;
  int64_t failures = 0;
  int64_t signatures = 0;
};
std::vector<BlameCount> CountByBlame(const std::vector<ErrorGroup>& groups) {
  std::vector<BlameCount> counts;
  for (const ErrorGroup& g : groups) {
    if (counts.empty() || counts.back().blame != g.blame) counts.push_back({g.blame});
    counts.back().failures += g.runs;
    ++counts.back().signatures;
  }
  return counts;
}

}  // namespace

nlohmann::ordered_json KnownErrorJson(const KnownError* known) {
  if (known == nullptr) return nullptr;
  return {{"id", known->id},
          {"explanation", known->explanation},
          {"cause", known->cause},
          {"workaround", known->workaround}};
}

std::vector<ErrorGroup> GroupErrors(const std::vector<RunRecord>& runs,
                                    const ErrorKnowledgeBase* kb, bool by_blame) {
  struct Acc {
    ErrorGroup group;
    std::set<std::string> model_ids, model_types, stages, missing_packages;
    std::map<std::pair<std::string, std::string>, int64_t> stacks;
    std::string example_started_at;
  };
  std::map<std::tuple<std::string, TestStatus, std::string>, Acc> by_key;
  for (const RunRecord& run : runs) {
    const RunResult& r = run.result;
    if (!IsFailureStatus(r.status)) continue;
    const std::string& signature = r.error_signature;
    const std::string blame = !by_blame          ? ""
                              : BlamedOnModel(r) ? std::string(kBlameModel)
                                                 : r.blame;
    Acc& acc = by_key[{blame, r.status, signature}];
    ErrorGroup& g = acc.group;
    if (by_blame) {
      const std::vector<std::string> names =
          absl::StrSplit(r.missing_packages, ", ", absl::SkipEmpty());
      acc.missing_packages.insert(names.begin(), names.end());
    }
    if (g.runs == 0) {
      g.blame = blame;
      g.status = r.status;
      g.signature = signature;
      g.first_seen = g.last_seen = run.started_at;
      if (kb != nullptr) g.known = kb->Match(TestStatusName(r.status), signature);
    }
    ++g.runs;
    acc.model_ids.insert(run.spec.model_id);
    if (!run.spec.model_type.empty()) acc.model_types.insert(run.spec.model_type);
    if (!r.stage.empty()) acc.stages.insert(r.stage);
    ++acc.stacks[{r.torch_version, r.transformers_version}];
    g.first_seen = std::min(g.first_seen, run.started_at);
    g.last_seen = std::max(g.last_seen, run.started_at);
    if (std::tie(run.started_at, run.run_id) >=
        std::tie(acc.example_started_at, g.example_run_id)) {
      acc.example_started_at = run.started_at;
      g.example_run_id = run.run_id;
    }
  }
  std::vector<ErrorGroup> groups;
  for (auto& [key, acc] : by_key) {
    ErrorGroup g = std::move(acc.group);
    g.model_ids.assign(acc.model_ids.begin(), acc.model_ids.end());
    g.model_types.assign(acc.model_types.begin(), acc.model_types.end());
    g.stages.assign(acc.stages.begin(), acc.stages.end());
    g.missing_packages.assign(acc.missing_packages.begin(), acc.missing_packages.end());
    for (const auto& [stack, n] : acc.stacks) g.stacks.push_back({stack.first, stack.second, n});
    groups.push_back(std::move(g));
  }
  std::stable_sort(groups.begin(), groups.end(), [](const ErrorGroup& a, const ErrorGroup& b) {
    if (a.blame != b.blame) {
      return std::tuple(BlameRank(a.blame), a.blame) < std::tuple(BlameRank(b.blame), b.blame);
    }
    if (a.runs != b.runs) return a.runs > b.runs;
    if (DistinctModels(a) != DistinctModels(b)) return DistinctModels(a) > DistinctModels(b);
    return std::tie(a.status, a.signature) < std::tie(b.status, b.signature);
  });
  return groups;
}

std::string FormatErrorsText(const std::vector<ErrorGroup>& groups, const std::string& kb_origin) {
  if (groups.empty()) return "no failures\n";
  std::string out;
  int64_t total = 0, explained_groups = 0, explained_runs = 0;
  constexpr size_t kIndent = 4 + 9;                  // "    " + label column
  std::map<const KnownError*, size_t> explained_at;  // entry -> the group that shows it in full
  const std::vector<BlameCount> blames = CountByBlame(groups);
  for (size_t i = 0; i < groups.size(); ++i) {
    const ErrorGroup& g = groups[i];
    if (!g.blame.empty() && (i == 0 || groups[i - 1].blame != g.blame)) {
      auto count = std::find_if(blames.begin(), blames.end(),
                                [&g](const BlameCount& c) { return c.blame == g.blame; });
      out += fmt::format("blame {}: {} in {}{}\n\n", SanitizeForTerminal(g.blame),
                         Plural(count->failures, "failure"), Plural(count->signatures, "signature"),
                         BlamedOnModel(g.blame) ? "" : " (not the model's: not in the pass rate)");
    }
    total += g.runs;
    if (g.known != nullptr) {
      ++explained_groups;
      explained_runs += g.runs;
    }
    out +=
        fmt::format("[{}] {}, {}, {}: {}\n", i + 1, TestStatusName(g.status), Plural(g.runs, "run"),
                    Plural(DistinctModels(g), "model"),
                    g.signature.empty() ? "(no error message)" : SanitizeForTerminal(g.signature));
    auto line = [&](std::string_view label, std::string_view text) {
      out += fmt::format("    {:<9}{}\n", label, Wrap(text, kIndent));
    };
    line("models", NamedAndCounted(g.model_ids));
    if (!g.missing_packages.empty()) {
      line("needs", SanitizeForTerminal(Join(g.missing_packages, ", ")));
    }
    if (!g.stages.empty()) line(g.stages.size() == 1 ? "stage" : "stages", Join(g.stages, ", "));
    std::vector<std::string> stacks;
    for (const ErrorGroup::Stack& s : g.stacks) {
      stacks.push_back(fmt::format(
          "torch {}, transformers {} ({})", s.torch_version.empty() ? "?" : s.torch_version,
          s.transformers_version.empty() ? "?" : s.transformers_version, Plural(s.runs, "run")));
    }
    line("stacks", Join(stacks, "; "));
    line("seen", g.first_seen == g.last_seen ? g.first_seen
                                             : fmt::format("{} .. {}", g.first_seen, g.last_seen));
    line("example", "compatlab repro " + g.example_run_id);
    if (g.known != nullptr) {
      if (auto it = explained_at.find(g.known); it != explained_at.end()) {
        line("known", fmt::format("[{}] as in [{}]", g.known->id, it->second + 1));
      } else {
        explained_at[g.known] = i;
        line("known", fmt::format("[{}] {}", g.known->id, g.known->explanation));
        line("cause", g.known->cause);
        line("fix", g.known->workaround);
      }
    }
    out += "\n";
  }
  out += fmt::format("summary: {} in {}; {} ({}) explained by {}\n", Plural(total, "failure"),
                     Plural(static_cast<int64_t>(groups.size()), "signature"),
                     Plural(explained_groups, "signature"), Plural(explained_runs, "failure"),
                     kb_origin.empty() ? std::string("no knowledge base") : kb_origin);
  return out;
}

nlohmann::ordered_json ErrorsJson(const std::vector<ErrorGroup>& groups,
                                  const std::string& kb_origin, size_t max_text_bytes) {
  using ojson = nlohmann::ordered_json;
  auto text = [max_text_bytes](std::string_view value) {
    return max_text_bytes == 0 ? std::string(value) : TruncateForDisplay(value, max_text_bytes);
  };
  auto texts = [&text](const std::vector<std::string>& values) {
    ojson out = ojson::array();
    for (const std::string& value : values) out.push_back(text(value));
    return out;
  };
  ojson array = ojson::array();
  int64_t total = 0, explained_groups = 0, explained_runs = 0;
  for (const ErrorGroup& g : groups) {
    total += g.runs;
    if (g.known != nullptr) {
      ++explained_groups;
      explained_runs += g.runs;
    }
    ojson stacks = ojson::array();
    for (const ErrorGroup::Stack& s : g.stacks) {
      stacks.push_back({{"torch_version", text(s.torch_version)},
                        {"transformers_version", text(s.transformers_version)},
                        {"runs", s.runs}});
    }
    ojson group = {{"status", std::string(TestStatusName(g.status))},
                   {"signature", text(g.signature)},
                   {"runs", g.runs},
                   {"models", DistinctModels(g)},
                   {"model_ids", texts(g.model_ids)},
                   {"model_types", texts(g.model_types)},
                   {"stages", texts(g.stages)},
                   {"stacks", stacks},
                   {"first_seen", text(g.first_seen)},
                   {"last_seen", text(g.last_seen)},
                   {"example_run_id", text(g.example_run_id)},
                   {"known", KnownErrorJson(g.known)}};
    if (!g.blame.empty()) {
      group["blame"] = text(g.blame);
      group["missing_packages"] = texts(g.missing_packages);
    }
    array.push_back(std::move(group));
  }
  ojson summary = {{"failures", total},
                   {"signatures", static_cast<int64_t>(groups.size())},
                   {"explained_signatures", explained_groups},
                   {"explained_failures", explained_runs}};
  if (!groups.empty() && !groups.front().blame.empty()) {
    ojson blames = ojson::array();
    for (const BlameCount& c : CountByBlame(groups)) {
      blames.push_back(
          {{"blame", text(c.blame)}, {"failures", c.failures}, {"signatures", c.signatures}});
    }
    summary["blames"] = std::move(blames);
  }
  ojson out = {{"knowledge_base", kb_origin}, {"summary", summary}, {"groups", array}};
  return out;
}

std::string FormatErrorsJson(const std::vector<ErrorGroup>& groups, const std::string& kb_origin) {
  return ErrorsJson(groups, kb_origin)
             .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
         "\n";
}

std::string FormatKnownErrorsFooter(const std::vector<RunRecord>& runs,
                                    const ErrorKnowledgeBase& kb, const std::string& kb_origin) {
  std::vector<const KnownError*> order;
  std::map<const KnownError*, std::vector<std::string>> models;
  for (const RunRecord& run : runs) {
    if (!IsFailureStatus(run.result.status)) continue;
    const KnownError* known = kb.MatchResult(run.result);
    if (known == nullptr) continue;
    auto [it, added] = models.try_emplace(known);
    if (added) order.push_back(known);
    if (std::find(it->second.begin(), it->second.end(), run.spec.model_id) == it->second.end()) {
      it->second.push_back(run.spec.model_id);
    }
  }
  if (order.empty()) return "";
  std::string out = fmt::format("\nknown errors ({}):\n", kb_origin);
  for (const KnownError* known : order) {
    const std::string label = fmt::format("  [{}] ", known->id);
    const size_t indent = DisplayWidth(label);
    const size_t width = kWrapWidth - indent;
    out += label +
           Wrap(fmt::format("{}: {}", NamedAndCounted(models[known]), known->explanation), indent,
                width) +
           "\n";
    out +=
        std::string(indent, ' ') + Wrap("workaround: " + known->workaround, indent, width) + "\n";
  }
  return out;
}

}  // namespace compatlab
