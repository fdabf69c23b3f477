// The dataset card of a published export (`compatlab export --publish`):
// README.md with the YAML header the Hugging Face Hub reads (one config per
// stack file, a default config of every file, license, tags) and a body
// generated from the field table (doc/dataset.md, "Publishing").
#ifndef COMPATLAB_EXPORT_CARD_H_
#define COMPATLAB_EXPORT_CARD_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "core/records.h"

namespace compatlab {

// The name of the config that holds every file (default: true).
inline constexpr std::string_view kAllConfigName = "all";

// One stack file of the card: its config and what the card says of it.
struct CardConfig {
  std::string name;            // a config name the Hub takes: [A-Za-z0-9._-], unique
  std::filesystem::path file;  // relative to the dataset's directory
  std::string torch_version;   // of its runs, exact
  std::string transformers_version;
  std::string stack_versions;  // "" or "{}" for a torch/transformers pair's file
  int64_t runs = 0;
};

// What the card says was done to private text (scrub.h).
struct CardPrivacy {
  bool kept = false;          // --keep-private: nothing scrubbed
  int64_t scrubbed_runs = 0;  // runs whose text the scrubber changed
};

struct CardOptions {
  std::string license = "cc-by-4.0";  // a Hub license id
  CardPrivacy privacy;
};

// OK when `license` can be the card's license: a Hub license id, 1-64 bytes
// of [A-Za-z0-9._-]. InvalidArgument otherwise.
absl::Status CheckLicenseId(std::string_view license);

// The configs of `runs`, one per stack file (StackFilePath), sorted by file.
// A config's name is the file's path without ".parquet", '/' as "--" and
// every byte outside [A-Za-z0-9._-] as '-'; one that another config has
// already gets "-" and 8 hex of the SHA-256 of its path.
std::vector<CardConfig> CardConfigs(const std::vector<RunRecord>& runs);

// The card (README.md) of the dataset of `runs` as `options` say.
std::string DatasetCard(const std::vector<RunRecord>& runs, const CardOptions& options);

// The meaning of `status`, one markdown sentence (the card's and
// doc/dataset.md's status table).
std::string_view TestStatusMeaning(TestStatus status);

// The pass rule, markdown (the card's and doc/dataset.md's).
std::string_view PassRuleText();

}  // namespace compatlab

#endif  // COMPATLAB_EXPORT_CARD_H_
