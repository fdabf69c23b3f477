// Inductor's own cache-key details of a compile (doc/compile-cache.md, "Why a miss"): per FX
// graph its cache key and `FxGraphHashDetails`' debug lines ("[HASH] NAME: VALUE"), as the
// test child captured them (probe/compatlab_probe/stacks/graph_details.py). An entry keeps
// them as fx_graph_details.json, a run in its fx_graph_details field (a compacter form);
// both are data from outside until ParseGraphDetails has checked them.
#ifndef COMPATLAB_CACHE_GRAPH_DETAILS_H_
#define COMPATLAB_CACHE_GRAPH_DETAILS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace compatlab::cache {

inline constexpr char kGraphDetailsFile[] = "fx_graph_details.json";
inline constexpr int kGraphDetailsFormat = 1;
// Bounds on graph details (doc/limits.md, "Compile stores"); the child keeps within them.
inline constexpr int64_t kMaxGraphDetailsBytes = int64_t{1} << 20;
inline constexpr size_t kMaxDetailGraphs = 32;
inline constexpr size_t kMaxDetailLines = 1000;
inline constexpr size_t kMaxDetailLineBytes = 4096;
inline constexpr size_t kMaxDetailKeyBytes = 200;

struct GraphDetail {
  std::string key;                 // inductor's FX graph cache key
  std::vector<std::string> lines;  // "[HASH] NAME: VALUE", a long VALUE cut by the child
  bool cut = false;                // lines past a bound were left out (GraphDetails::truncated)
};

struct GraphDetails {
  std::vector<GraphDetail> graphs;  // in the order they were compiled
  std::string truncated;            // what the child left out, in words; "" when nothing
};

// The graph details of `text`: a format 1 JSON object {graphs: [{key, lines, cut}],
// truncated} (cut and truncated optional), every bound above checked. InvalidArgument naming what
// is wrong otherwise.
absl::StatusOr<GraphDetails> ParseGraphDetails(std::string_view text);

// One debug line taken apart: "[HASH] NAME: VALUE". A line of another shape is its own
// name and hash, with no value.
struct DetailLine {
  std::string_view hash;
  std::string_view name;
  std::string_view value;
};
DetailLine SplitDetailLine(std::string_view line);

// How one graph's lines differ from another's, by name: a name whose hash differs (its
// value differs, even where both values were cut), and the names only one side has (but
// not those missing from a side whose lines were cut: they may be among those left out).
struct LineDiff {
  std::string name;
  std::string here;   // the value here; "" when only the other side has it
  std::string there;  // the value there; "" when only this side has it
  bool only_here = false;
  bool only_there = false;
};
std::vector<LineDiff> DiffGraphLines(const GraphDetail& here, const GraphDetail& there);

}  // namespace compatlab::cache

#endif  // COMPATLAB_CACHE_GRAPH_DETAILS_H_
