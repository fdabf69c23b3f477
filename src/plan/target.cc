#include "plan/target.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <span>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/op_records.h"
#include "core/records.h"
#include "core/resolved_test.h"
#include "nlohmann/json.hpp"
#include "plan/strict_json.h"
#include "util/fs.h"

namespace compatlab {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// What a profile value must be before its key's own check runs.
enum class ProfileKind { kString, kBool, kInteger, kList, kObject, kNullOrObject };

// When a profile must have the key.
enum class ProfileNeed { kOptional, kAlways, kForModeCompile };

// What is wrong with a profile: the key it names ("compile.backend" for a
// nested one) and what, as "<origin>: '<key>' <what>" says it.
struct ProfileProblem {
  std::string key;
  std::string what;
};

// The check of one key's value of the right kind: the first problem, or none.
using ProfileCheck = std::optional<ProfileProblem> (*)(const std::string& key, const json& value);
// Copies one checked value into the profile.
using ProfileApply = void (*)(const json& value, TargetProfile* profile);

// One key of a target profile, or of one of its objects (doc/targets.md, "Fields").
struct ProfileField {
  std::string_view name;
  ProfileKind kind;
  std::string_view kind_error;  // the problem when the value is of another kind
  ProfileNeed need = ProfileNeed::kOptional;
  ProfileCheck check = nullptr;  // nullptr: any value of its kind
  ProfileApply apply = nullptr;  // nullptr: only the probe reads it (TargetProfile::json)
};

// InvalidArgument "<origin>: '<key>' <what>".
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

// `j` as compact JSON text, keys sorted (nlohmann's objects are), bad UTF-8 replaced.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// The text of a value already checked to be a string.
const std::string& ProfileString(const json& value) { return value.get_ref<const std::string&>(); }

// True when `value` is of `kind`.
bool HasProfileKind(const json& value, ProfileKind kind) {
  switch (kind) {
    case ProfileKind::kString:
      return value.is_string();
    case ProfileKind::kBool:
      return value.is_boolean();
    case ProfileKind::kInteger:
      return value.is_number_integer();
    case ProfileKind::kList:
      return value.is_array();
    case ProfileKind::kObject:
      return value.is_object();
    case ProfileKind::kNullOrObject:
      return value.is_null() || value.is_object();
  }
  return false;
}

// The problem `what` at `key`.
std::optional<ProfileProblem> ProfileError(const std::string& key, std::string_view what) {
  return ProfileProblem{key, std::string(what)};
}

// The field of `fields` named `name`, or nullptr.
const ProfileField* FindProfileField(std::span<const ProfileField> fields, std::string_view name) {
  auto it = std::find_if(fields.begin(), fields.end(),
                         [name](const ProfileField& f) { return f.name == name; });
  return it == fields.end() ? nullptr : &*it;
}

// The first problem of `object`'s members in its key order against `fields`
// (an unknown key is `unknown`), each member applied to `out` once it passes
// (when `out` is given); keys are named `prefix` + key.
std::optional<ProfileProblem> CheckProfileMembers(const json& object,
                                                  std::span<const ProfileField> fields,
                                                  const std::string& prefix,
                                                  const std::string& unknown, TargetProfile* out) {
  for (const auto& [name, value] : object.items()) {
    const std::string key = prefix + name;
    const ProfileField* field = FindProfileField(fields, name);
    if (field == nullptr) return ProfileError(key, unknown);
    if (!HasProfileKind(value, field->kind)) return ProfileError(key, field->kind_error);
    if (field->check != nullptr) {
      if (std::optional<ProfileProblem> problem = field->check(key, value)) return problem;
    }
    if (out != nullptr && field->apply != nullptr) field->apply(value, out);
  }
  return std::nullopt;
}

// The first of `fields` that `need` requires and `object` lacks, in table order.
std::optional<ProfileProblem> MissingProfileMember(const json& object,
                                                   std::span<const ProfileField> fields,
                                                   const std::string& prefix, ProfileNeed need,
                                                   std::string_view what) {
  for (const ProfileField& field : fields) {
    if (field.need == need && !object.contains(field.name)) {
      return ProfileError(prefix + std::string(field.name), what);
    }
  }
  return std::nullopt;
}

// "is not a known key (a, b, c)" naming `fields` in table order.
std::string UnknownProfileSubkey(std::span<const ProfileField> fields) {
  std::vector<std::string> names;
  for (const ProfileField& f : fields) names.emplace_back(f.name);
  return absl::StrCat("is not a known key (", absl::StrJoin(names, ", "), ")");
}

constexpr std::string_view kProfileNonEmptyString = "must be a non-empty string";
constexpr std::string_view kProfileFunction = "must be \"module:function\"";
constexpr std::string_view kProfileReference =
    "must be \"module:function\", a dotted path, or \"\"";
constexpr std::string_view kProfileBackendName = "must be a backend name";

// A string that is not empty.
std::optional<ProfileProblem> ProfileNonEmpty(const std::string& key, const json& value) {
  if (ProfileString(value).empty()) return ProfileError(key, kProfileNonEmptyString);
  return std::nullopt;
}

// A list of strings, none empty.
std::optional<ProfileProblem> ProfileNonEmptyStrings(const std::string& key, const json& value) {
  for (const json& v : value) {
    if (!v.is_string() || ProfileString(v).empty()) {
      return ProfileError(key, "must be a list of non-empty strings");
    }
  }
  return std::nullopt;
}

// "module:function", a dotted path, or "".
std::optional<ProfileProblem> ProfileReferenceOrEmpty(const std::string& key, const json& value) {
  if (!IsReference(value, true)) return ProfileError(key, kProfileReference);
  return std::nullopt;
}

// "module:function" or a dotted path.
std::optional<ProfileProblem> ProfileFunction(const std::string& key, const json& value) {
  if (!IsReference(value, false)) return ProfileError(key, kProfileFunction);
  return std::nullopt;
}

// A compile backend: a registered name or "module:function".
std::optional<ProfileProblem> ProfileBackendName(const std::string& key, const json& value) {
  if (!IsReference(value, false)) return ProfileError(key, kProfileBackendName);
  return std::nullopt;
}

// A lowering key: lower-case letters and underscores ("" included).
std::optional<ProfileProblem> ProfileLoweringKey(const std::string& key, const json& value) {
  const std::string& v = ProfileString(value);
  if (!std::all_of(v.begin(), v.end(),
                   [](unsigned char c) { return std::islower(c) != 0 || c == '_'; })) {
    return ProfileError(key, "must be a lowering key of lower-case letters (doc/targets.md)");
  }
  return std::nullopt;
}

// The profiler's window: "", "steady" or "prepare" (doc/probe.md, "Profile").
std::optional<ProfileProblem> ProfileWindow(const std::string& key, const json& value) {
  const std::string& v = ProfileString(value);
  if (v != "" && v != kProfileSteady && v != kProfilePrepare) {
    return ProfileError(key, "must be \"\", \"steady\" or \"prepare\" (doc/targets.md)");
  }
  return std::nullopt;
}

// True for "eager", "compile" or "export".
bool IsProfileMode(const json& v) {
  return v.is_string() && (ProfileString(v) == kModeEager || ProfileString(v) == kModeCompile ||
                           ProfileString(v) == kModeExport);
}

// A non-empty list of modes.
std::optional<ProfileProblem> ProfileModes(const std::string& key, const json& value) {
  if (value.empty()) return ProfileError(key, "must be a list of modes");
  if (!std::all_of(value.begin(), value.end(), IsProfileMode)) {
    return ProfileError(key, "must list modes from eager, compile, export");
  }
  return std::nullopt;
}

// op_exclusions: objects of exactly "op" (an op key), "reason" and "citation" (non-empty
// strings), no op twice.
std::optional<ProfileProblem> ProfileOpExclusions(const std::string& key, const json& value) {
  std::set<std::string> seen;
  for (size_t i = 0; i < value.size(); ++i) {
    const json& v = value[i];
    const std::string at = absl::StrCat(key, "[", i, "]");
    if (!v.is_object() || v.size() != 3 || !v.contains("op") || !v.contains("reason") ||
        !v.contains("citation")) {
      return ProfileError(at, "must be an object of exactly op, reason and citation");
    }
    for (const char* member : {"op", "reason", "citation"}) {
      if (!v[member].is_string() || ProfileString(v[member]).empty()) {
        return ProfileError(absl::StrCat(at, ".", member), "must be a non-empty string");
      }
    }
    if (absl::Status s = CheckOpKey(ProfileString(v["op"])); !s.ok()) {
      return ProfileError(absl::StrCat(at, ".op"), std::string(s.message()));
    }
    if (!seen.insert(ProfileString(v["op"])).second) {
      return ProfileError(absl::StrCat(at, ".op"), "names an op listed before");
    }
  }
  return std::nullopt;
}

void ApplyOpExclusions(const json& value, TargetProfile* profile) {
  for (const json& v : value) {
    profile->op_exclusions.push_back(
        {ProfileString(v["op"]), ProfileString(v["reason"]), ProfileString(v["citation"])});
  }
}

// memory: the device allocator's peak functions and the method's name, all three required.
const ProfileField kMemoryFields[] = {
    {"reset_peak", ProfileKind::kString, kProfileFunction, ProfileNeed::kAlways, ProfileFunction},
    {"peak", ProfileKind::kString, kProfileFunction, ProfileNeed::kAlways, ProfileFunction},
    {"method", ProfileKind::kString, kProfileNonEmptyString, ProfileNeed::kAlways, ProfileNonEmpty},
};

// compile: torch.compile's backend (required) and keyword arguments.
const ProfileField kCompileFields[] = {
    {"backend", ProfileKind::kString, kProfileBackendName, ProfileNeed::kAlways,
     ProfileBackendName},
    {"options", ProfileKind::kObject, "must be an object"},
};

// null, or every key of kMemoryFields (checked for presence first), each valid.
std::optional<ProfileProblem> ProfileMemory(const std::string& key, const json& value) {
  if (value.is_null()) return std::nullopt;
  const std::string prefix = key + ".";
  if (auto missing =
          MissingProfileMember(value, kMemoryFields, prefix, ProfileNeed::kAlways, "is missing"))
    return missing;
  return CheckProfileMembers(value, kMemoryFields, prefix, UnknownProfileSubkey(kMemoryFields),
                             nullptr);
}

// A host name or address: letters, digits, '.', '-', ':' (IPv6), 1 to 253 of them.
std::optional<ProfileProblem> ProfileHost(const std::string& key, const json& value) {
  const std::string& v = ProfileString(value);
  const bool ok = !v.empty() && v.size() <= 253 && std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':';
  });
  if (!ok) return ProfileError(key, "must be a host name or address");
  return std::nullopt;
}

// A TCP port, 1 to 65535.
std::optional<ProfileProblem> ProfilePort(const std::string& key, const json& value) {
  const bool ok =
      value.is_number_unsigned() && value.get<uint64_t>() >= 1 && value.get<uint64_t>() <= 65535;
  if (!ok) return ProfileError(key, "must be a port from 1 to 65535");
  return std::nullopt;
}

// redis_cache: inductor's Redis remote cache (host and port required) and the caches it serves.
const ProfileField kRedisCacheFields[] = {
    {"host", ProfileKind::kString, "must be a host name or address", ProfileNeed::kAlways,
     ProfileHost},
    {"port", ProfileKind::kInteger, "must be a port from 1 to 65535", ProfileNeed::kAlways,
     ProfilePort},
    {"fx_graph", ProfileKind::kBool, "must be true or false"},
    {"aot_autograd", ProfileKind::kBool, "must be true or false"},
};

// Every key of `fields` valid, then the required ones present.
std::optional<ProfileProblem> ProfileObject(const std::string& key, const json& value,
                                            std::span<const ProfileField> fields) {
  const std::string prefix = key + ".";
  if (auto bad = CheckProfileMembers(value, fields, prefix, UnknownProfileSubkey(fields), nullptr))
    return bad;
  return MissingProfileMember(value, fields, prefix, ProfileNeed::kAlways, "is missing");
}

// Every key valid, then host and port present.
std::optional<ProfileProblem> ProfileRedisCache(const std::string& key, const json& value) {
  return ProfileObject(key, value, kRedisCacheFields);
}

// Every key valid, then the backend present.
std::optional<ProfileProblem> ProfileCompile(const std::string& key, const json& value) {
  return ProfileObject(key, value, kCompileFields);
}

// The profile's backend and compile options (canonical JSON) from its checked "compile".
void ApplyProfileCompile(const json& value, TargetProfile* p) {
  p->backend = ProfileString(value["backend"]);
  p->compile_options_json = Dump(value.value("options", json::object()));
}

// The keys of a target profile, in doc/targets.md's order.
std::span<const ProfileField> ProfileFields() {
  using enum ProfileKind;
  using enum ProfileNeed;
  static const ProfileField kFields[] = {
      {"name", kString, kProfileNonEmptyString, kAlways, ProfileNonEmpty,
       [](const json& v, TargetProfile* p) { p->name = ProfileString(v); }},
      {"description", kString, "must be a string", kOptional, nullptr,
       [](const json& v, TargetProfile* p) { p->description = ProfileString(v); }},
      {"verified", kBool, "must be true or false", kOptional, nullptr,
       [](const json& v, TargetProfile* p) { p->verified = v.get<bool>(); }},
      {"device", kString, kProfileNonEmptyString, kAlways, ProfileNonEmpty,
       [](const json& v, TargetProfile* p) { p->device = ProfileString(v); }},
      {"pythonpath", kList, "must be a list of strings", kOptional, ProfileNonEmptyStrings,
       [](const json& v, TargetProfile* p) { p->pythonpath = v.get<std::vector<std::string>>(); }},
      {"import", kList, "must be a list of strings", kOptional, ProfileNonEmptyStrings},
      {"setup", kString, kProfileReference, kOptional, ProfileReferenceOrEmpty},
      {"available", kString, kProfileReference, kOptional, ProfileReferenceOrEmpty},
      {"synchronize", kString, kProfileReference, kOptional, ProfileReferenceOrEmpty},
      {"memory", kNullOrObject, "must be null or an object", kOptional, ProfileMemory},
      {"dispatch_key", kString, "must be a string"},
      {"fallback_counts", kString, kProfileReference, kOptional, ProfileReferenceOrEmpty},
      {"reset_fallback_counts", kString, kProfileReference, kOptional, ProfileReferenceOrEmpty},
      {"compile", kObject, "must be an object", kForModeCompile, ProfileCompile,
       ApplyProfileCompile},
      {"lowering", kString, "must be a string", kOptional, ProfileLoweringKey,
       [](const json& v, TargetProfile* p) { p->lowering = ProfileString(v); }},
      {"modes", kList, "must be a list of modes", kOptional, ProfileModes,
       [](const json& v, TargetProfile* p) { p->modes = v.get<std::vector<std::string>>(); }},
      {"profile", kString, "must be a string", kOptional, ProfileWindow,
       [](const json& v, TargetProfile* p) { p->profile = ProfileString(v); }},
      {"op_exclusions", kList, "must be a list of objects", kOptional, ProfileOpExclusions,
       ApplyOpExclusions},
      // A test over several ranks: the process group's backend (doc/ranks.md); the probe reads it.
      {"ranks_backend", kString, "must be a string"},
      // Read by the probe only: a dynamic test (--dynamic) on this target is fail_to_compile
      // with this reason (doc/probe.md, "Dynamic shapes").
      {"dynamic_refused", kString, "must be a string", kOptional, nullptr},
      {"redis_cache", kObject, "must be an object", kOptional, ProfileRedisCache},
  };
  return kFields;
}

// "is not a known key (...; see doc/targets.md)", the keys sorted.
std::string UnknownProfileKey() {
  std::set<std::string> names;
  for (const ProfileField& f : ProfileFields()) names.emplace(f.name);
  return absl::StrCat("is not a known key (", absl::StrJoin(names, ", "), "; see doc/targets.md)");
}

// The first problem of profile object `j` (every key valid, then the required
// ones present), filling `p` from it.
std::optional<ProfileProblem> CheckProfile(const json& j, TargetProfile* p) {
  if (auto bad = CheckProfileMembers(j, ProfileFields(), "", UnknownProfileKey(), p)) return bad;
  if (auto missing =
          MissingProfileMember(j, ProfileFields(), "", ProfileNeed::kAlways, "is missing"))
    return missing;
  if (std::find(p->modes.begin(), p->modes.end(), kModeCompile) == p->modes.end()) {
    return std::nullopt;
  }
  return MissingProfileMember(j, ProfileFields(), "", ProfileNeed::kForModeCompile,
                              "is missing (a profile that takes mode compile needs it)");
}

}  // namespace

std::vector<std::string> TargetProfileKeys() {
  std::vector<std::string> names;
  for (const ProfileField& f : ProfileFields()) names.emplace_back(f.name);
  return names;
}

absl::StatusOr<TargetProfile> ParseTargetProfile(const std::string& text,
                                                 const std::string& origin) {
  absl::StatusOr<json> parsed = ParseStrictJson(text, origin);
  if (!parsed.ok()) return parsed.status();
  json j = *std::move(parsed);
  if (!j.is_object())
    return absl::InvalidArgumentError(absl::StrCat(origin, ": must be an object"));
  TargetProfile p;
  p.modes = {std::string(kModeEager), std::string(kModeCompile), std::string(kModeExport)};
  p.compile_options_json = "{}";
  if (std::optional<ProfileProblem> problem = CheckProfile(j, &p)) {
    return Bad(origin, problem->key, problem->what);
  }
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

std::string WithDynamicShapes(const std::string& options_json) {
  json j = json::parse(options_json, nullptr, false);
  if (!j.is_object()) j = json::object();
  j["dynamic"] = true;
  return Dump(j);
}

std::string CompileOptionsFor(const TestSpec& spec, const std::string& options_json,
                              bool several_shapes) {
  if (spec.dynamic == kDynamicTrue) return WithDynamicShapes(options_json);
  if (spec.dynamic == kDynamicMark || several_shapes) return WithStaticShapes(options_json);
  return options_json;
}

}  // namespace compatlab
