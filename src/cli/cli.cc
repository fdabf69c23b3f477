#include "cli/cli.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "cli/common.h"
#include "cli/compare.h"
#include "cli/diff.h"
#include "cli/errors.h"
#include "cli/fields.h"
#include "cli/hub_list.h"
#include "cli/matrix.h"
#include "cli/migrate.h"
#include "cli/query.h"
#include "cli/repro.h"
#include "cli/sweep.h"
#ifndef COMPATLAB_PORTABLE
#include "cli/export.h"
#include "cli/serve.h"
#endif
#include "sweep/listing.h"
#include "util/fs.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

// A `serve` limit flag, its default shown in --help (the server checks its range).
template <typename T>
void AddServeLimit(CLI::App* serve_cmd, const std::string& name, T& value,
                   const std::string& help) {
  serve_cmd->add_option(name, value, help)->capture_default_str();
}

struct SuitesFlags {
  std::string name;
  std::string format = "table";
  std::string python;
};

// `compatlab targets`: the shipped target profiles.
// diff's change thresholds (--steady-, --prepare-, --memory-threshold) on `cmd`,
// their help texts after `lead`.
void AddDiffThresholds(CLI::App* cmd, DiffThresholds& thresholds, const std::string& lead) {
  cmd->add_option("--steady-threshold", thresholds.steady,
                  lead + "relative steady_median_s increase that regresses")
      ->capture_default_str();
  cmd->add_option("--prepare-threshold", thresholds.prepare,
                  lead + "relative prepare_s increase that regresses")
      ->capture_default_str();
  cmd->add_option("--memory-threshold", thresholds.memory,
                  lead + "relative host memory increase that regresses")
      ->capture_default_str();
}

int RunTargets() {
  absl::StatusOr<std::string> table = TargetsTable(ProjectHome());
  if (!table.ok()) return Fail(kExitBadInput, table.status());
  std::cout << *table;
  return kExitOk;
}

// `compatlab suites [NAME]`: the shipped suites, or one expanded into its tests.
int RunSuites(const SuitesFlags& flags) {
  if (flags.name.empty()) {
    absl::StatusOr<std::string> table = SuitesTable(ProjectHome());
    if (!table.ok()) return Fail(kExitBadInput, table.status());
    std::cout << *table;
    return kExitOk;
  }
  PlanRequest request;
  request.suite = flags.name;
  ProbeEnv probe = ResolveProbeEnv(flags.python);
  request.base.python = probe.python;
  request.base.probe_dir = probe.probe_dir;
  size_t count = 0;
  absl::StatusOr<std::string> listing = SuitePlanListing(
      request, ProjectHome(), flags.format == "json" ? ListingFormat::kJson : ListingFormat::kTable,
      &count);
  if (!listing.ok()) {
    return Fail(absl::IsInternal(listing.status()) ? kExitFailure : kExitBadInput,
                listing.status());
  }
  std::cout << *listing;
  if (flags.format != "json") std::fprintf(stderr, "%zu tests\n", count);
  return kExitOk;
}

std::string JoinArgs(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) out += ' ';
    out += argv[i];
  }
  return out;
}

}  // namespace

int RunCli(int argc, char** argv) {
  CLI::App app{"compatlab: does this model run on this device and stack, and how well?"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(COMPATLAB_VERSION));

  SweepFlags sweep;
  sweep.command_line = JoinArgs(argc, argv);
  CLI::App* sweep_cmd = app.add_subcommand("sweep", "Run a suite's tests and store every result");
  sweep_cmd->add_option("--db", sweep.db, "SQLite store")->capture_default_str();
  sweep_cmd->add_option("--suite", sweep.plan.suite, "suite name or JSON file (default: smoke)");
  sweep_cmd
      ->add_option("--models", sweep.plan.models,
                   "model types and hub:ORG/NAME[@REVISION] ids, overriding the suite's list")
      ->delimiter(',');
  sweep_cmd->add_option("--size", sweep.plan.size,
                        "reduced (default: the config shrunk, its features kept) or full (the "
                        "real configuration, random weights)");
  sweep_cmd
      ->add_option("--heads", sweep.plan.heads,
                   "rule (default: one head class per model), all (every head class the "
                   "type registers, each its own test) or class names")
      ->delimiter(',');
  sweep_cmd->add_flag("--weights", sweep.plan.weights,
                      "hub: models with the repo's own weights (from the Hub cache or fetched)");
  sweep_cmd->add_option("--model-path", sweep.plan.model_path,
                        "a local checkpoint directory as the model");
  sweep_cmd->add_option("--model-code", sweep.plan.model_code,
                        "FILE.py:FUNCTION, your own modelling code as the model (a function "
                        "returning a model, or (model, inputs); or a PreTrainedModel subclass "
                        "built from its config): model id code:NAME@HASH");
  sweep_cmd->add_flag("--trust-remote-code", sweep.plan.trust_remote_code,
                      "let a --model-path checkpoint whose config.json names custom code "
                      "(auto_map) import and run it");
  sweep_cmd
      ->add_option("--baseline", sweep.plan.baseline,
                   "models (types or hub: ids) run beside the variant with the same targets, "
                   "modes, kinds, dtypes and shapes (then: compatlab compare)")
      ->delimiter(',');
  sweep_cmd->add_option("--kinds", sweep.plan.kinds, "test kinds (forward, generate, train, load)")
      ->delimiter(',');
  sweep_cmd
      ->add_option("--targets", sweep.plan.targets,
                   "target profiles by name (targets/NAME.json) or file, overriding the "
                   "suite's")
      ->delimiter(',');
  sweep_cmd->add_option("--modes", sweep.plan.modes, "eager, compile, export")->delimiter(',');
  sweep_cmd->add_option("--backend", sweep.plan.backend,
                        "compile backend instead of the profile's (inductor, aot_eager, "
                        "or module:function)");
  sweep_cmd->add_option("--dtypes", sweep.plan.dtypes, "float32, bfloat16, float16, float64")
      ->delimiter(',');
  sweep_cmd->add_option("--batch-sizes", sweep.plan.batch_sizes, "batch sizes, e.g. 1,4")
      ->delimiter(',');
  sweep_cmd->add_option("--seq-lens", sweep.plan.seq_lens, "sequence lengths, e.g. 128,512,2048")
      ->delimiter(',');
  sweep_cmd->add_option("--new-tokens", sweep.plan.new_tokens, "generate: new tokens (default 16)");
  sweep_cmd->add_option("--train-steps", sweep.plan.train_steps,
                        "train: optimizer steps (default 3)");
  sweep_cmd
      ->add_option("--rates", sweep.plan.load_rates,
                   "load: server arrival rates as multiples of the offline throughput "
                   "(default 0.5x,0.9x,1.5x)")
      ->delimiter(',');
  sweep_cmd->add_option("--slo", sweep.plan.load_slo,
                        "load: goodput objective ttft=SECONDS,itl=SECONDS (default: 3x the "
                        "p50s of the test's single_stream run)");
  sweep_cmd->add_option("--load-requests", sweep.plan.load_requests,
                        "load: requests per test (default 32)");
  sweep_cmd->add_flag("--warm", sweep.plan.warm,
                      "compile mode: rerun each compiled test in a second process on the same "
                      "compile cache and record warm preparation");
  sweep_cmd->add_option("--timeout", sweep.timeout_s, "per-test deadline in seconds");
  sweep_cmd->add_option("--max-measure-s", sweep.plan.max_measure_s,
                        "measurement budget per test in seconds, from the first warm-up call: "
                        "steady calls repeat until the median's interval is tight, and none "
                        "starts once it is spent and one ran (default 2; 0: the minimums only; "
                        "doc/probe.md)");
  sweep_cmd->add_option("--mem-limit", sweep.mem_limit,
                        "per-test memory limit (e.g. 8G, 512M; default 8G)");
  sweep_cmd->add_option("--mem-limit-method", sweep.plan.mem_limit_method,
                        "cgroup_v2, cgroup_v1 or rlimit (default: best available)");
  sweep_cmd->add_option("--jobs,-j", sweep.jobs, "tests run at once (default 1)");
  sweep_cmd->add_option("--grace", sweep.grace_s,
                        "seconds between SIGTERM and SIGKILL (default 2)");
  sweep_cmd->add_flag("--no-rerun-reduced", sweep.no_rerun_reduced,
                      "do not rerun a reduced model's failure at full size (or the milder "
                      "reduction) to prove it is the reduction's (doc/results-schema.md, "
                      "\"Blame\"); such failures then stay the model's");
  sweep_cmd->add_option("--python", sweep.plan.python, "interpreter that runs the probe");
  sweep_cmd->add_flag("--allow-profile-paths", sweep.allow_profile_paths,
                      "let the suite file name target profiles by path (a profile runs Python "
                      "in every test: trust the file first)");
  sweep_cmd->add_flag("--allow-stored-code", sweep.allow_stored_code,
                      "with --resume: run the interpreter, probe, profiles and code the stored "
                      "plan names even where they are not this installation's own (trust the "
                      "store first; doc/suites.md)");
  CLI::Option* resume = sweep_cmd
                            ->add_option("--resume", sweep.resume_id,
                                         "continue a sweep (default: the latest unfinished)")
                            ->expected(0, 1);

  CLI::App* targets_cmd = app.add_subcommand("targets", "List the target profiles (targets/)");

  HubListFlags hub_list;
  CLI::App* hub_list_cmd = app.add_subcommand(
      "hub-list",
      "Write a suite file of Hub ids from the Hub's list API (by downloads or trending)");
  AddHubListOptions(*hub_list_cmd, hub_list);

  SuitesFlags suites;
  CLI::App* suites_cmd = app.add_subcommand("suites", "List suites, or expand one into its tests");
  suites_cmd->add_option("name", suites.name, "suite to expand");
  suites_cmd->add_option("--format", suites.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
  suites_cmd->add_option("--python", suites.python, "interpreter that runs the probe");

  QueryFlags query;
  CLI::App* query_cmd = app.add_subcommand(
      "query", "Show stored results: filter, sort, limit; as a table, JSON or CSV");
  query_cmd->alias("runs");  // the short form
  AddQueryOptions(*query_cmd, query);

  MatrixFlags matrix;
  CLI::App* matrix_cmd = app.add_subcommand(
      "matrix", "Models x (target, mode): the current verdict of each, on one stack");
  AddMatrixOptions(*matrix_cmd, matrix);

#ifndef COMPATLAB_PORTABLE  // the portable build (doc/targets.md) has no Arrow
  ExportFlags export_flags;
  CLI::App* export_cmd = app.add_subcommand(
      "export", "Write stored results as Parquet, one file per torch/transformers version pair");
  export_cmd->add_option("--parquet", export_flags.parquet_dir, "output directory")->required();
  export_cmd->add_option("--db", export_flags.db, "SQLite store")->capture_default_str();
  AddRunFilterOptions(*export_cmd, export_flags.filter);

  ImportFlags import_flags;
  import_flags.command_line = JoinArgs(argc, argv);
  CLI::App* import_cmd = app.add_subcommand(
      "import",
      "Merge exported Parquet files (or directories of them), or other stores, into a store");
  import_cmd
      ->add_option("paths", import_flags.paths,
                   "Parquet files or directories (with --from-store: store files)")
      ->required();
  import_cmd->add_option("--db", import_flags.db, "SQLite store (created if missing)")
      ->capture_default_str();
  import_cmd->add_flag("--from-store", import_flags.from_store,
                       "the paths are compatlab stores (SQLite), e.g. one scripts/verify-cuda "
                       "brought back, not Parquet");
#endif

  DiffFlags diff;
  CLI::App* diff_cmd = app.add_subcommand(
      "diff", "Compare two sweeps or stacks; check or write expected-status files");
  diff_cmd->add_option("--db", diff.db, "SQLite store")->capture_default_str();
  diff_cmd->add_option("--base", diff.base,
                       "a sweep id, or stack versions: torch=V[,transformers=W]");
  diff_cmd->add_option("--head", diff.head, "the same, for the side under test")->required();
  diff_cmd->add_flag("--fail-on-regression", diff.fail_on_regression,
                     "exit 1 when anything regressed");
  diff_cmd->add_option("--write-expected", diff.write_expected,
                       "write head's statuses as an expected-status file");
  diff_cmd->add_option("--expected", diff.expected,
                       "check head against an expected-status file; exit 1 on any change");
  AddDiffThresholds(diff_cmd, diff.thresholds, "");

  CompareFlags compare;
  CLI::App* compare_cmd = app.add_subcommand(
      "compare", "A variant against its baseline, test by test (doc/compare.md)");
  compare_cmd->add_option("--db", compare.db, "SQLite store")->capture_default_str();
  compare_cmd
      ->add_option("--base", compare.base,
                   "the baseline: a model id (hf:llama), a sweep id, stack versions "
                   "(torch=V[,transformers=W]), or key=value pairs with model=ID")
      ->required();
  compare_cmd->add_option("--head", compare.head, "the same, for the variant")->required();
  compare_cmd->add_option("--format", compare.format, "table or json")->capture_default_str();
  AddDiffThresholds(compare_cmd, compare.thresholds, "as diff's: ");

  ErrorsFlags errors;
  CLI::App* errors_cmd = app.add_subcommand(
      "errors", "Failures grouped by error signature, with the knowledge base's explanations");
  errors_cmd->add_option("--db", errors.db, "SQLite store")->capture_default_str();
  AddRunFilterOptions(*errors_cmd, errors.filter);
  errors_cmd->add_option("--kb", errors.kb,
                         "knowledge file (default: knowledge/errors.json of the project)");
  errors_cmd->add_option("--format", errors.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();

  ReproFlags repro;
  CLI::App* repro_cmd = app.add_subcommand(
      "repro", "Print a standalone Python script (torch and transformers only) that reruns a run");
  repro_cmd->add_option("run_id", repro.run_id, "the run (run_id of query's JSON or CSV)")
      ->required();
  repro_cmd->add_option("--db", repro.db, "SQLite store")->capture_default_str();
  repro_cmd->add_option("--kb", repro.kb,
                        "knowledge file (default: knowledge/errors.json of the project)");
  repro_cmd->add_option("--python", repro.python, "interpreter that runs the probe");

#ifndef COMPATLAB_PORTABLE  // nor Boost.Beast
  ServeFlags serve;
  CLI::App* serve_cmd = app.add_subcommand(
      "serve", "Serve the store read-only: a JSON API and a web page (doc/api.md)");
  serve_cmd->add_option("--db", serve.db, "SQLite store")->capture_default_str();
  serve_cmd->add_option("--host", serve.host, "address to listen on")->capture_default_str();
  serve_cmd->add_option("--port", serve.port, "port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  serve_cmd->add_option("--threads", serve.threads, "worker threads that answer requests")
      ->check(CLI::Range(2, 256))
      ->capture_default_str();
  // The transport's limits (doc/api.md, "Connections and limits"), checked by the server.
  HttpLimits& limits = serve.limits;
  AddServeLimit(serve_cmd, "--header-timeout", limits.header_timeout_s,
                "seconds from a request's first byte to the end of its header");
  AddServeLimit(serve_cmd, "--body-timeout", limits.body_timeout_s,
                "seconds from the end of a request's header to the end of its body");
  AddServeLimit(serve_cmd, "--idle-timeout", limits.idle_timeout_s,
                "seconds a connection may wait for its next request");
  AddServeLimit(serve_cmd, "--write-timeout", limits.write_timeout_s,
                "seconds a client may take to read an answer");
  AddServeLimit(serve_cmd, "--max-connections", limits.max_connections,
                "connections open at once; the next one is answered 503");
  AddServeLimit(serve_cmd, "--keep-alive-requests", limits.keep_alive_requests,
                "requests answered on one connection before it is closed");
  AddServeLimit(serve_cmd, "--max-header-bytes", limits.max_header_bytes,
                "largest request line and header (431 past it)");
  AddServeLimit(serve_cmd, "--max-body-bytes", limits.max_body_bytes,
                "largest request body (413 past it)");
  serve_cmd->add_option("--python", serve.python, "interpreter that runs the probe");
#endif

  FieldsFlags fields;
  CLI::App* fields_cmd = AddFieldsCommand(app, fields);
  MigrateFlags migrate;
  CLI::App* migrate_cmd = AddMigrateCommand(app, migrate);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return Fail(kExitBadInput, std::string(e.what()));
  }
  if (*sweep_cmd) {
    sweep.resume = resume->count() > 0;
    return RunSweep(sweep);
  }
  if (*suites_cmd) return RunSuites(suites);
  if (*targets_cmd) return RunTargets();
  if (*hub_list_cmd) return RunHubList(hub_list);
  if (*fields_cmd) return RunFields(fields);
  if (*migrate_cmd) return RunMigrate(migrate);
  if (*query_cmd) return RunQuery(query);
  if (*matrix_cmd) return RunMatrix(matrix);
#ifndef COMPATLAB_PORTABLE
  if (*export_cmd) return RunExport(export_flags);
  if (*import_cmd) return RunImport(import_flags);
  if (*serve_cmd) return RunServe(serve);
#endif
  if (*diff_cmd) return RunDiff(diff);
  if (*compare_cmd) return RunCompareCommand(compare);
  if (*errors_cmd) return RunErrors(errors);
  if (*repro_cmd) return RunRepro(repro);
  return kExitBadInput;
}

}  // namespace compatlab
