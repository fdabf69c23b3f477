// Target profiles: data files under targets/ that say how to run on a device
// (doc/targets.md). The core reads only what planning needs (name, compile
// backend and options, verified); the whole profile travels to the probe as
// JSON, which owns what the device-specific fields mean.
#ifndef COMPATLAB_PLAN_TARGET_H_
#define COMPATLAB_PLAN_TARGET_H_

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/records.h"

namespace compatlab {

// One op the target's own documentation excludes (op_exclusions, doc/targets.md;
// doc/ops.md, "Skips"): matched by its exact op key, never by substring.
struct OpExclusion {
  std::string op;  // "name" or "name:variant" (core/op_records.h, CheckOpKey)
  std::string reason;
  std::string citation;  // where the target's documentation says so

  bool operator==(const OpExclusion&) const = default;
};

struct TargetProfile {
  std::string name;  // "cpu", "cuda", ...; equals the file's stem for a named profile
  std::string description;
  bool verified = false;                // false: shipped but never run on the real device
  std::string device;                   // torch device string
  std::string backend;                  // default torch.compile backend (compile.backend); "" for
                                        // a profile that takes no compile mode
  std::string lowering;                 // mode export: the probe's lowering key; "": the
                                        // exported program itself
  std::vector<std::string> modes;       // the modes the target takes (default all)
  std::string compile_options_json;     // compile.options as canonical JSON object text
  std::vector<std::string> pythonpath;  // entries the child puts first on sys.path (relative: to
                                        // the repository root)
  std::string profile;                  // the profiler's window without --profile: "", "steady"
                                        // or "prepare" (doc/probe.md, "Profile")
  std::vector<OpExclusion> op_exclusions;  // ops the target's documentation excludes
  std::string json;                        // the whole profile as canonical JSON object text
};

// Parses and checks profile JSON text; `origin` names the file in errors.
// Strict: unknown keys, wrong types and missing required keys are errors.
absl::StatusOr<TargetProfile> ParseTargetProfile(const std::string& text,
                                                 const std::string& origin);

// The keys a profile may have, in doc/targets.md's order.
std::vector<std::string> TargetProfileKeys();

// Loads `name_or_path`: a path to a .json file, or the name of a profile in
// `targets_dir` (`<targets_dir>/<name>.json`).
absl::StatusOr<TargetProfile> LoadTargetProfile(const std::string& name_or_path,
                                                const std::filesystem::path& targets_dir);

// Loads every profile of `names_or_paths` and rewrites each entry into its
// profile's name; the result maps names to profiles. Two entries with the
// same name are an error.
absl::StatusOr<std::map<std::string, TargetProfile>> LoadTargetProfiles(
    std::vector<std::string>* names_or_paths, const std::filesystem::path& targets_dir);

// Names of the profiles in `targets_dir`, sorted.
// True when `name_or_path` names a profile file by path (it has a '/' or ends
// in ".json") rather than a profile of targets/ by name.
bool IsTargetProfilePath(const std::string& name_or_path);

std::vector<std::string> ListTargetNames(const std::filesystem::path& targets_dir);

// `options_json` (a JSON object) with "dynamic" set to false: every shape of a
// cost curve compiles on its own (issue: one preparation per shape).
std::string WithStaticShapes(const std::string& options_json);
// `options_json` with "dynamic" set to true: a --dynamic true test (doc/probe.md, "Dynamic
// shapes").
std::string WithDynamicShapes(const std::string& options_json);
// The compile options of a test of `spec`'s dynamic setting from its profile's
// `options_json`: dynamic true for kDynamicTrue; dynamic false for kDynamicMark (only the
// marked dims are dynamic) and for a static test of a plan with several shapes
// (`several_shapes`); else the profile's own.
std::string CompileOptionsFor(const TestSpec& spec, const std::string& options_json,
                              bool several_shapes);

}  // namespace compatlab

#endif  // COMPATLAB_PLAN_TARGET_H_
