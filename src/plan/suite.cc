#include "plan/suite.h"

#include <algorithm>
#include <set>
#include <span>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/limits.h"
#include "nlohmann/json.hpp"
#include "plan/models.h"
#include "plan/strict_json.h"
#include "util/fs.h"

namespace compatlab {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::set<std::string> kModelKinds = {"forward", "generate", "train", "load"};
const std::set<std::string> kHarnessKinds = {"noop", "hang",  "hang-hard", "segfault",   "abort",
                                             "oom",  "raise", "flood",     "kill-zygote"};

class Parser;

// One key of a suite object (a suite, or one of its harness tests): its name and
// how its value fills the object's T.
template <typename T>
struct SuiteKey {
  std::string_view name;
  absl::Status (*parse)(const Parser& p, const std::string& key, const json& value, T* out);
};

// Reads a suite's values, each error naming the file and the key.
class Parser {
 public:
  explicit Parser(std::string origin) : origin_(std::move(origin)) {}

  // InvalidArgument "<origin>: '<key>' <what>".
  absl::Status Error(const std::string& key, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(origin_, ": '", key, "' ", what));
  }

  // A non-empty list of non-empty strings into `out`.
  absl::Status Strings(const json& j, const std::string& key, std::vector<std::string>* out) const {
    if (!j.is_array() || j.empty()) return Error(key, "must be a non-empty list of strings");
    out->clear();
    for (const json& v : j) {
      if (!v.is_string() || v.get<std::string>().empty()) {
        return Error(key, "must be a non-empty list of strings");
      }
      out->push_back(v.get<std::string>());
    }
    return absl::OkStatus();
  }

  // A non-empty list of positive integers into `out`.
  absl::Status Ints(const json& j, const std::string& key, std::vector<int64_t>* out) const {
    if (!j.is_array() || j.empty()) return Error(key, "must be a non-empty list of integers");
    out->clear();
    for (const json& v : j) {
      if (!v.is_number_integer() || v.get<int64_t>() < 1) {
        return Error(key, "must be a non-empty list of positive integers");
      }
      out->push_back(v.get<int64_t>());
    }
    return absl::OkStatus();
  }

  // A positive number of seconds, at most a week, into `out`.
  absl::Status Seconds(const json& j, const std::string& key, double* out) const {
    if (!j.is_number() || !CheckDuration(j.get<double>(), "", false).ok()) {
      return Error(key, "must be a positive number of seconds, at most a week");
    }
    *out = j.get<double>();
    return absl::OkStatus();
  }

  // Each member of `object`, in its key order, through the key of `keys` named
  // like it; `prefix` + key names it in errors, `unknown` is what an unknown one is.
  template <typename T>
  absl::Status Keys(const json& object, std::span<const SuiteKey<T>> keys,
                    const std::string& prefix, const std::string& unknown, T* out) const {
    for (const auto& [name, value] : object.items()) {
      const std::string key = prefix + name;
      auto it = std::find_if(keys.begin(), keys.end(),
                             [&name](const SuiteKey<T>& k) { return k.name == name; });
      if (it == keys.end()) return Error(key, unknown);
      if (absl::Status s = it->parse(*this, key, value, out); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  std::string origin_;
};

// A harness test's keys (doc/suites.md, "tests").
const SuiteKey<HarnessTest> kHarnessTestKeys[] = {
    {"kind",
     [](const Parser& p, const std::string& key, const json& v, HarnessTest* t) {
       if (!v.is_string() || !IsHarnessKind(v.get<std::string>())) {
         return p.Error(key, absl::StrCat("must be a harness kind (",
                                          absl::StrJoin(kHarnessKinds, ", "), ")"));
       }
       t->kind = v.get<std::string>();
       return absl::OkStatus();
     }},
    {"timeout_s",
     [](const Parser& p, const std::string& key, const json& v, HarnessTest* t) {
       double seconds = 0;
       if (absl::Status s = p.Seconds(v, key, &seconds); !s.ok()) return s;
       t->timeout_s = seconds;
       return absl::OkStatus();
     }},
    {"repeat",
     [](const Parser& p, const std::string& key, const json& v, HarnessTest* t) {
       if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 1000000) {
         return p.Error(key, "must be an integer from 1 to 1000000");
       }
       t->repeat = v.get<int64_t>();
       return absl::OkStatus();
     }},
    {"kind_params",
     [](const Parser& p, const std::string& key, const json& v, HarnessTest* t) {
       if (!v.is_object()) return p.Error(key, "must be an object of strings");
       for (const auto& [name, param] : v.items()) {
         if (!param.is_string()) return p.Error(key, "must be an object of strings");
         t->kind_params[name] = param.get<std::string>();
       }
       return absl::OkStatus();
     }},
    {"ranks",
     [](const Parser& p, const std::string& key, const json& v, HarnessTest* t) {
       if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > kMaxRanks) {
         return p.Error(key, absl::StrCat("must be an integer from 1 to ", kMaxRanks));
       }
       t->ranks = v.get<int64_t>();
       return absl::OkStatus();
     }},
};

// Harness test `index` of a suite's "tests": an object of kHarnessTestKeys with a kind.
absl::Status ParseHarnessTest(const Parser& p, const json& j, size_t index, HarnessTest* out) {
  const std::string where = absl::StrCat("tests[", index, "]");
  if (!j.is_object()) return p.Error(where, "must be an object");
  absl::Status s =
      p.Keys<HarnessTest>(j, kHarnessTestKeys, where + ".",
                          "is not a known key (kind, timeout_s, repeat, kind_params, ranks)", out);
  if (s.ok() && out->kind.empty()) return p.Error(where, "needs a 'kind'");
  return s;
}

// A suite's list of strings at `key`, into its member `Member`.
template <std::vector<std::string> Suite::*Member>
absl::Status SuiteStrings(const Parser& p, const std::string& key, const json& v, Suite* suite) {
  return p.Strings(v, key, &(suite->*Member));
}

// A suite's list of positive integers at `key`, into its member `Member`.
template <std::vector<int64_t> Suite::*Member>
absl::Status SuiteInts(const Parser& p, const std::string& key, const json& v, Suite* suite) {
  return p.Ints(v, key, &(suite->*Member));
}

// "kinds": model kinds only.
absl::Status SuiteKinds(const Parser& p, const std::string& key, const json& v, Suite* suite) {
  if (absl::Status s = p.Strings(v, key, &suite->kinds); !s.ok()) return s;
  for (const std::string& k : suite->kinds) {
    if (!IsModelKind(k)) {
      return p.Error(
          key, absl::StrCat("has '", k, "', not a model kind (forward, generate, train, load)"));
    }
  }
  return absl::OkStatus();
}

// "code_models": "FILE.py:FUNCTION" entries, FILE a relative path without ".." (it stays
// inside the suite file's directory).
absl::Status SuiteCodeModels(const Parser& p, const std::string& key, const json& v, Suite* suite) {
  if (absl::Status s = p.Strings(v, key, &suite->code_models); !s.ok()) return s;
  for (const std::string& spec : suite->code_models) {
    const size_t colon = spec.rfind(':');
    const fs::path file(colon == std::string::npos ? spec : spec.substr(0, colon));
    const bool inside =
        file.is_relative() &&
        std::none_of(file.begin(), file.end(), [](const fs::path& part) { return part == ".."; });
    if (!SplitModelCode(spec).ok() || !inside) {
      return p.Error(key, absl::StrCat("has '", spec,
                                       "', not FILE.py:FUNCTION with FILE a relative path inside "
                                       "the suite's directory"));
    }
  }
  return absl::OkStatus();
}

// "tests": a list of harness tests; an entry that fails is kept, as before, then reported.
absl::Status SuiteTests(const Parser& p, const std::string& key, const json& v, Suite* suite) {
  if (!v.is_array()) return p.Error(key, "must be a list of objects");
  for (size_t i = 0; i < v.size(); ++i) {
    HarnessTest t;
    absl::Status s = ParseHarnessTest(p, v[i], i, &t);
    suite->tests.push_back(std::move(t));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// A suite's keys (doc/suites.md).
const SuiteKey<Suite> kSuiteKeys[] = {
    {"name",
     [](const Parser& p, const std::string& key, const json& v, Suite* suite) {
       if (!v.is_string() || v.get<std::string>().empty()) {
         return p.Error(key, "must be a non-empty string");
       }
       suite->name = v.get<std::string>();
       return absl::OkStatus();
     }},
    {"description",
     [](const Parser& p, const std::string& key, const json& v, Suite* suite) {
       if (!v.is_string()) return p.Error(key, "must be a string");
       suite->description = v.get<std::string>();
       return absl::OkStatus();
     }},
    {"models",
     [](const Parser& p, const std::string& key, const json& v, Suite* suite) {
       if (v.is_string() && v.get<std::string>() == "all") {
         suite->all_models = true;
         return absl::OkStatus();
       }
       return p.Strings(v, key, &suite->models);
     }},
    {"code_models", SuiteCodeModels},
    {"targets", SuiteStrings<&Suite::targets>},
    {"modes", SuiteStrings<&Suite::modes>},
    {"kinds", SuiteKinds},
    {"dtypes", SuiteStrings<&Suite::dtypes>},
    {"batch_sizes", SuiteInts<&Suite::batch_sizes>},
    {"seq_lens", SuiteInts<&Suite::seq_lens>},
    {"ranks", SuiteInts<&Suite::ranks>},
    {"dynamic", SuiteStrings<&Suite::dynamic>},
    {"timeout_s", [](const Parser& p, const std::string& key, const json& v,
                     Suite* suite) { return p.Seconds(v, key, &suite->timeout_s); }},
    {"tests", SuiteTests},
};

}  // namespace

bool IsModelKind(const std::string& kind) { return kModelKinds.count(kind) > 0; }
bool IsHarnessKind(const std::string& kind) { return kHarnessKinds.count(kind) > 0; }

absl::StatusOr<Suite> ParseSuite(const std::string& text, const std::string& origin) {
  absl::StatusOr<json> parsed = ParseStrictJson(text, origin);
  if (!parsed.ok()) return parsed.status();
  json j = *std::move(parsed);
  if (!j.is_object())
    return absl::InvalidArgumentError(absl::StrCat(origin, ": must be an object"));
  Parser p(origin);
  Suite suite;
  absl::Status s =
      p.Keys<Suite>(j, kSuiteKeys, "", "is not a known key (see doc/suites.md)", &suite);
  if (!s.ok()) return s;
  if (suite.name.empty())
    return absl::InvalidArgumentError(absl::StrCat(origin, ": needs a 'name'"));
  if (!suite.all_models && suite.models.empty() && suite.code_models.empty() &&
      suite.tests.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": names neither 'models', 'code_models' nor 'tests'"));
  }
  return suite;
}

absl::StatusOr<Suite> LoadSuite(const std::string& name_or_path, const fs::path& suites_dir) {
  fs::path path;
  const bool by_path =
      name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
  if (by_path) {
    path = name_or_path;
  } else {
    path = suites_dir / (name_or_path + ".json");
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      std::vector<std::string> names = ListSuiteNames(suites_dir);
      return absl::NotFoundError(absl::StrCat("unknown suite '", name_or_path,
                                              "' (known: ", absl::StrJoin(names, ", "), ")"));
    }
  }
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::NotFoundError(absl::StrCat("cannot read suite file ", path.string()));
  }
  absl::StatusOr<Suite> suite = ParseSuite(*text, path.string());
  if (!suite.ok()) return suite;
  std::error_code ec;
  suite->dir = fs::absolute(path, ec).parent_path().lexically_normal();
  suite->shipped = !by_path;
  return suite;
}

std::vector<std::string> ListSuiteNames(const fs::path& suites_dir) {
  return JsonFileStems(suites_dir);
}

}  // namespace compatlab
