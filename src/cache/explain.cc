#include "cache/explain.h"

#include <algorithm>

#include "core/limits.h"
#include "fmt/format.h"

namespace compatlab::cache {
namespace {

// One differing part as a line: "torch: 2.13.0+cpu here, 2.14.1 in the entry".
std::string PartLine(const std::string& part, const KeyParts& here, const KeyParts& there) {
  auto value = [&](const KeyParts& key) {
    auto it = key.find(part);
    return it == key.end() ? std::string("(none)") : TruncateForDisplay(it->second, 300);
  };
  return fmt::format("    {}: {} here, {} in the entry\n", part, value(here), value(there));
}

std::string Count(const std::optional<int64_t>& n) { return n ? std::to_string(*n) : "-"; }

std::string RunLine(const RunRecord& run) {
  const RunResult& r = run.result;
  std::string line = fmt::format("run {} ({} {} {}, test {}): prepare_state {}, prepare_s {}",
                                 run.run_id, run.spec.model_id, run.spec.kind, run.spec.mode,
                                 run.spec.TestId(), r.prepare_state.empty() ? "-" : r.prepare_state,
                                 r.prepare_s ? fmt::format("{:.2f}", *r.prepare_s) : "-");
  if (!r.cache_bundle.empty()) line += fmt::format(", cache_bundle {}", r.cache_bundle);
  line += fmt::format(
      "\n  FX graph cache {} hits, {} misses; AOTAutograd cache {} hits, {} misses; autotune "
      "cache {} hits, {} misses\n",
      Count(r.fx_graph_cache_hits), Count(r.fx_graph_cache_misses),
      Count(r.aot_autograd_cache_hits), Count(r.aot_autograd_cache_misses),
      Count(r.autotune_cache_hits), Count(r.autotune_cache_misses));
  return line;
}

}  // namespace

std::vector<const Entry*> NearestEntries(const KeyParts& key, const std::vector<Entry>& entries,
                                         size_t limit) {
  struct Ranked {
    bool other_test;
    size_t differing;
    const Entry* entry;
  };
  auto test_of = [](const KeyParts& k) {
    auto it = k.find("test_id");
    return it == k.end() ? std::string() : it->second;
  };
  std::vector<Ranked> ranked;
  for (const Entry& e : entries) {
    ranked.push_back({test_of(e.key) != test_of(key), DifferingParts(key, e.key).size(), &e});
  }
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (a.other_test != b.other_test) return !a.other_test;
    if (a.differing != b.differing) return a.differing < b.differing;
    return a.entry->last_used > b.entry->last_used;
  });
  std::vector<const Entry*> out;
  for (size_t i = 0; i < ranked.size() && i < limit; ++i) out.push_back(ranked[i].entry);
  return out;
}

absl::StatusOr<std::string> ExplainRun(const RunRecord& run, const std::vector<Entry>& entries,
                                       const std::string& where) {
  if (!run.spec.IsCompiled()) {
    return absl::InvalidArgumentError(
        fmt::format("run {} was not compiled (mode {})", run.run_id, run.spec.mode));
  }
  absl::StatusOr<KeyParts> key = ParseKey(run.result.compile_key);
  if (!key.ok()) {
    return absl::InvalidArgumentError(fmt::format(
        "run {} holds no compile key (stored before schema 27, or it failed before compiling)",
        run.run_id));
  }
  std::string out = RunLine(run);
  const std::vector<const Entry*> nearest = NearestEntries(*key, entries, kExplainedEntries);
  if (nearest.empty()) {
    return out + fmt::format("no entry in {}: nothing to compare with\n", where);
  }
  out += fmt::format("nearest entries in {} ({} of {}):\n", where, nearest.size(), entries.size());
  for (const Entry* e : nearest) {
    const std::vector<std::string> parts = DifferingParts(*key, e->key);
    if (parts.empty()) {
      out += fmt::format(
          "  entry {}: this run's very key; a miss with it loaded is graph-level (the graph "
          "dynamo captured differs from the one compiled there)\n",
          e->id.substr(0, 12));
      continue;
    }
    out += fmt::format("  entry {}: {} part{} differ{}\n", e->id.substr(0, 12), parts.size(),
                       parts.size() == 1 ? "" : "s", parts.size() == 1 ? "s" : "");
    for (const std::string& part : parts) out += PartLine(part, *key, e->key);
  }
  return out;
}

}  // namespace compatlab::cache
