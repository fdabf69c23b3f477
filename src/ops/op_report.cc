#include "ops/op_report.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "query/text_table.h"

namespace compatlab {
namespace {

using nlohmann::json;

bool Supported(OpCategory c) { return c == OpCategory::kNative || c == OpCategory::kFallback; }
bool Failing(OpCategory c) {
  return c == OpCategory::kFail || c == OpCategory::kError || c == OpCategory::kTimeout ||
         c == OpCategory::kCrash;
}

// The keys of a JSON object text, or the strings of a JSON array text; none when malformed.
std::vector<std::string> Names(const std::string& text) {
  std::vector<std::string> names;
  json j = json::parse(text, nullptr, false);
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) names.push_back(k);
  } else if (j.is_array()) {
    for (const json& v : j) {
      if (v.is_string()) names.push_back(v.get<std::string>());
    }
  }
  return names;
}

std::string FigureText(const std::optional<double>& v) {
  return v.has_value() ? absl::StrFormat("%.3g", *v) : "-";
}

}  // namespace

OpCounts CountOps(const std::vector<OpResult>& results) {
  OpCounts counts;
  for (const OpResult& r : results) {
    const OpCategory c = CategoryOf(r);
    ++counts.by_category[c];
    if (c == OpCategory::kSkipped) ++counts.skipped_by_source[r.skip_source];
    if (IsStaleSkip(r)) ++counts.stale;
    ++counts.total;
  }
  return counts;
}

std::string CountsInline(const OpCounts& counts) {
  std::vector<std::string> parts;
  for (OpCategory c : AllOpCategories()) {
    auto it = counts.by_category.find(c);
    if (it != counts.by_category.end())
      parts.push_back(absl::StrCat(it->second, " ", std::string(OpCategoryName(c))));
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

absl::StatusOr<OpUsers> FallbackUsers(Store& store) {
  OpUsers users;
  absl::Status s = store.ScanFields({"model_id", "fallback_ops"}, 0,
                                    [&users](int64_t, std::vector<FieldValue>& values) {
                                      const auto* model = std::get_if<std::string>(&values[0]);
                                      const auto* ops = std::get_if<std::string>(&values[1]);
                                      if (model == nullptr || ops == nullptr || ops->empty())
                                        return;
                                      for (const std::string& op : Names(*ops))
                                        users[op].insert(*model);
                                    });
  if (!s.ok()) return s;
  return users;
}

int64_t ModelsUsing(const OpResult& r, const OpUsers& users) {
  std::set<std::string> models;
  for (const std::string* text : {&r.aten_ops, &r.fallback_ops}) {
    for (const std::string& op : Names(*text)) {
      auto it = users.find(op);
      if (it != users.end()) models.insert(it->second.begin(), it->second.end());
    }
  }
  return static_cast<int64_t>(models.size());
}

std::string OpSweepReport(const OpSweepInfo& sweep, const std::vector<OpResult>& results,
                          double wall_s) {
  const OpCounts counts = CountOps(results);
  std::string out = absl::StrFormat(
      "op sweep %s: target %s, mode %s%s, dtypes %s, torch %s: %d cases in %.1f s\n",
      sweep.op_sweep_id, sweep.target, sweep.mode,
      sweep.backend.empty() ? "" : absl::StrCat(" (", sweep.backend, ")"), sweep.dtypes,
      sweep.torch_version, counts.total, wall_s);
  TextTable table({{"category", TextTable::kLeft}, {"cases", TextTable::kRight}});
  for (OpCategory c : AllOpCategories()) {
    auto it = counts.by_category.find(c);
    table.AddRow({std::string(OpCategoryName(c)),
                  std::to_string(it == counts.by_category.end() ? 0 : it->second)});
  }
  for (const auto& [source, n] : counts.skipped_by_source) {
    table.AddRow(
        {absl::StrCat("  skipped: ", source.empty() ? "other" : source), std::to_string(n)});
  }
  table.AddSeparator();
  table.AddRow({"total", std::to_string(counts.total)});
  out += table.Render();
  if (sweep.check_skips) {
    out += absl::StrCat("stale skips (skipped, run anyway, passed): ", counts.stale, "\n");
    for (const OpResult& r : results) {
      if (IsStaleSkip(r)) {
        out += absl::StrCat("  ", r.Key(), " ", r.dtype, " [", r.skip_source, " ", r.skip_kind,
                            "] ", r.skip_reason, "\n");
      }
    }
  }
  return out;
}

std::vector<OpRow> OpRows(const std::vector<OpResult>& results, const OpUsers& users,
                          const OpTableOptions& options) {
  std::vector<OpRow> rows;
  for (const OpResult& r : results) {
    if (!options.categories.empty() && !options.categories.contains(CategoryOf(r))) continue;
    rows.push_back({&r, ModelsUsing(r, users)});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const OpRow& a, const OpRow& b) {
    return std::make_tuple(-a.models, a.result->Key(), a.result->dtype) <
           std::make_tuple(-b.models, b.result->Key(), b.result->dtype);
  });
  if (options.limit > 0 && rows.size() > options.limit) rows.resize(options.limit);
  return rows;
}

std::string OpTableText(const std::vector<OpRow>& rows) {
  TextTable table({{"op", TextTable::kLeft},
                   {"dtype", TextTable::kLeft},
                   {"category", TextTable::kLeft},
                   {"status", TextTable::kLeft},
                   {"models", TextTable::kRight},
                   {"pass/fail/err", TextTable::kRight},
                   {"max_abs_err", TextTable::kRight},
                   {"fallback ops", TextTable::kLeft},
                   {"detail", TextTable::kLeft}});
  for (const OpRow& row : rows) {
    const OpResult& r = *row.result;
    const std::string fallback = absl::StrJoin(Names(r.fallback_ops), " ");
    std::string detail = r.first_failure.empty() ? r.detail : r.first_failure;
    if (!r.skip_source.empty()) detail = absl::StrCat("[", r.skip_source, "] ", r.skip_reason);
    table.AddRow({r.Key(), r.dtype, std::string(OpCategoryName(CategoryOf(r))),
                  std::string(TestStatusName(r.status)), std::to_string(row.models),
                  absl::StrCat(r.passed, "/", r.failed, "/", r.errored), FigureText(r.max_abs_err),
                  Truncate(SanitizeForTerminal(fallback), 40),
                  Truncate(SanitizeForTerminal(detail), 80)});
  }
  return table.Render();
}

OpDiff DiffOps(const std::vector<OpResult>& base, const std::vector<OpResult>& head) {
  std::map<std::pair<std::string, std::string>, const OpResult*> base_by_key;
  for (const OpResult& r : base) base_by_key[{r.Key(), r.dtype}] = &r;
  OpDiff diff;
  for (const OpResult& h : head) {
    auto it = base_by_key.find({h.Key(), h.dtype});
    const OpCategory hc = CategoryOf(h);
    const bool present = it != base_by_key.end();
    const std::string base_name =
        present ? std::string(OpCategoryName(CategoryOf(*it->second))) : "absent";
    OpChange change{h.Key(), h.dtype, base_name, std::string(OpCategoryName(hc)),
                    h.skip_source.empty() ? h.first_failure
                                          : absl::StrCat("[", h.skip_source, "] ", h.skip_reason)};
    if (IsStaleSkip(h)) diff.stale_skips.push_back(change);
    if (!present) {
      (Supported(hc) ? diff.newly_supported : diff.other).push_back(std::move(change));
      continue;
    }
    const OpCategory bc = CategoryOf(*it->second);
    if (bc == hc) {
      if (hc == OpCategory::kSkipped) {
        diff.still_excluded.push_back(std::move(change));
      } else {
        ++diff.unchanged;
      }
    } else if (Supported(hc) && !Supported(bc)) {
      diff.newly_supported.push_back(std::move(change));
    } else if (Failing(hc) && Supported(bc)) {
      diff.newly_failing.push_back(std::move(change));
    } else if (hc == OpCategory::kSkipped && Supported(bc)) {
      diff.newly_skipped.push_back(std::move(change));
    } else {
      diff.other.push_back(std::move(change));
    }
  }
  return diff;
}

namespace {

// A titled list of changes (nothing when empty).
std::string ChangeList(const char* title, const std::vector<OpChange>& changes) {
  std::string out = absl::StrCat(title, ": ", changes.size(), "\n");
  for (const OpChange& c : changes) {
    out += absl::StrCat(
        "  ", c.key, " ", c.dtype, ": ", c.base, " -> ", c.head,
        c.detail.empty() ? "" : absl::StrCat("  ", Truncate(SanitizeForTerminal(c.detail), 100)),
        "\n");
  }
  return out;
}

}  // namespace

std::string OpDiffText(const OpDiff& diff, const OpSweepInfo& base, const OpSweepInfo& head) {
  std::string out = absl::StrFormat(
      "ops diff: target %s, mode %s: base %s (torch %s) -> head %s (torch %s)\n", head.target,
      head.mode, base.op_sweep_id, base.torch_version, head.op_sweep_id, head.torch_version);
  out += ChangeList("newly supported", diff.newly_supported);
  out += ChangeList("newly failing", diff.newly_failing);
  out += ChangeList("newly skipped", diff.newly_skipped);
  out += ChangeList("still excluded", diff.still_excluded);
  out += ChangeList("stale skips", diff.stale_skips);
  out += ChangeList("other changes", diff.other);
  out += absl::StrCat("unchanged: ", diff.unchanged, "\n");
  return out;
}

absl::StatusOr<std::vector<OpSweepInfo>> ResolveOpSide(Store& store, const std::string& selector) {
  absl::StatusOr<std::vector<OpSweepInfo>> sweeps = store.ListOpSweeps();
  if (!sweeps.ok()) return sweeps.status();
  if (!selector.starts_with("torch=")) {
    for (const OpSweepInfo& s : *sweeps) {
      if (s.op_sweep_id == selector) return std::vector<OpSweepInfo>{s};
    }
    return absl::NotFoundError(absl::StrCat(store.path().string(), ": no op sweep ",
                                            Truncate(SanitizeForTerminal(selector), 80),
                                            " (give an op sweep id or torch=VERSION)"));
  }
  const std::string version = selector.substr(6);
  std::map<std::pair<std::string, std::string>, OpSweepInfo> latest;  // oldest first: last wins
  for (const OpSweepInfo& s : *sweeps) {
    if (s.torch_version == version && !s.finished_at.empty()) latest[{s.target, s.mode}] = s;
  }
  if (latest.empty()) {
    return absl::NotFoundError(absl::StrCat(store.path().string(),
                                            ": no finished op sweep of torch ",
                                            Truncate(SanitizeForTerminal(version), 80)));
  }
  std::vector<OpSweepInfo> out;
  for (auto& [key, s] : latest) out.push_back(std::move(s));
  return out;
}

absl::StatusOr<OpSidesDiff> DiffOpSides(Store& base_store, const std::string& base,
                                        Store& head_store, const std::string& head) {
  absl::StatusOr<std::vector<OpSweepInfo>> bases = ResolveOpSide(base_store, base);
  if (!bases.ok()) return bases.status();
  absl::StatusOr<std::vector<OpSweepInfo>> heads = ResolveOpSide(head_store, head);
  if (!heads.ok()) return heads.status();
  OpSidesDiff out;
  int pairs = 0;
  for (const OpSweepInfo& h : *heads) {
    for (const OpSweepInfo& b : *bases) {
      if (b.target != h.target || b.mode != h.mode) continue;
      absl::StatusOr<std::vector<OpResult>> br = base_store.OpResults(b.op_sweep_id);
      if (!br.ok()) return br.status();
      absl::StatusOr<std::vector<OpResult>> hr = head_store.OpResults(h.op_sweep_id);
      if (!hr.ok()) return hr.status();
      const OpDiff diff = DiffOps(*br, *hr);
      out.text += OpDiffText(diff, b, h);
      out.regressions += static_cast<int64_t>(diff.newly_failing.size());
      ++pairs;
    }
  }
  if (pairs == 0) return absl::InvalidArgumentError("the two sides share no target and mode");
  out.text += absl::StrCat("regressions (newly failing): ", out.regressions, "\n");
  return out;
}

}  // namespace compatlab
