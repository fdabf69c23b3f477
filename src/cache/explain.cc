#include "cache/explain.h"

#include <algorithm>
#include <optional>
#include <set>

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

// Shown of a graph-level comparison: graphs per entry, differing lines per graph, a value's bytes.
constexpr size_t kShownGraphs = 4;
constexpr size_t kShownLines = 12;
constexpr size_t kShownValueBytes = 160;

// One differing line: "inductor_config[max_autotune]: False here, True in the entry".
std::string DiffLine(const LineDiff& d) {
  auto value = [](const std::string& v) { return TruncateForDisplay(v, kShownValueBytes); };
  const std::string name = TruncateForDisplay(d.name, kShownValueBytes);
  if (d.only_here) {
    return fmt::format("      only here: {}{}\n", name, d.here.empty() ? "" : ": " + value(d.here));
  }
  if (d.only_there) {
    return fmt::format("      only in the entry: {}{}\n", name,
                       d.there.empty() ? "" : ": " + value(d.there));
  }
  return fmt::format("      {}: {} here, {} in the entry\n", name, value(d.here), value(d.there));
}

// A graph's key as shown: its first 12 characters, as an entry's id is shown.
std::string ShortKey(const std::string& key) { return key.substr(0, 12); }

// The entry graph nearest the run's graph `graph` among those not `taken`: the fewest
// differing lines, the first in compile order on a tie. nullopt when none is left.
std::optional<size_t> NearestGraph(const GraphDetail& graph, const GraphDetails& entry,
                                   const std::vector<bool>& taken) {
  std::optional<size_t> best;
  size_t best_count = 0;
  for (size_t j = 0; j < entry.graphs.size(); ++j) {
    if (taken[j]) continue;
    const size_t count = DiffGraphLines(graph, entry.graphs[j]).size();
    if (!best || count < best_count) {
      best = j;
      best_count = count;
    }
  }
  return best;
}

// The run's graph `i` against the entry's graph `j`: its differing lines, at most kShownLines.
std::string GraphPairLines(const GraphDetails& run, size_t i, const GraphDetails& entry, size_t j) {
  const std::vector<LineDiff> diffs = DiffGraphLines(run.graphs[i], entry.graphs[j]);
  std::string out = fmt::format(
      "    graph {} here (key {}) against the entry's graph {} (key {}): {} line{} differ{}\n",
      i + 1, ShortKey(run.graphs[i].key), j + 1, ShortKey(entry.graphs[j].key), diffs.size(),
      diffs.size() == 1 ? "" : "s", diffs.size() == 1 ? "s" : "");
  if (run.graphs[i].cut || entry.graphs[j].cut) {
    out += fmt::format(
        "      (the {} lines were cut: a name missing there is not named)\n",
        run.graphs[i].cut ? (entry.graphs[j].cut ? "run's and the entry's" : "run's") : "entry's");
  }
  if (diffs.empty()) {
    out += "      none among the lines kept: the keys differ in what was cut or left out\n";
  }
  for (size_t k = 0; k < diffs.size() && k < kShownLines; ++k) out += DiffLine(diffs[k]);
  if (diffs.size() > kShownLines) {
    out += fmt::format("      ... and {} more\n", diffs.size() - kShownLines);
  }
  return out;
}

// The run's graphs against the entry's: those whose key the entry has counted as the same,
// each other one paired with the nearest entry graph left and its lines compared.
std::string CompareGraphs(const GraphDetails& run, const GraphDetails& entry) {
  std::set<std::string> entry_keys;
  for (const GraphDetail& g : entry.graphs) entry_keys.insert(g.key);
  std::vector<bool> taken(entry.graphs.size(), false);
  std::set<std::string> run_keys;
  for (const GraphDetail& g : run.graphs) run_keys.insert(g.key);
  for (size_t j = 0; j < entry.graphs.size(); ++j)
    taken[j] = run_keys.contains(entry.graphs[j].key);
  std::string out = fmt::format(
      "    inductor's graph details (FxGraphHashDetails): {} graph{} here, {} in the entry\n",
      run.graphs.size(), run.graphs.size() == 1 ? "" : "s", entry.graphs.size());
  size_t same = 0, shown = 0;
  for (size_t i = 0; i < run.graphs.size(); ++i) {
    if (entry_keys.contains(run.graphs[i].key)) {
      ++same;
      continue;
    }
    const std::optional<size_t> j = NearestGraph(run.graphs[i], entry, taken);
    if (++shown > kShownGraphs) continue;
    if (!j) {
      out += fmt::format("    graph {} here (key {}): the entry has no other graph to compare\n",
                         i + 1, ShortKey(run.graphs[i].key));
      continue;
    }
    taken[*j] = true;
    out += GraphPairLines(run, i, entry, *j);
  }
  if (shown > kShownGraphs)
    out += fmt::format("    ... and {} more graphs\n", shown - kShownGraphs);
  if (same > 0) {
    out += fmt::format("    {} graph{} here with a key the entry has (the same graph{})\n", same,
                       same == 1 ? "" : "s", same == 1 ? "" : "s");
  }
  if (!run.truncated.empty()) {
    out +=
        fmt::format("    the run's details were cut: {}\n", TruncateForDisplay(run.truncated, 300));
  }
  if (!entry.truncated.empty()) {
    out += fmt::format("    the entry's details were cut: {}\n",
                       TruncateForDisplay(entry.truncated, 300));
  }
  return out;
}

// The run's own graph details, or why there are none to compare.
absl::StatusOr<GraphDetails> RunGraphDetails(const RunRecord& run) {
  if (run.result.fx_graph_details.empty()) {
    return absl::NotFoundError(
        "none in the run (stored before schema 30, or its compile captured none: a backend "
        "other than inductor)");
  }
  absl::StatusOr<GraphDetails> details = ParseGraphDetails(run.result.fx_graph_details);
  if (!details.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("the run's are malformed ({})",
                    TruncateForDisplay(std::string(details.status().message()), 200)));
  }
  return details;
}

// The graph-level comparison of the run with entry `e`, or why there is none.
std::string GraphSection(const GraphDetails& run, const Entry& e, const DetailsReader& read) {
  absl::StatusOr<GraphDetails> entry = read(e);
  if (!entry.ok()) {
    return fmt::format("    inductor's graph details: none to compare in the entry ({})\n",
                       TruncateForDisplay(std::string(entry.status().message()), 300));
  }
  return CompareGraphs(run, *entry);
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
                                       const std::string& where, const DetailsReader& read) {
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
  // A run that missed graphs: inductor's own key details against each entry's.
  std::optional<GraphDetails> graphs;
  if (run.result.fx_graph_cache_misses.value_or(0) > 0) {
    absl::StatusOr<GraphDetails> details = RunGraphDetails(run);
    if (details.ok()) {
      graphs = *std::move(details);
    } else {
      out +=
          fmt::format("  inductor's graph details: {}\n", std::string(details.status().message()));
    }
  }
  out += fmt::format("nearest entries in {} ({} of {}):\n", where, nearest.size(), entries.size());
  for (const Entry* e : nearest) {
    const std::vector<std::string> parts = DifferingParts(*key, e->key);
    if (parts.empty()) {
      out += fmt::format(
          "  entry {}: this run's very key; a miss with it loaded is graph-level (the graph "
          "dynamo captured differs from the one compiled there)\n",
          e->id.substr(0, 12));
    } else {
      out += fmt::format("  entry {}: {} part{} differ{}\n", e->id.substr(0, 12), parts.size(),
                         parts.size() == 1 ? "" : "s", parts.size() == 1 ? "s" : "");
      for (const std::string& part : parts) out += PartLine(part, *key, e->key);
    }
    if (graphs) out += GraphSection(*graphs, *e, read);
  }
  return out;
}

}  // namespace compatlab::cache
