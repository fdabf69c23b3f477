#include "cli/scale_out.h"

#include <iostream>

#include "cli/common.h"
#include "util/subprocess.h"

namespace compatlab {
namespace {

// The options a job of either kind needs: the plan file and its shard count.
void AddShardOptions(CLI::App& cmd, std::filesystem::path& plan, int64_t& shards,
                     std::filesystem::path& out) {
  cmd.add_option("--plan", plan, "the plan file (compatlab plan --out)")->required();
  cmd.add_option("--shards", shards, "its shard count (compatlab plan --shards)")->required();
  cmd.add_option("--out", out, "the directory to write into (created)")->required();
}

// Prints the paths of `files`, one a line.
void PrintFiles(const ScaleOutFiles& files) {
  for (const std::filesystem::path& path : files.files)
    std::cout << "wrote " << path.string() << "\n";
}

}  // namespace

CLI::App* AddSlurmCommand(CLI::App& app, SlurmFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "slurm", "Write a plan file's shards as a Slurm array job and a merge job after it");
  SlurmOptions& o = flags.options;
  AddShardOptions(*cmd, o.plan, o.shards, o.out);
  cmd->add_option("--merged", o.merged, "the merged store (default: OUT/merged.db)");
  cmd->add_option("--partition", o.partition, "sbatch --partition of every job");
  cmd->add_option("--time", o.time, "sbatch --time of every job (e.g. 02:00:00)");
  cmd->add_option("--mem", o.mem, "sbatch --mem of every job (e.g. 16G)");
  cmd->add_option("--cpus-per-task", o.cpus_per_task, "sbatch --cpus-per-task of every job");
  cmd->add_flag("--submit", flags.submit,
                "then run OUT/submit.sh (sbatch, with the caller's SLURM_CONF)");
  return cmd;
}

int RunSlurm(const SlurmFlags& flags) {
  SlurmOptions options = flags.options;
  std::error_code ec;
  options.compatlab = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return Fail(kExitFailure, "cannot find the compatlab binary (/proc/self/exe)");
  absl::StatusOr<ScaleOutFiles> files = WriteSlurmJobs(options);
  if (!files.ok()) return Fail(ExitCodeOf(files.status()), files.status());
  PrintFiles(*files);
  if (!flags.submit) return kExitOk;
  absl::StatusOr<CommandResult> submitted =
      RunCommand({"bash", (options.out / "submit.sh").string()}, {}, 120);
  if (!submitted.ok()) return Fail(kExitFailure, submitted.status());
  std::cout << submitted->stdout_text;
  std::cerr << submitted->stderr_text;
  if (submitted->exit_code != 0) {
    return Fail(kExitFailure, "submit.sh failed (sbatch's message above)");
  }
  return kExitOk;
}

CLI::App* AddK8sCommand(CLI::App& app, K8sFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "k8s", "Write a plan file's shards as a Kubernetes Indexed Job and a merge Job");
  K8sOptions& o = flags.options;
  AddShardOptions(*cmd, o.plan, o.shards, o.out);
  cmd->add_option("--image", o.image, "a container image with compatlab and its probe")->required();
  cmd->add_option("--claim", o.claim,
                  "a PersistentVolumeClaim every pod mounts (the plan file, the stores)")
      ->required();
  cmd->add_option("--workdir", o.workdir, "where the claim is mounted")->capture_default_str();
  cmd->add_option("--name", o.name, "the Jobs' name prefix")->capture_default_str();
  cmd->add_option("--retries", o.backoff_per_index, "retries of one shard (backoffLimitPerIndex)")
      ->capture_default_str();
  return cmd;
}

int RunK8s(const K8sFlags& flags) {
  absl::StatusOr<ScaleOutFiles> files = WriteK8sJobs(flags.options);
  if (!files.ok()) return Fail(ExitCodeOf(files.status()), files.status());
  PrintFiles(*files);
  return kExitOk;
}

}  // namespace compatlab
