#include "sweep/scale_out.h"

#include <sys/stat.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "core/limits.h"
#include "fmt/format.h"
#include "sweep/plan_file.h"
#include "util/fs.h"
#include "util/utf8.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

// OK when every character of `text` is one of [A-Za-z0-9] or `extra`: a value a
// script or manifest holds without quoting or escaping.
absl::Status CheckPlain(std::string_view text, std::string_view what, std::string_view extra) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [&](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
           extra.find(c) != std::string_view::npos;
  });
  if (plain) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "{} '{}' must be letters, digits and '{}' only (it goes into a job script unquoted)", what,
      EscapeControls(ToValidUtf8(TruncateForDisplay(text, 200)), false), extra));
}

// An absolute path a job script may hold as it is.
absl::StatusOr<std::string> ScriptPath(const fs::path& path, std::string_view what) {
  std::error_code ec;
  const std::string absolute = fs::absolute(path, ec).lexically_normal().string();
  if (ec) return absl::InvalidArgumentError(fmt::format("{}: {}", what, ec.message()));
  if (absl::Status s = CheckPlain(absolute, what, "/._+-"); !s.ok()) return s;
  return absolute;
}

// The plan file at `plan`, read as `sweep --plan` reads it, of `shards` shards.
absl::StatusOr<ShardedPlan> CheckedPlan(const fs::path& plan, int64_t shards) {
  absl::StatusOr<ShardedPlan> read = ReadPlanFile(plan);
  if (!read.ok()) return read.status();
  if (read->shards != shards) {
    return absl::InvalidArgumentError(
        fmt::format("--shards {}: plan file {} has {} shards (compatlab plan --shards)", shards,
                    plan.string(), read->shards));
  }
  return read;
}

// Writes `text` to `dir`/`name` (executable when `executable`) and notes it in `files`.
absl::Status WriteJobFile(const fs::path& dir, const std::string& name, const std::string& text,
                          bool executable, ScaleOutFiles& files) {
  const fs::path path = dir / name;
  if (absl::Status s = WriteFileAtomic(path, text); !s.ok()) {
    return absl::InternalError(std::string(s.message()));
  }
  if (executable && ::chmod(path.c_str(), 0755) != 0) {
    return absl::InternalError(fmt::format("cannot make {} executable", path.string()));
  }
  files.files.push_back(path);
  return absl::OkStatus();
}

// The #SBATCH lines every job of `o` shares: partition, time, memory, cpus.
std::string SharedSbatchLines(const SlurmOptions& o) {
  std::string lines;
  if (!o.partition.empty()) lines += fmt::format("#SBATCH --partition={}\n", o.partition);
  if (!o.time.empty()) lines += fmt::format("#SBATCH --time={}\n", o.time);
  if (!o.mem.empty()) lines += fmt::format("#SBATCH --mem={}\n", o.mem);
  if (o.cpus_per_task > 0) lines += fmt::format("#SBATCH --cpus-per-task={}\n", o.cpus_per_task);
  return lines;
}

// The shell lines of a merge of the `shards` stores `<dir>/shard-I.db` that exist into
// `merged`, then the missing tests (`compatlab sweeps`).
std::string MergeLines(const std::string& compatlab, const std::string& dir, int64_t shards,
                       const std::string& merged) {
  return fmt::format(
      "set -u\n"
      "stores=()\n"
      "for i in $(seq 0 {shards_1}); do\n"
      "  db=\"{dir}/shard-$i.db\"\n"
      "  if [ -f \"$db\" ]; then\n"
      "    # Opened read-write (nothing to migrate), so that the WAL of a task killed hard is\n"
      "    # folded in: merge reads every store immutable. Again for a few seconds while a\n"
      "    # process that has just ended may still hold the store.\n"
      "    for try in 1 2 3 4 5 6 7 8 9 10; do\n"
      "      {c} migrate --db \"$db\" >/dev/null || exit 1\n"
      "      [ -s \"$db-wal\" ] || break\n"
      "      sleep 1\n"
      "    done\n"
      "    stores+=(\"$db\")\n"
      "  else\n"
      "    echo \"compatlab: shard $i stored nothing ($db is missing)\"\n"
      "  fi\n"
      "done\n"
      "if [ ${{#stores[@]}} -eq 0 ]; then echo \"compatlab: no shard store to merge\"; exit 1; fi\n"
      "{c} merge {merged} \"${{stores[@]}}\" || exit 1\n"
      "exec {c} sweeps --db {merged}\n",
      fmt::arg("shards_1", shards - 1), fmt::arg("dir", dir), fmt::arg("c", compatlab),
      fmt::arg("merged", merged));
}

// The paths and values of `o`, checked for the scripts.
struct SlurmValues {
  std::string compatlab, plan, dir, merged;
};

absl::StatusOr<SlurmValues> CheckSlurmOptions(const SlurmOptions& o) {
  using Value = std::pair<const std::string*, std::string_view>;
  for (const auto& [value, what] :
       {Value{&o.partition, "--partition"}, Value{&o.time, "--time"}, Value{&o.mem, "--mem"}}) {
    if (value->empty()) continue;
    if (absl::Status s = CheckPlain(*value, what, ":._-"); !s.ok()) return s;
  }
  if (o.cpus_per_task < 0 || o.cpus_per_task > 4096) {
    return absl::InvalidArgumentError("--cpus-per-task must be from 1 to 4096");
  }
  SlurmValues v;
  using Path = std::tuple<const fs::path*, std::string_view, std::string*>;
  for (const auto& [path, what, into] :
       {Path{&o.compatlab, "the compatlab binary", &v.compatlab}, Path{&o.plan, "--plan", &v.plan},
        Path{&o.out, "--out", &v.dir}}) {
    absl::StatusOr<std::string> checked = ScriptPath(*path, what);
    if (!checked.ok()) return checked.status();
    *into = *checked;
  }
  absl::StatusOr<std::string> merged =
      ScriptPath(o.merged.empty() ? o.out / "merged.db" : o.merged, "--merged");
  if (!merged.ok()) return merged.status();
  v.merged = *merged;
  return v;
}

}  // namespace

absl::StatusOr<ScaleOutFiles> WriteSlurmJobs(const SlurmOptions& o) {
  absl::StatusOr<SlurmValues> v = CheckSlurmOptions(o);
  if (!v.ok()) return v.status();
  absl::StatusOr<ShardedPlan> plan = CheckedPlan(o.plan, o.shards);
  if (!plan.ok()) return plan.status();
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) return absl::InvalidArgumentError(fmt::format("--out {}: {}", v->dir, ec.message()));
  const std::string shared = SharedSbatchLines(o);
  const std::string shards = fmt::format(
      "#!/bin/bash\n"
      "# compatlab: plan {id}, {n} shards, one array task each (doc/scale-out.md). A task run\n"
      "# again (requeued) resumes its shard's sweep in its store: no test runs twice.\n"
      "#SBATCH --job-name=compatlab-shards\n"
      "#SBATCH --array=0-{n_1}\n"
      "#SBATCH --requeue\n"
      "#SBATCH --open-mode=append\n"
      "#SBATCH --output={dir}/shard-%a.log\n"
      "{shared}"
      "set -eu\n"
      "exec {c} sweep --plan {plan} --shard \"${{SLURM_ARRAY_TASK_ID}}/{n}\" "
      "--db \"{dir}/shard-${{SLURM_ARRAY_TASK_ID}}.db\"\n",
      fmt::arg("id", plan->plan_id), fmt::arg("n", o.shards), fmt::arg("n_1", o.shards - 1),
      fmt::arg("dir", v->dir), fmt::arg("shared", shared), fmt::arg("c", v->compatlab),
      fmt::arg("plan", v->plan));
  const std::string merge = fmt::format(
      "#!/bin/bash\n"
      "# compatlab: merges the shard stores of plan {id} into {merged}, then lists what is\n"
      "# missing; submitted with --dependency=afterany on the array job (submit.sh).\n"
      "#SBATCH --job-name=compatlab-merge\n"
      "#SBATCH --output={dir}/merge.log\n"
      "{shared}{lines}",
      fmt::arg("id", plan->plan_id), fmt::arg("merged", v->merged), fmt::arg("dir", v->dir),
      fmt::arg("shared", shared),
      fmt::arg("lines", MergeLines(v->compatlab, v->dir, o.shards, v->merged)));
  const std::string submit = fmt::format(
      "#!/bin/bash\n"
      "# Submits the shards' array job, then the merge job after it (afterany), with the\n"
      "# SLURM_CONF of the caller's cluster; prints both job ids.\n"
      "set -euo pipefail\n"
      "cd {dir}\n"
      "array=$(sbatch --parsable shards.sbatch)\n"
      "array=${{array%%;*}}\n"
      "merge=$(sbatch --parsable --dependency=afterany:\"$array\" merge.sbatch)\n"
      "merge=${{merge%%;*}}\n"
      "echo \"compatlab: array job $array ({n} tasks), merge job $merge (afterany:$array)\"\n",
      fmt::arg("dir", v->dir), fmt::arg("n", o.shards));
  ScaleOutFiles files;
  using File = std::tuple<std::string, const std::string*, bool>;
  for (const auto& [name, text, executable] :
       {File{"shards.sbatch", &shards, false}, File{"merge.sbatch", &merge, false},
        File{"submit.sh", &submit, true}}) {
    if (absl::Status s = WriteJobFile(o.out, name, *text, executable, files); !s.ok()) return s;
  }
  return files;
}

namespace {

// OK when the values of `o` go into a manifest as they are.
absl::Status CheckK8sOptions(const K8sOptions& o) {
  if (absl::Status s = CheckPlain(o.image, "--image", "/._:@-"); !s.ok()) return s;
  if (absl::Status s = CheckPlain(o.claim, "--claim", "-"); !s.ok()) return s;
  if (absl::Status s = CheckPlain(o.name, "--name", "-"); !s.ok()) return s;
  if (absl::Status s = CheckPlain(o.workdir, "--workdir", "/._-"); !s.ok()) return s;
  if (o.name.size() > 40 || o.claim.size() > 63 || o.workdir.front() != '/') {
    return absl::InvalidArgumentError(
        "--name is at most 40 characters, --claim 63, and --workdir an absolute path");
  }
  if (o.backoff_per_index < 0 || o.backoff_per_index > 100) {
    return absl::InvalidArgumentError("--retries must be from 0 to 100");
  }
  return CheckPlain(o.plan.filename().string(), "the plan file's name", "._-");
}

// The end of both Jobs' pod templates: the claim mounted at the work directory.
std::string K8sVolumes(const K8sOptions& o) {
  return fmt::format(
      "          volumeMounts:\n"
      "            - name: work\n"
      "              mountPath: {w}\n"
      "      volumes:\n"
      "        - name: work\n"
      "          persistentVolumeClaim:\n"
      "            claimName: {claim}\n",
      fmt::arg("w", o.workdir), fmt::arg("claim", o.claim));
}

// The Indexed Job of the shards of `plan_id`.
std::string K8sShardsJob(const K8sOptions& o, const std::string& plan_id) {
  return fmt::format(
      "# compatlab: plan {id}, {n} shards as an Indexed Job (doc/scale-out.md). Each pod runs\n"
      "# shard JOB_COMPLETION_INDEX; a retried pod resumes its shard's sweep in its store.\n"
      "apiVersion: batch/v1\n"
      "kind: Job\n"
      "metadata:\n"
      "  name: {name}-shards\n"
      "  labels:\n"
      "    compatlab.plan: \"{id12}\"\n"
      "spec:\n"
      "  completionMode: Indexed\n"
      "  completions: {n}\n"
      "  parallelism: {n}\n"
      "  backoffLimitPerIndex: {retries}\n"
      "  maxFailedIndexes: {n}\n"
      "  template:\n"
      "    spec:\n"
      "      restartPolicy: Never\n"
      "      containers:\n"
      "        - name: shard\n"
      "          image: {image}\n"
      "          command: [\"/bin/bash\", \"-c\"]\n"
      "          args:\n"
      "            - 'exec compatlab sweep --plan {w}/{plan} --shard "
      "\"${{JOB_COMPLETION_INDEX}}/{n}\" "
      "--db \"{w}/shard-${{JOB_COMPLETION_INDEX}}.db\"'\n"
      "{volumes}",
      fmt::arg("id", plan_id), fmt::arg("id12", plan_id.substr(0, 12)), fmt::arg("n", o.shards),
      fmt::arg("name", o.name), fmt::arg("retries", o.backoff_per_index),
      fmt::arg("image", o.image), fmt::arg("w", o.workdir),
      fmt::arg("plan", o.plan.filename().string()), fmt::arg("volumes", K8sVolumes(o)));
}

// The Job that merges the shard stores of `plan_id`.
std::string K8sMergeJob(const K8sOptions& o, const std::string& plan_id) {
  const std::string script = MergeLines("compatlab", o.workdir, o.shards, o.workdir + "/merged.db");
  std::string indented;
  for (size_t start = 0; start < script.size();) {
    const size_t end = script.find('\n', start);
    indented += "              " + script.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return fmt::format(
      "# compatlab: merges the shard stores of plan {id} into {w}/merged.db and lists what\n"
      "# is missing. Apply it once {name}-shards has ended (complete or failed):\n"
      "#   kubectl wait --for=condition=complete job/{name}-shards || true\n"
      "apiVersion: batch/v1\n"
      "kind: Job\n"
      "metadata:\n"
      "  name: {name}-merge\n"
      "  labels:\n"
      "    compatlab.plan: \"{id12}\"\n"
      "spec:\n"
      "  backoffLimit: 0\n"
      "  template:\n"
      "    spec:\n"
      "      restartPolicy: Never\n"
      "      containers:\n"
      "        - name: merge\n"
      "          image: {image}\n"
      "          command: [\"/bin/bash\", \"-c\"]\n"
      "          args:\n"
      "            - |\n"
      "{script}"
      "{volumes}",
      fmt::arg("id", plan_id), fmt::arg("id12", plan_id.substr(0, 12)), fmt::arg("w", o.workdir),
      fmt::arg("name", o.name), fmt::arg("image", o.image), fmt::arg("script", indented),
      fmt::arg("volumes", K8sVolumes(o)));
}

}  // namespace

absl::StatusOr<ScaleOutFiles> WriteK8sJobs(const K8sOptions& o) {
  if (absl::Status s = CheckK8sOptions(o); !s.ok()) return s;
  absl::StatusOr<ShardedPlan> plan = CheckedPlan(o.plan, o.shards);
  if (!plan.ok()) return plan.status();
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) return absl::InvalidArgumentError(fmt::format("--out: {}", ec.message()));
  ScaleOutFiles files;
  if (absl::Status s =
          WriteJobFile(o.out, "shards-job.yaml", K8sShardsJob(o, plan->plan_id), false, files);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          WriteJobFile(o.out, "merge-job.yaml", K8sMergeJob(o, plan->plan_id), false, files);
      !s.ok()) {
    return s;
  }
  return files;
}

}  // namespace compatlab
