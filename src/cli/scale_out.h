// `compatlab slurm` and `compatlab k8s`: a plan file's shards as cluster jobs
// (sweep/scale_out.h; doc/scale-out.md).
#ifndef COMPATLAB_CLI_SCALE_OUT_H_
#define COMPATLAB_CLI_SCALE_OUT_H_

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"
#include "sweep/scale_out.h"

namespace compatlab {

struct SlurmFlags {
  SlurmOptions options;
  bool submit = false;  // run submit.sh once written
};

// Adds the `slurm` subcommand to `app`; its options fill `flags`.
CLI::App* AddSlurmCommand(CLI::App& app, SlurmFlags& flags);

// Writes the Slurm jobs (and with --submit submits them), printing the files
// and submit.sh's output. Exit codes as in cli/common.h; a failed submit is 1.
int RunSlurm(const SlurmFlags& flags);

struct K8sFlags {
  K8sOptions options;
};

// Adds the `k8s` subcommand to `app`; its options fill `flags`.
CLI::App* AddK8sCommand(CLI::App& app, K8sFlags& flags);

// Writes the Kubernetes manifests, printing their paths. Exit codes as in cli/common.h.
int RunK8s(const K8sFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_SCALE_OUT_H_
