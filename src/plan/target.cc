#include "plan/target.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/records.h"
#include "nlohmann/json.hpp"
#include "plan/strict_json.h"
#include "util/fs.h"

namespace compatlab {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

absl::Status Bad(const std::string& origin, const std::string& key, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ": '", key, "' ", what));
}

// "module:function", a dotted path, or "" (where `may_be_empty`).
bool IsReference(const json& v, bool may_be_empty) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  if (s.empty()) return may_be_empty;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':';
  });
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

absl::StatusOr<TargetProfile> ParseTargetProfile(const std::string& text,
                                                 const std::string& origin) {
  absl::StatusOr<json> parsed = ParseStrictJson(text, origin);
  if (!parsed.ok()) return parsed.status();
  json j = *std::move(parsed);
  if (!j.is_object())
    return absl::InvalidArgumentError(absl::StrCat(origin, ": must be an object"));
  static const std::set<std::string> kKeys = {"name",
                                              "description",
                                              "verified",
                                              "device",
                                              "pythonpath",
                                              "import",
                                              "setup",
                                              "available",
                                              "synchronize",
                                              "memory",
                                              "dispatch_key",
                                              "fallback_counts",
                                              "reset_fallback_counts",
                                              "compile",
                                              "lowering",
                                              "modes"};
  TargetProfile p;
  for (const auto& [key, value] : j.items()) {
    if (!kKeys.count(key)) {
      return Bad(origin, key,
                 absl::StrCat("is not a known key (", absl::StrJoin(kKeys, ", "),
                              "; see doc/targets.md)"));
    }
    if (key == "name" || key == "device") {
      if (!value.is_string() || value.get<std::string>().empty()) {
        return Bad(origin, key, "must be a non-empty string");
      }
    } else if (key == "description" || key == "dispatch_key") {
      if (!value.is_string()) return Bad(origin, key, "must be a string");
    } else if (key == "verified") {
      if (!value.is_boolean()) return Bad(origin, key, "must be true or false");
    } else if (key == "pythonpath" || key == "import") {
      if (!value.is_array()) return Bad(origin, key, "must be a list of strings");
      for (const json& v : value) {
        if (!v.is_string() || v.get<std::string>().empty()) {
          return Bad(origin, key, "must be a list of non-empty strings");
        }
      }
    } else if (key == "setup" || key == "available" || key == "synchronize" ||
               key == "fallback_counts" || key == "reset_fallback_counts") {
      if (!IsReference(value, true)) {
        return Bad(origin, key, "must be \"module:function\", a dotted path, or \"\"");
      }
    } else if (key == "memory") {
      if (value.is_null()) continue;
      if (!value.is_object()) return Bad(origin, key, "must be null or an object");
      for (const char* k : {"reset_peak", "peak", "method"}) {
        if (!value.contains(k)) return Bad(origin, absl::StrCat("memory.", k), "is missing");
      }
      for (const auto& [mk, mv] : value.items()) {
        std::string where = absl::StrCat("memory.", mk);
        if (mk == "method") {
          if (!mv.is_string() || mv.get<std::string>().empty()) {
            return Bad(origin, where, "must be a non-empty string");
          }
        } else if (mk == "reset_peak" || mk == "peak") {
          if (!IsReference(mv, false)) return Bad(origin, where, "must be \"module:function\"");
        } else {
          return Bad(origin, where, "is not a known key (reset_peak, peak, method)");
        }
      }
    } else if (key == "lowering") {
      if (!value.is_string()) return Bad(origin, key, "must be a string");
      const std::string& v = value.get_ref<const std::string&>();
      if (!std::all_of(v.begin(), v.end(),
                       [](unsigned char c) { return std::islower(c) != 0 || c == '_'; })) {
        return Bad(origin, key, "must be a lowering key of lower-case letters (doc/targets.md)");
      }
    } else if (key == "modes") {
      if (!value.is_array() || value.empty()) return Bad(origin, key, "must be a list of modes");
      for (const json& v : value) {
        const std::string mode = v.is_string() ? v.get<std::string>() : "";
        if (mode != kModeEager && mode != kModeCompile && mode != kModeExport) {
          return Bad(origin, key, "must list modes from eager, compile, export");
        }
      }
    } else if (key == "compile") {
      if (!value.is_object()) return Bad(origin, key, "must be an object");
      for (const auto& [ck, cv] : value.items()) {
        std::string where = absl::StrCat("compile.", ck);
        if (ck == "backend") {
          if (!IsReference(cv, false)) return Bad(origin, where, "must be a backend name");
        } else if (ck == "options") {
          if (!cv.is_object()) return Bad(origin, where, "must be an object");
        } else {
          return Bad(origin, where, "is not a known key (backend, options)");
        }
      }
      if (!value.contains("backend")) return Bad(origin, "compile.backend", "is missing");
    }
  }
  p.modes =
      j.value("modes", std::vector<std::string>{std::string(kModeEager), std::string(kModeCompile),
                                                std::string(kModeExport)});
  const bool compiles = std::find(p.modes.begin(), p.modes.end(), kModeCompile) != p.modes.end();
  for (const char* k : {"name", "device"}) {
    if (!j.contains(k)) return Bad(origin, k, "is missing");
  }
  if (compiles && !j.contains("compile")) {
    return Bad(origin, "compile", "is missing (a profile that takes mode compile needs it)");
  }
  p.name = j["name"].get<std::string>();
  p.description = j.value("description", "");
  p.verified = j.value("verified", false);
  p.device = j["device"].get<std::string>();
  if (j.contains("compile")) {
    p.backend = j["compile"]["backend"].get<std::string>();
    p.compile_options_json = Dump(j["compile"].value("options", json::object()));
  } else {
    p.compile_options_json = "{}";
  }
  p.lowering = j.value("lowering", "");
  p.pythonpath = j.value("pythonpath", std::vector<std::string>{});
  p.json = Dump(j);
  return p;
}

absl::StatusOr<TargetProfile> LoadTargetProfile(const std::string& name_or_path,
                                                const fs::path& targets_dir) {
  fs::path path;
  const bool named = !IsTargetProfilePath(name_or_path);
  if (named) {
    path = targets_dir / (name_or_path + ".json");
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      return absl::NotFoundError(
          absl::StrCat("unknown target '", name_or_path,
                       "' (known: ", absl::StrJoin(ListTargetNames(targets_dir), ", "), ")"));
    }
  } else {
    path = name_or_path;
  }
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::NotFoundError(absl::StrCat("cannot read target profile ", path.string()));
  }
  absl::StatusOr<TargetProfile> profile = ParseTargetProfile(*text, path.string());
  if (profile.ok() && named && profile->name != name_or_path) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": 'name' is '", profile->name,
                                                   "', not the file's name '", name_or_path, "'"));
  }
  return profile;
}

absl::StatusOr<std::map<std::string, TargetProfile>> LoadTargetProfiles(
    std::vector<std::string>* names_or_paths, const fs::path& targets_dir) {
  std::map<std::string, TargetProfile> profiles;
  for (std::string& entry : *names_or_paths) {
    absl::StatusOr<TargetProfile> profile = LoadTargetProfile(entry, targets_dir);
    if (!profile.ok()) return profile.status();
    if (profiles.count(profile->name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("target '", profile->name, "' is named twice"));
    }
    entry = profile->name;
    profiles[entry] = *std::move(profile);
  }
  return profiles;
}

bool IsTargetProfilePath(const std::string& name_or_path) {
  return name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
}

std::vector<std::string> ListTargetNames(const fs::path& targets_dir) {
  return JsonFileStems(targets_dir);
}

std::string WithStaticShapes(const std::string& options_json) {
  json j = json::parse(options_json, nullptr, false);
  if (!j.is_object()) j = json::object();
  j["dynamic"] = false;
  return Dump(j);
}

}  // namespace compatlab
