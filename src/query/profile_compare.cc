#include "query/profile_compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "fmt/format.h"

namespace compatlab {
namespace {

using OpKey = std::pair<std::string, std::string>;  // name, shapes

// The top ops of a profile_top_ops text: (name, shapes) -> self seconds per call; empty for
// text that is not an array of objects with a string name and a finite self_s.
std::map<OpKey, double> TopOps(const std::string& text) {
  std::map<OpKey, double> ops;
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_array()) return ops;
  for (const nlohmann::json& op : parsed) {
    if (!op.is_object() || !op.contains("name") || !op["name"].is_string() ||
        !op.contains("self_s") || !op["self_s"].is_number()) {
      continue;
    }
    const double self_s = op["self_s"].get<double>();
    if (!std::isfinite(self_s)) continue;
    const std::string shapes =
        op.contains("shapes") && op["shapes"].is_string() ? op["shapes"].get<std::string>() : "";
    ops[{op["name"].get<std::string>(), shapes}] += self_s;
  }
  return ops;
}

// "1.23 ms" (or "-" for a missing figure).
std::string Millis(std::optional<double> seconds) {
  return seconds ? fmt::format("{:.3f} ms", *seconds * 1e3) : "-";
}

std::string SignedMillis(double seconds) { return fmt::format("{:+.3f} ms", seconds * 1e3); }

nlohmann::ordered_json ProfileOptionalJson(std::optional<double> v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

}  // namespace

double ProfileDelta::Delta() const {
  if (base_s && head_s) return *head_s - *base_s;
  if (head_s) return *head_s;
  if (base_s) return -*base_s;
  return 0.0;
}

bool HasProfile(const RunResult& result) { return result.profile_calls.has_value(); }

ProfileComparison CompareProfiles(const RunResult& base, const RunResult& head, size_t max_ops) {
  ProfileComparison out;
  const std::pair<const char*, std::optional<double> RunResult::*> kCategories[] = {
      {"compute", &RunResult::profile_compute_s},
      {"copy", &RunResult::profile_copy_s},
      {"fallback", &RunResult::profile_fallback_s},
      {"framework", &RunResult::profile_framework_s},
      {"idle", &RunResult::profile_idle_s}};
  for (const auto& [name, member] : kCategories) {
    out.categories.push_back({name, "", base.*member, head.*member});
  }
  std::map<OpKey, ProfileDelta> aligned;
  for (const auto& [key, s] : TopOps(base.profile_top_ops)) {
    aligned[key] = {key.first, key.second, s, std::nullopt};
  }
  for (const auto& [key, s] : TopOps(head.profile_top_ops)) {
    auto [it, inserted] = aligned.try_emplace(key, ProfileDelta{key.first, key.second, {}, s});
    if (!inserted) it->second.head_s = s;
  }
  for (auto& [key, delta] : aligned) out.ops.push_back(std::move(delta));
  std::stable_sort(out.ops.begin(), out.ops.end(),
                   [](const ProfileDelta& a, const ProfileDelta& b) {
                     return std::abs(a.Delta()) > std::abs(b.Delta());
                   });
  if (out.ops.size() > max_ops) out.ops.resize(max_ops);
  return out;
}

std::string FormatProfileComparison(const ProfileComparison& comparison) {
  std::string out = "    time per call     base        head        change\n";
  for (const ProfileDelta& c : comparison.categories) {
    out += fmt::format("    {:<16} {:>11} {:>11} {:>12}\n", c.name, Millis(c.base_s),
                       Millis(c.head_s), SignedMillis(c.Delta()));
  }
  out += "    ops whose self time changed most (\"-\": outside that side's top ops):\n";
  for (const ProfileDelta& op : comparison.ops) {
    out += fmt::format("    {:>11} {:>11} {:>12}  {} {}\n", Millis(op.base_s), Millis(op.head_s),
                       SignedMillis(op.Delta()), op.name, op.shapes);
  }
  return out;
}

nlohmann::ordered_json ProfileComparisonJson(const ProfileComparison& comparison) {
  auto rows = [](const std::vector<ProfileDelta>& deltas, bool ops) {
    nlohmann::ordered_json array = nlohmann::ordered_json::array();
    for (const ProfileDelta& d : deltas) {
      nlohmann::ordered_json row = {{"name", d.name}};
      if (ops) row["shapes"] = d.shapes;
      row["base_s"] = ProfileOptionalJson(d.base_s);
      row["head_s"] = ProfileOptionalJson(d.head_s);
      row["delta_s"] = d.Delta();
      array.push_back(std::move(row));
    }
    return array;
  };
  return {{"categories", rows(comparison.categories, false)}, {"ops", rows(comparison.ops, true)}};
}

}  // namespace compatlab
