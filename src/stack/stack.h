// Stacks as data (doc/stacks.md): `compatlab stack add NAME torch==V transformers==V
// [pkg==V ...]` makes a virtual environment under the stacks directory with pip, never
// touching the project's own environment (the stack named `default`); `stack ls` and
// `stack rm` list and remove them; `sweep --stacks` runs a plan on each by its interpreter.
//
// Layout of the stacks directory (<project home>/stacks, or $COMPATLAB_STACKS):
//   envs/<id>/      a venv; <id> is the first 16 hex digits of the SHA-256 of its
//                   resolved package set and layout (StackContentText): content-addressed,
//                   so two names with one resolved set share one environment
//   names/<NAME>.json  a stack's record (StackRecordJson): its env id, what was asked,
//                   what was resolved
//   tmp/<random>/   an environment being made; renamed into envs/ only once it imports
//                   torch and transformers at the asked versions, removed on any failure
#ifndef COMPATLAB_STACK_STACK_H_
#define COMPATLAB_STACK_STACK_H_

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace compatlab {

// The stack name of the project's own environment.
inline constexpr std::string_view kDefaultStack = "default";

// Where stacks live and what they are made from.
struct StackHome {
  std::filesystem::path dir;             // the stacks directory
  std::filesystem::path default_python;  // the project's own interpreter (stack `default`)
  std::filesystem::path lock;            // requirements.lock
};

// <project home>/stacks (or $COMPATLAB_STACKS), the project's interpreter and lock.
StackHome StackHomeOf(const std::filesystem::path& project_home,
                      const std::filesystem::path& default_python);

// One pinned package: its normalized name (PEP 503: lower case, runs of -_. as -) and
// version.
struct PackagePin {
  std::string name;
  std::string version;
  bool operator==(const PackagePin&) const = default;
};

// "NAME==VERSION" checked and normalized; InvalidArgument naming `text` otherwise.
absl::StatusOr<PackagePin> ParsePackagePin(std::string_view text);

// A stack name: 1 to 40 of [a-z0-9._-], starting with a letter or digit.
absl::Status CheckStackName(std::string_view name);

// What `stack add` asks for: a name and the pins (torch and transformers among them).
struct StackRequest {
  std::string name;
  std::vector<PackagePin> pins;
};

// The request of `stack add NAME SPEC...`: the name checked (not `default`), each SPEC a
// pin, no package twice, torch and transformers both pinned. InvalidArgument otherwise.
absl::StatusOr<StackRequest> ParseStackRequest(std::string_view name,
                                               const std::vector<std::string>& specs);

// A stack as recorded.
struct StackRecord {
  std::string name;
  std::string env_id;  // 16 hex digits; "" for `default`
  // "overlay": the asked packages installed over the default environment's site-packages
  // (same torch); "full": the lock's probe packages, the asked ones and torch with its own
  // dependencies; "project" for `default`.
  std::string layout;
  std::vector<std::string> requested;           // "torch==2.13.0", as asked, normalized
  std::map<std::string, std::string> resolved;  // every package the interpreter sees
  std::string created_at;
  std::filesystem::path python;  // the interpreter
};

// The text whose SHA-256 names an environment: its layout line, then one "name==version"
// line per resolved package in name order.
std::string StackContentText(std::string_view layout,
                             const std::map<std::string, std::string>& resolved);

// The packages of a site-packages directory, from its `NAME-VERSION.dist-info`
// directories (names normalized). Empty when it cannot be read.
std::map<std::string, std::string> InstalledPackages(const std::filesystem::path& site_packages);

// The probe's own packages of `lock_text` (requirements.lock): the pins before the first
// comment line that follows a pin (the lock's first block), without `exclude`d names.
std::vector<PackagePin> LockProbePins(std::string_view lock_text,
                                      const std::vector<std::string>& exclude);

// A record as its JSON file holds it, and back (strictly: every key, env id 16 hex
// digits, name checked, at most kMaxStackRecordBytes). InvalidArgument when bad.
std::string StackRecordJson(const StackRecord& record);
absl::StatusOr<StackRecord> ParseStackRecord(std::string_view text);
inline constexpr size_t kMaxStackRecordBytes = 1 << 20;

// Makes the stack of `request` (module comment); `note` receives one line per step.
// AlreadyExists for a name taken; NotFound naming the first package pip cannot find
// ("cannot install torch==9.9.9: ..."); FailedPrecondition when the default environment
// cannot be read; Internal when pip or the check import fails otherwise. Nothing is left
// behind on failure.
absl::StatusOr<StackRecord> AddStack(const StackHome& home, const StackRequest& request,
                                     const std::function<void(const std::string&)>& note);

// `default` (from the project's interpreter) then every recorded stack by name. A record
// that cannot be read is an error naming its file.
absl::StatusOr<std::vector<StackRecord>> ListStacks(const StackHome& home);

// The stack `name` (`default` included). NotFound when there is none.
absl::StatusOr<StackRecord> FindStack(const StackHome& home, std::string_view name);

// Removes the record of `name` and its environment unless another name uses it.
// InvalidArgument for `default`, NotFound when there is none.
absl::Status RemoveStack(const StackHome& home, std::string_view name);

}  // namespace compatlab

#endif  // COMPATLAB_STACK_STACK_H_
