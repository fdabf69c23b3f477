// The model catalog: every model type the installed transformers registers,
// with the head class the probe's rule picks for it (doc/model-factory.md).
// It comes from the probe (`python -m compatlab_probe.models.catalog`), since only
// Python can read transformers' registries.
#ifndef COMPATLAB_PLAN_CATALOG_H_
#define COMPATLAB_PLAN_CATALOG_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace compatlab {

struct CatalogEntry {
  std::string config_class;
  std::string head_class;                 // "" when the rule finds none
  std::string head_kind;                  // causal_lm, seq2seq_lm, masked_lm, ...
  std::string modality;                   // text, vision, audio, multimodal
  std::vector<std::string> head_classes;  // every head class registered for the type
};

struct ModelCatalog {
  std::string torch_version;
  std::string transformers_version;
  std::map<std::string, CatalogEntry> models;  // by model type
};

struct CheckpointInfo {
  std::string model_type;
  std::string head_class;
  std::string head_kind;
  // config.json names custom code (auto_map): its tests load it with trust_remote_code,
  // planned only under --trust-remote-code.
  bool custom_code = false;
};

// One of a code model's files: FILE, or a module or package file it imports from FILE's own
// directory tree (doc/probe.md, "Own code").
struct CodeFile {
  std::string path;    // absolute
  std::string rel;     // relative to FILE's directory, "/"-separated
  std::string sha256;  // of its content, as the probe read it
};

// A code model (--model-code FILE.py:FUNCTION) as the probe described it once it built it.
struct CodeModelInfo {
  std::string model_type;   // the model's config.model_type ("" when it has none)
  std::string model_class;  // the class the function returned (or the class named)
  std::string head_class;   // the first class of its MRO transformers registers for the type
  std::string head_kind;
  std::string sha256;           // the id's hash: CodeFilesDigest(files), as the probe computed it
  std::vector<CodeFile> files;  // FILE and the code files it imports, sorted by rel
};

// Where the probe lives and which interpreter runs it.
struct ProbeEnv {
  std::string python;
  std::string probe_dir;
};

// The probe's answers parsed: its catalog, a checkpoint's description, a code model's
// description (InvalidArgument when malformed; a code model needs its class, hash and files).
absl::StatusOr<ModelCatalog> ParseCatalog(const std::string& json_text);
absl::StatusOr<CheckpointInfo> ParseCheckpointInfo(const std::string& json_text);
absl::StatusOr<CodeModelInfo> ParseCodeModelInfo(const std::string& json_text);
// The answer of InspectCodeModels: {"codes": [one "code" object per spec, in order]};
// InvalidArgument when malformed or not `count` of them.
absl::StatusOr<std::vector<CodeModelInfo>> ParseCodeModelInfos(const std::string& json_text,
                                                               size_t count);

// `python -m MODULE ARGS`'s stdout (a probe command: the model catalog, the op
// catalog), offline, `pythonpath` and then the probe first on its path; the probe's
// own error (InvalidArgument) when it exits non-zero with one, else
// FailedPrecondition with its output's tail.
absl::StatusOr<std::string> RunProbeCommand(const ProbeEnv& env, const std::string& module,
                                            std::vector<std::string> args,
                                            const std::vector<std::string>& pythonpath = {});

// Runs the probe's catalog command.
absl::StatusOr<ModelCatalog> LoadCatalog(const ProbeEnv& env);
// OK when the probe's torch registers the compile backend `backend`, or it is
// a "module:function" that imports as a callable with `pythonpath` (absolute
// directories, as the test child's target profiles put them) first on the path;
// InvalidArgument naming the registered ones otherwise.
absl::Status CheckCompileBackend(const ProbeEnv& env, const std::string& backend,
                                 const std::vector<std::string>& pythonpath = {});
// Reads a local checkpoint directory's config through the probe; `trust_remote_code` lets
// it import the checkpoint's own code (auto_map), which it refuses otherwise.
absl::StatusOr<CheckpointInfo> InspectCheckpoint(const ProbeEnv& env, const std::string& dir,
                                                 bool trust_remote_code = false);
// Builds the code model `spec` ("FILE.py:FUNCTION", FILE absolute) once through the probe
// and describes it. InvalidArgument with the probe's whole error when the code fails.
absl::StatusOr<CodeModelInfo> InspectCodeModel(const ProbeEnv& env, const std::string& spec);
// InspectCodeModel of each of `specs` in one probe process (a suite's code models: torch is
// imported once); the first failing spec's error for all.
absl::StatusOr<std::vector<CodeModelInfo>> InspectCodeModels(const ProbeEnv& env,
                                                             const std::vector<std::string>& specs);

// The error a failed probe command reports, whole: the "error" member of the JSON object
// on the last non-empty line of its stdout, else its stderr's last 4000 bytes, else its
// stdout's; "(no output)" when it wrote nothing.
std::string ProbeFailureText(const std::string& stdout_text, const std::string& stderr_text);

// The string at `key` of a probe command's JSON answer (catalog, hub resolve, ...); ""
// when it is absent or not a string.
std::string ProbeAnswerText(const nlohmann::json& answer, const char* key);

}  // namespace compatlab

#endif  // COMPATLAB_PLAN_CATALOG_H_
