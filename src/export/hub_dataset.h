// A published dataset on the Hugging Face Hub: `compatlab publish` uploads an
// `export --publish` directory, `compatlab import --from-hub` downloads one
// into the Hub cache for the Parquet import (doc/dataset.md, "Publishing").
// The Hub's transport is huggingface_hub's, run by the probe's Python
// (`python -m compatlab_probe.hub_dataset`), as the Hub model resolver is
// (plan/hub.h); nothing of it is decided here.
#ifndef COMPATLAB_EXPORT_HUB_DATASET_H_
#define COMPATLAB_EXPORT_HUB_DATASET_H_

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace compatlab {

// The Python that runs the helper, and the probe's directory (its PYTHONPATH).
struct HubHelper {
  std::string python;
  std::string probe_dir;
};

struct PublishOptions {
  std::filesystem::path dir;  // written by `export --publish`: README.md and Parquet files
  std::string repo;           // ORG/NAME
  std::string revision;       // a branch, made if missing; "" for main
  HubHelper helper;
};

struct PublishedDataset {
  std::string repo_id;
  std::string revision;
  std::string commit;
  std::string url;
  std::vector<std::string> files;  // uploaded, relative to the directory
};

// OK when `repo` is ORG/NAME and `revision` ("" or a branch, tag or commit) is
// one as the Hub spells them (no ".."). InvalidArgument naming it otherwise.
absl::Status CheckDatasetRepo(std::string_view repo, std::string_view revision);

// Uploads options.dir to the Hub's dataset repo options.repo (created if
// missing). Errors: InvalidArgument for a bad repo or revision, or a
// directory without README.md; Unavailable when the Hub refused or could not
// be reached (its one-line reason); FailedPrecondition when the helper cannot run.
absl::StatusOr<PublishedDataset> PublishDataset(const PublishOptions& options);

struct DownloadedDataset {
  std::string repo_id;
  std::string commit;
  std::filesystem::path path;  // the snapshot directory in the Hub cache
};

// The dataset `spec` (ORG/NAME[@REVISION]) downloaded into the Hub cache: its
// README.md and Parquet files at one commit, after its file listing was
// checked against the import's bounds. Errors as PublishDataset's.
absl::StatusOr<DownloadedDataset> DownloadDataset(const std::string& spec, const HubHelper& helper);

}  // namespace compatlab

#endif  // COMPATLAB_EXPORT_HUB_DATASET_H_
