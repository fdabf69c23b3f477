#include "plan/suite.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/limits.h"
#include "nlohmann/json.hpp"
#include "plan/strict_json.h"
#include "util/fs.h"

namespace compatlab {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::set<std::string> kModelKinds = {"forward", "generate", "train", "load"};
const std::set<std::string> kHarnessKinds = {"noop", "hang",  "hang-hard", "segfault",   "abort",
                                             "oom",  "raise", "flood",     "kill-zygote"};

class Parser {
 public:
  explicit Parser(std::string origin) : origin_(std::move(origin)) {}

  absl::Status Error(const std::string& key, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(origin_, ": '", key, "' ", what));
  }

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

  absl::Status Seconds(const json& j, const std::string& key, double* out) const {
    if (!j.is_number() || !CheckDuration(j.get<double>(), "", false).ok()) {
      return Error(key, "must be a positive number of seconds, at most a week");
    }
    *out = j.get<double>();
    return absl::OkStatus();
  }

  absl::Status Test(const json& j, size_t index, HarnessTest* out) const {
    std::string where = absl::StrCat("tests[", index, "]");
    if (!j.is_object()) return Error(where, "must be an object");
    for (const auto& [key, value] : j.items()) {
      std::string k = absl::StrCat(where, ".", key);
      if (key == "kind") {
        if (!value.is_string() || !IsHarnessKind(value.get<std::string>())) {
          return Error(
              k, absl::StrCat("must be a harness kind (", absl::StrJoin(kHarnessKinds, ", "), ")"));
        }
        out->kind = value.get<std::string>();
      } else if (key == "timeout_s") {
        double t = 0;
        if (absl::Status s = Seconds(value, k, &t); !s.ok()) return s;
        out->timeout_s = t;
      } else if (key == "repeat") {
        if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
            value.get<int64_t>() > 1000000) {
          return Error(k, "must be an integer from 1 to 1000000");
        }
        out->repeat = value.get<int64_t>();
      } else if (key == "kind_params") {
        if (!value.is_object()) return Error(k, "must be an object of strings");
        for (const auto& [pk, pv] : value.items()) {
          if (!pv.is_string()) return Error(k, "must be an object of strings");
          out->kind_params[pk] = pv.get<std::string>();
        }
      } else {
        return Error(k, "is not a known key (kind, timeout_s, repeat, kind_params)");
      }
    }
    if (out->kind.empty()) return Error(where, "needs a 'kind'");
    return absl::OkStatus();
  }

 private:
  std::string origin_;
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
  absl::Status s;
  for (const auto& [key, value] : j.items()) {
    if (key == "name") {
      if (!value.is_string() || value.get<std::string>().empty()) {
        return p.Error(key, "must be a non-empty string");
      }
      suite.name = value.get<std::string>();
    } else if (key == "description") {
      if (!value.is_string()) return p.Error(key, "must be a string");
      suite.description = value.get<std::string>();
    } else if (key == "models") {
      if (value.is_string() && value.get<std::string>() == "all") {
        suite.all_models = true;
      } else {
        s = p.Strings(value, key, &suite.models);
      }
    } else if (key == "targets") {
      s = p.Strings(value, key, &suite.targets);
    } else if (key == "modes") {
      s = p.Strings(value, key, &suite.modes);
    } else if (key == "kinds") {
      s = p.Strings(value, key, &suite.kinds);
      for (const std::string& k : suite.kinds) {
        if (s.ok() && !IsModelKind(k)) {
          s = p.Error(key, absl::StrCat("has '", k,
                                        "', not a model kind (forward, generate, train, load)"));
        }
      }
    } else if (key == "dtypes") {
      s = p.Strings(value, key, &suite.dtypes);
    } else if (key == "batch_sizes") {
      s = p.Ints(value, key, &suite.batch_sizes);
    } else if (key == "seq_lens") {
      s = p.Ints(value, key, &suite.seq_lens);
    } else if (key == "timeout_s") {
      s = p.Seconds(value, key, &suite.timeout_s);
    } else if (key == "tests") {
      if (!value.is_array()) return p.Error(key, "must be a list of objects");
      for (size_t i = 0; i < value.size() && s.ok(); ++i) {
        HarnessTest t;
        s = p.Test(value[i], i, &t);
        suite.tests.push_back(std::move(t));
      }
    } else {
      return p.Error(key, "is not a known key (see doc/suites.md)");
    }
    if (!s.ok()) return s;
  }
  if (suite.name.empty())
    return absl::InvalidArgumentError(absl::StrCat(origin, ": needs a 'name'"));
  if (!suite.all_models && suite.models.empty() && suite.tests.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": names neither 'models' nor 'tests'"));
  }
  return suite;
}

absl::StatusOr<Suite> LoadSuite(const std::string& name_or_path, const fs::path& suites_dir) {
  fs::path path;
  if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json")) {
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
  return ParseSuite(*text, path.string());
}

std::vector<std::string> ListSuiteNames(const fs::path& suites_dir) {
  return JsonFileStems(suites_dir);
}

}  // namespace compatlab
