// Suites: data files under suites/ that name a test matrix. Format in
// doc/suites.md. Parsing is strict: an unknown key, a wrong type or an empty
// list is an error naming the file and the key.
#ifndef COMPATLAB_PLAN_SUITE_H_
#define COMPATLAB_PLAN_SUITE_H_

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/records.h"

namespace compatlab {

// A test of the harness itself (no model): a `noop` or a fault kind.
struct HarnessTest {
  std::string kind;
  std::optional<double> timeout_s;
  int64_t repeat = 1;
  std::map<std::string, std::string> kind_params;
  int64_t ranks = 1;  // processes of one group (doc/ranks.md)
};

struct Suite {
  std::string name;
  std::string description;
  bool all_models = false;          // "models": "all" (every registered type)
  std::vector<std::string> models;  // model types
  // Code models the suite ships (doc/suites.md, "Code models"): "FILE.py:FUNCTION", FILE
  // relative to the suite file's directory and inside it.
  std::vector<std::string> code_models;
  std::filesystem::path dir;  // the suite file's directory (set by LoadSuite)
  bool shipped = false;       // loaded by name from the suites directory (LoadSuite)
  std::vector<std::string> targets = {"cpu"};
  std::vector<std::string> modes = {std::string(kModeEager)};
  std::vector<std::string> kinds = {"forward"};
  std::vector<std::string> dtypes = {"float32"};
  std::vector<int64_t> batch_sizes = {1};
  std::vector<int64_t> seq_lens = {32};
  std::vector<int64_t> ranks = {1};  // processes of one group per test (doc/ranks.md)
  // Dynamic shapes of compiled forward tests: static, true, mark (plan/axes.h, DynamicAxis).
  std::vector<std::string> dynamic = {"static"};
  double timeout_s = 300;
  std::vector<HarnessTest> tests;
};

// Parses suite JSON text; `origin` names the file in error messages.
absl::StatusOr<Suite> ParseSuite(const std::string& text, const std::string& origin);

// Loads `name_or_path`: a path to a .json file, or the name of a suite in
// `suites_dir` (`<suites_dir>/<name>.json`, then `shipped`); sets the suite's `dir`.
absl::StatusOr<Suite> LoadSuite(const std::string& name_or_path,
                                const std::filesystem::path& suites_dir);

// Names of the suites in `suites_dir`, sorted.
std::vector<std::string> ListSuiteNames(const std::filesystem::path& suites_dir);

// Kinds a test may have. Model kinds need a model; harness kinds do not.
bool IsModelKind(const std::string& kind);
bool IsHarnessKind(const std::string& kind);

}  // namespace compatlab

#endif  // COMPATLAB_PLAN_SUITE_H_
