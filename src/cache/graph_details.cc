#include "cache/graph_details.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace compatlab::cache {
namespace {
using nlohmann::json;

absl::Status Malformed(const std::string& why) { return absl::InvalidArgumentError(why); }

// One graph {key, lines} within the bounds.
absl::StatusOr<GraphDetail> ParseGraph(const json& item) {
  if (!item.is_object() || !item.contains("key") || !item["key"].is_string() ||
      !item.contains("lines") || !item["lines"].is_array()) {
    return Malformed("a graph without key and lines");
  }
  GraphDetail graph{item["key"].get<std::string>(), {}};
  if (item.contains("cut")) {
    if (!item["cut"].is_boolean()) return Malformed("a graph's cut is not true or false");
    graph.cut = item["cut"].get<bool>();
  }
  if (graph.key.size() > kMaxDetailKeyBytes) return Malformed("a graph's key is too long");
  if (item["lines"].size() > kMaxDetailLines) {
    return Malformed(absl::StrCat("a graph has more than ", kMaxDetailLines, " lines"));
  }
  for (const json& line : item["lines"]) {
    if (!line.is_string()) return Malformed("a line is not a string");
    if (line.get_ref<const std::string&>().size() > kMaxDetailLineBytes) {
      return Malformed(absl::StrCat("a line is longer than ", kMaxDetailLineBytes, " bytes"));
    }
    graph.lines.push_back(line.get<std::string>());
  }
  return graph;
}

// Each line of `graph` by name, in order; a repeated name gets " #2", " #3", ...
std::vector<std::pair<std::string, DetailLine>> Named(const GraphDetail& graph) {
  std::vector<std::pair<std::string, DetailLine>> out;
  std::map<std::string, int> seen;
  for (const std::string& line : graph.lines) {
    const DetailLine parts = SplitDetailLine(line);
    std::string name(parts.name);
    if (const int n = ++seen[name]; n > 1) absl::StrAppend(&name, " #", n);
    out.emplace_back(std::move(name), parts);
  }
  return out;
}

}  // namespace

absl::StatusOr<GraphDetails> ParseGraphDetails(std::string_view text) {
  if (static_cast<int64_t>(text.size()) > kMaxGraphDetailsBytes) {
    return Malformed(absl::StrCat("larger than ", kMaxGraphDetailsBytes, " bytes"));
  }
  const json d = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (d.is_discarded()) return Malformed("not JSON");
  if (!d.is_object() || !d.contains("format") || d["format"] != kGraphDetailsFormat) {
    return Malformed(absl::StrCat("not a format ", kGraphDetailsFormat, " object"));
  }
  if (!d.contains("graphs") || !d["graphs"].is_array() || d["graphs"].size() > kMaxDetailGraphs) {
    return Malformed(absl::StrCat("graphs must be a list of at most ", kMaxDetailGraphs));
  }
  GraphDetails details;
  if (d.contains("truncated")) {
    if (!d["truncated"].is_string() || d["truncated"].get_ref<const std::string&>().size() > 1000) {
      return Malformed("truncated is not a short string");
    }
    details.truncated = d["truncated"].get<std::string>();
  }
  std::set<std::string> keys;
  for (const json& item : d["graphs"]) {
    absl::StatusOr<GraphDetail> graph = ParseGraph(item);
    if (!graph.ok()) return graph.status();
    if (!keys.insert(graph->key).second) return Malformed("a graph's key is listed twice");
    details.graphs.push_back(*std::move(graph));
  }
  return details;
}

DetailLine SplitDetailLine(std::string_view line) {
  const size_t close = line.find("] ");
  const size_t colon = close == std::string_view::npos ? close : line.find(": ", close + 2);
  if (line.empty() || line[0] != '[' || colon == std::string_view::npos) {
    return {line, line, {}};
  }
  return {line.substr(1, close - 1), line.substr(close + 2, colon - close - 2),
          line.substr(colon + 2)};
}

std::vector<LineDiff> DiffGraphLines(const GraphDetail& here, const GraphDetail& there) {
  const auto mine = Named(here);
  const auto theirs = Named(there);
  std::map<std::string_view, const DetailLine*> by_name;
  for (const auto& [name, line] : theirs) by_name[name] = &line;
  std::vector<LineDiff> out;
  std::set<std::string_view> named_here;
  for (const auto& [name, line] : mine) {
    named_here.insert(name);
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      if (!there.cut) out.push_back({name, std::string(line.value), "", /*only_here=*/true, false});
    } else if (it->second->hash != line.hash) {
      out.push_back({name, std::string(line.value), std::string(it->second->value)});
    }
  }
  for (const auto& [name, line] : theirs) {
    if (!here.cut && !named_here.contains(name)) {
      out.push_back({name, "", std::string(line.value), false, /*only_there=*/true});
    }
  }
  return out;
}

}  // namespace compatlab::cache
