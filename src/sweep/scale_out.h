// A plan file's shards as cluster jobs (doc/scale-out.md): a Slurm array job,
// a merge job after it and the script that submits both; or a Kubernetes
// Indexed Job and its merge Job. Each task runs `compatlab sweep --plan
// --shard I/N` into its own store (running again resumes it) and the merge
// runs `compatlab merge` then `compatlab sweeps`.
#ifndef COMPATLAB_SWEEP_SCALE_OUT_H_
#define COMPATLAB_SWEEP_SCALE_OUT_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace compatlab {

// What `compatlab slurm` writes.
struct SlurmOptions {
  std::filesystem::path compatlab;  // the binary the jobs run (absolute)
  std::filesystem::path plan;       // the plan file
  int64_t shards = 0;               // must be the plan file's
  std::filesystem::path out;        // the directory of the scripts, stores and logs
  std::filesystem::path merged;     // "" = <out>/merged.db
  std::string partition;            // "" = the cluster's default; then --time, --mem,
  std::string time;                 // --cpus-per-task of every task (each "" or 0:
  std::string mem;                  // the cluster's default)
  int64_t cpus_per_task = 0;
};

// The files written, by path.
struct ScaleOutFiles {
  std::vector<std::filesystem::path> files;
};

// Reads the plan file (checked as `sweep --plan` reads it, so that a bad one
// is refused here and not on the cluster), then writes in `out` (created):
// shards.sbatch (`--array=0-(N-1)`, `--requeue`, each task's store
// shard-I.db and log shard-I.log under `out`), merge.sbatch (merges the
// shard stores that exist into `merged`, then lists the missing tests with
// `compatlab sweeps`) and submit.sh (`sbatch --parsable` of both, the merge
// with `--dependency=afterany:<array job>`; prints both job ids). Errors
// (InvalidArgument): the plan file's, shards other than the file's, a path
// with a character a shell script would need to escape (a quote, a newline)
// or a Slurm value outside [A-Za-z0-9:._-].
absl::StatusOr<ScaleOutFiles> WriteSlurmJobs(const SlurmOptions& options);

// What `compatlab k8s` writes.
struct K8sOptions {
  std::filesystem::path plan;      // the plan file, read here to check it
  int64_t shards = 0;              // must be the plan file's
  std::filesystem::path out;       // where the manifests go (created)
  std::string image;               // a container image holding compatlab and its probe
  std::string claim;               // a PersistentVolumeClaim shared by every pod
  std::string workdir = "/work";   // its mount path: the plan file, the stores
  std::string name = "compatlab";  // the Jobs' name prefix
  int64_t backoff_per_index = 2;   // retries of one shard (backoffLimitPerIndex)
};

// Writes <out>/shards-job.yaml (an Indexed Job: completionMode Indexed,
// completions and parallelism N, backoffLimitPerIndex, each pod running its
// shard JOB_COMPLETION_INDEX of <workdir>/<plan file name> into
// <workdir>/shard-I.db) and <out>/merge-job.yaml (a Job merging them into
// <workdir>/merged.db, then listing the missing tests). Errors as
// WriteSlurmJobs (names: Kubernetes' DNS label rule).
absl::StatusOr<ScaleOutFiles> WriteK8sJobs(const K8sOptions& options);

}  // namespace compatlab

#endif  // COMPATLAB_SWEEP_SCALE_OUT_H_
