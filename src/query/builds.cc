#include "query/builds.h"

#include <set>
#include <string_view>

#include "fmt/format.h"

namespace compatlab {
namespace {

// A part of the build and where a run records it.
struct BuildPart {
  std::string_view name;
  const std::string& (*of)(const RunRecord&);
};

constexpr BuildPart kBuildParts[] = {
    {"torch_build", [](const RunRecord& r) -> const std::string& { return r.result.torch_build; }},
    {"blas", [](const RunRecord& r) -> const std::string& { return r.result.blas; }},
    {"openmp", [](const RunRecord& r) -> const std::string& { return r.result.openmp; }},
    {"cxx_compiler",
     [](const RunRecord& r) -> const std::string& { return r.result.cxx_compiler; }},
    {"cpu_model", [](const RunRecord& r) -> const std::string& { return r.cpu_model; }},
};

// The distinct non-empty values of `part` over `runs`, sorted.
std::vector<std::string> ValuesOf(const BuildPart& part, const std::vector<RunRecord>& runs) {
  std::set<std::string> values;
  for (const RunRecord& r : runs) {
    if (const std::string& v = part.of(r); !v.empty()) values.insert(v);
  }
  return {values.begin(), values.end()};
}

// The distinct torch versions of `runs`, ", "-joined.
std::string TorchVersions(const std::vector<RunRecord>& runs) {
  std::set<std::string> versions;
  for (const RunRecord& r : runs) versions.insert(r.result.torch_version);
  std::string out;
  for (const std::string& v : versions) out += (out.empty() ? "" : ", ") + v;
  return out;
}

std::string Joined(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ", ") + v;
  return out;
}

}  // namespace

std::vector<BuildDifference> BuildDifferences(const std::vector<RunRecord>& base,
                                              const std::vector<RunRecord>& head) {
  std::vector<BuildDifference> out;
  for (const BuildPart& part : kBuildParts) {
    std::vector<std::string> b = ValuesOf(part, base);
    std::vector<std::string> h = ValuesOf(part, head);
    if (b.empty() || h.empty() || b == h) continue;
    out.push_back({std::string(part.name), std::move(b), std::move(h)});
  }
  return out;
}

std::string BuildsDifferLine(const std::vector<RunRecord>& base,
                             const std::vector<RunRecord>& head) {
  const std::vector<BuildDifference> differences = BuildDifferences(base, head);
  if (differences.empty()) return "";
  std::string line =
      fmt::format("builds differ: torch {} vs {}", TorchVersions(base), TorchVersions(head));
  for (const BuildDifference& d : differences) {
    line += fmt::format("; {} {} vs {}", d.part, Joined(d.base), Joined(d.head));
  }
  return line + "; timings compare builds, not only releases\n";
}

}  // namespace compatlab
