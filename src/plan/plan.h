// Planning: a suite plus command-line overrides, expanded into the ordered
// list of tests of a sweep. Pure: no processes, no store.
#ifndef COMPATLAB_PLAN_PLAN_H_
#define COMPATLAB_PLAN_PLAN_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/records.h"
#include "plan/catalog.h"
#include "plan/hub.h"
#include "plan/suite.h"
#include "plan/target.h"

namespace compatlab {

struct PlanOverrides {
  // Model types and hub:ORG/NAME[@REVISION] ids replacing the suite's list.
  std::vector<std::string> models;
  std::vector<std::string> kinds;  // model kinds replacing the suite's list
  // Each, when not empty, replaces the suite's list.
  std::vector<std::string> targets;
  std::vector<std::string> modes;
  std::vector<std::string> dtypes;
  std::vector<int64_t> batch_sizes;
  std::vector<int64_t> seq_lens;
  std::string backend;                 // compile backend instead of the profiles' ("" = theirs)
  std::optional<int64_t> new_tokens;   // generate (default kDefaultNewTokens)
  std::optional<int64_t> train_steps;  // train (default kDefaultTrainSteps)
  // Kind load (doc/probe.md, "Kind load"): the server scenario's arrival rates as
  // multiples of the offline throughput ("0.9x"; empty: kDefaultLoadRates), the
  // objective "ttft=S,itl=S" ("": from the test's single_stream run) and the
  // requests of each test (default kDefaultLoadRequests).
  std::vector<std::string> load_rates;
  std::string load_slo;
  std::optional<int64_t> load_requests;
  std::optional<double> timeout_s;  // every test's deadline
  // A local checkpoint replacing the suite's models: its directory, content
  // hash and what the probe read from its config.
  std::string checkpoint_dir;
  std::string checkpoint_hash;
  std::optional<CheckpointInfo> checkpoint;
  // --trust-remote-code: a checkpoint whose config names custom code (auto_map) may run it.
  bool trust_remote_code = false;
  // A code model replacing the suite's models (--model-code): its id, its spec
  // ("ABSOLUTE_FILE.py:FUNCTION", the tests' model_path) and what the probe described.
  std::string code_model_id;
  std::string code_model_spec;
  std::optional<CodeModelInfo> code_model;
  // --baseline: models (types or hub: ids) planned beside the variant (the checkpoint, the
  // code model or --models) with the same targets, modes, kinds, dtypes and shapes.
  std::vector<std::string> baseline;
  // What the Hub resolver answered for each hub: entry of the plan's models.
  std::map<std::string, HubModelInfo> hub_models;
  // --size: "" or "reduced" (the default), or "full" (kind_params size=full);
  // --weights: the Hub repo's own weights (kind_params weights=pretrained).
  std::string size;
  bool weights = false;
  // --heads: empty or {"rule"} (the head rule's class), {"all"} (every head class the type
  // registers, each its own test), or class names.
  std::vector<std::string> heads;
};

inline constexpr int64_t kDefaultNewTokens = 16;
inline constexpr int64_t kDefaultTrainSteps = 3;
inline constexpr int64_t kDefaultLoadRequests = 32;
// One server row each, so that one rate is past saturation by construction.
inline const std::vector<std::string> kDefaultLoadRates = {"0.5x", "0.9x", "1.5x"};

// The kind_params of each test one plan cell of `kind` expands into: one for
// most kinds; for load, single_stream, offline and one server test per rate.
// InvalidArgument for a malformed rate or objective of `overrides`.
absl::StatusOr<std::vector<std::map<std::string, std::string>>> KindParamVariants(
    const std::string& kind, const PlanOverrides& overrides);

// Kind load's groups: the rows of one model, target, mode, dtype, shape and kind
// parameters but scenario and rate. Their server rows' rates multiply one figure,
// the throughput of the group's offline row (sweep/execute.h); ExpandPlan puts
// it before them. For a server row, the test id of its group's offline row;
// nullopt for every other test.
std::optional<std::string> LoadBaseTestId(const TestSpec& spec);
// True for kind load's offline row (the base of its group's server rows).
bool IsLoadOffline(const TestSpec& spec);
// Kind load's one objective per group: without an explicit objective (kind_params slo,
// --slo), every offline and server row is judged by the goodput objectives of its group's
// single_stream row (sweep/execute.h); ExpandPlan puts that row first. For such a row, the
// test id of its group's single_stream row; nullopt for every other test.
std::optional<std::string> LoadSloTestId(const TestSpec& spec);
// True for kind load's single_stream row (the objective of its group's other rows).
bool IsLoadSingleStream(const TestSpec& spec);

// The model id of a code model: "code:NAME@" + the first 16 hex digits of `sha256`, its
// code files' CodeFilesDigest (a change of any of its files is a new model). NAME is FILE's
// stem and FUNCTION, "attn.build".
inline constexpr size_t kCodeIdHashChars = 16;
std::string CodeModelId(const std::string& file, const std::string& function,
                        const std::string& sha256);
// The hash of a code model's files (doc/probe.md, "Own code"; code_model.files_digest in the
// probe computes the same): FILE's own SHA-256 when it is the only file, else the SHA-256 of
// "REL\nSHA256\n" for each file in order of rel.
std::string CodeFilesDigest(std::vector<CodeFile> files);
// Splits "FILE.py:FUNCTION" (the last colon); InvalidArgument naming the flag when either
// part is empty, FILE does not end in .py, or FUNCTION is not an identifier.
absl::StatusOr<std::pair<std::string, std::string>> SplitModelCode(const std::string& spec);
// True for code:NAME@HASH ids.
bool IsCodeModelId(const std::string& model_id);

// The target names of the plan, in order (overrides first, else the suite's).
std::vector<std::string> PlanTargets(const Suite& suite, const PlanOverrides& overrides);

// The hub: entries of the plan's models (overrides first, else the suite's), in order.
std::vector<std::string> PlanHubModels(const Suite& suite, const PlanOverrides& overrides);

// True when planning `suite` with `overrides` needs the model catalog.
bool PlanNeedsCatalog(const Suite& suite, const PlanOverrides& overrides);

// Expands the matrix in a fixed order: models, then targets, modes, kinds,
// dtypes, batch sizes, sequence lengths; harness tests after. `catalog` may
// be null when PlanNeedsCatalog() is false. `profiles` holds the profile of
// every name PlanTargets() returns (compile mode takes its backend from it).
// Errors name the bad input (unknown model type, a kind that is not a model
// kind, an unknown mode or dtype, a duplicate test).
absl::StatusOr<std::vector<TestSpec>> ExpandPlan(
    const Suite& suite, const PlanOverrides& overrides, const ModelCatalog* catalog,
    const std::map<std::string, TargetProfile>& profiles);

// Distinct model types of a plan, in first-seen order (the zygote preloads them).
std::vector<std::string> PlanModelTypes(const std::vector<TestSpec>& plan);

}  // namespace compatlab

#endif  // COMPATLAB_PLAN_PLAN_H_
