#include "export/card.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "arrow/api.h"
#include "core/fields.h"
#include "core/limits.h"
#include "export/dataset.h"
#include "export/parquet_runs.h"
#include "fmt/format.h"
#include "util/hash.h"

namespace compatlab {
namespace {

struct StatusMeaning {
  TestStatus status;
  std::string_view meaning;
};

// One row per status (a test checks that every status has one, and that
// doc/dataset.md's table says the same).
constexpr StatusMeaning kStatusMeanings[] = {
    {TestStatus::kPass, "Every phase of the kind ran to its end (see the pass rule below)."},
    {TestStatus::kFailAccuracy,
     "It ran, but its numbers disagree with the float64 CPU reference beyond the tolerance; "
     "`status_detail` names the check."},
    {TestStatus::kFailToLoad,
     "The model could not be built: its modelling module, configuration, weights, or moving it "
     "to the device (`stage` import or build)."},
    {TestStatus::kFailToCompile,
     "`compile` mode: the compile backend failed on the first call (`stage` prepare)."},
    {TestStatus::kFailToRun,
     "An error while running the model, eager or compiled (`stage` prepare, steady or run)."},
    {TestStatus::kTimeout,
     "The test passed its deadline (`timeout_s`); the supervisor killed its process group."},
    {TestStatus::kCrash,
     "The test process was killed by a signal it did not ask for (`term_signal`; "
     "`status_detail` is its name, `SIGSEGV`)."},
    {TestStatus::kOom,
     "Out of memory: the memory cgroup's OOM killer fired, or an allocation failed against an "
     "rlimit (`mem_limit_bytes`, `mem_limit_method`)."},
    {TestStatus::kSkipped, "The test was not run; `status_detail` is the reason."},
    {TestStatus::kHarnessError,
     "compatlab itself failed, not the model: a fork failed, the child exited without a valid "
     "result, a protocol error, or a compile-mode test in which dynamo captured nothing (stage "
     "compile)."},
};

constexpr std::string_view kPassRule =
    R"(A run is `pass` exactly when all of these hold:

1. the test process ended before its deadline (`timeout_s`) — else `timeout`;
2. the memory cgroup's OOM-kill counter did not rise during the test — else `oom`;
3. the process was not killed by a signal — else `crash`;
4. it exited leaving a valid result object — else `harness_error`;
5. in that object the probe said `pass`, which it does only after every phase of
   the kind completed without an exception: for `forward`, importing the
   modelling class, building the model and its inputs (`build_s`), the first
   call (`prepare_s`) and the steady-state loop (`steady_median_s`,
   `steady_p90_s` over `steady_iters` iterations); and, where the kind checks
   accuracy against the float64 CPU reference, the result was within tolerance
   (else `fail_accuracy`).

The supervisor decides 1-4 from facts, in that order; the probe decides 5
(`doc/worker-protocol.md`).
)";

// `text` made safe for a markdown table cell: '|' escaped, no line break.
std::string Cell(std::string_view text) {
  std::string cell;
  for (char c : text) {
    if (c == '|') {
      cell += "\\|";
    } else if (c == '\n' || c == '\r') {
      cell += ' ';
    } else {
      cell += c;
    }
  }
  return cell;
}

// `path` as a config name the Hub takes (CardConfigs).
std::string ConfigNameOf(const std::filesystem::path& path) {
  std::string text = path.generic_string();
  if (text.size() > 8 && text.ends_with(".parquet")) text.resize(text.size() - 8);
  std::string name;
  for (char c : text) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    if (c == '/') {
      name += "--";
    } else {
      name += keep ? c : '-';
    }
  }
  return name;
}

std::string YamlHeader(const std::vector<CardConfig>& configs, const CardOptions& options) {
  std::string yaml = "---\n";
  yaml += fmt::format("license: {}\n", options.license);
  yaml += "pretty_name: compatlab results\n";
  yaml += "tags:\n- compatlab\n- pytorch\n- transformers\n- benchmark\n- model-compatibility\n";
  yaml += "configs:\n";
  yaml += fmt::format(
      "- config_name: {}\n  data_files:\n  - split: train\n    path: \"torch-*/*.parquet\"\n"
      "  default: true\n",
      kAllConfigName);
  for (const CardConfig& config : configs) {
    yaml += fmt::format("- config_name: {}\n  data_files:\n  - split: train\n    path: \"{}\"\n",
                        config.name, config.file.generic_string());
  }
  yaml += "---\n";
  return yaml;
}

std::string ConfigsSection(const std::vector<CardConfig>& configs, int64_t runs) {
  std::string text = fmt::format(
      "## Configs\n\nOne config per software stack, each one Parquet file; `{}` (the default) "
      "holds every file ({} runs).\n\n"
      "| config | torch | transformers | target stack | runs | file |\n"
      "| --- | --- | --- | --- | --- | --- |\n",
      kAllConfigName, runs);
  for (const CardConfig& c : configs) {
    const bool own_stack = !c.stack_versions.empty() && c.stack_versions != "{}";
    text += fmt::format("| `{}` | {} | {} | {} | {} | `{}` |\n", c.name, Cell(c.torch_version),
                        Cell(c.transformers_version),
                        own_stack ? "`" + Cell(c.stack_versions) + "`" : "", c.runs,
                        c.file.generic_string());
  }
  return text;
}

constexpr std::string_view kLoading = R"(## Loading

```python
from datasets import load_dataset
runs = load_dataset("ORG/NAME", name="all", split="train")  # or a local copy's directory

import pandas as pd, duckdb
frame = pd.read_parquet("torch-2.13.0+cpu/transformers-5.23.0.parquet")
duckdb.sql("SELECT model_type, status, count(*) FROM 'torch-*/*.parquet' GROUP BY ALL")
```

Each row is one test execution (a model, target, mode, kind, shape and dtype on one
stack). A nullable column is null for *not measured* or *not applicable*. The curves and
`kind_params` are lists (of numbers, of `{position, value}` and of `{key, value}` structs).

)";

std::string ColumnsSection() {
  std::string text =
      "## Columns\n\n"
      "Generated from compatlab's field table (schema version " +
      std::to_string(kSchemaVersion) +
      "); types are Arrow's. A meaning speaks of the store, which keeps the curves and "
      "`kind_params` as JSON text: here they are the lists of that text's elements (`kind_params`: "
      "one `{key, value}` entry per parameter, sorted by key).\n\n"
      "| column | type | unit | meaning |\n| --- | --- | --- | --- |\n";
  const std::vector<FieldDef>& fields = ResultFields();
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto& column = RunsArrowSchema()->field(static_cast<int>(i));
    text += fmt::format("| `{}` | {}{} | {} | {} |\n", fields[i].name,
                        Cell(column->type()->ToString()), column->nullable() ? ", nullable" : "",
                        Cell(fields[i].unit), Cell(fields[i].description));
  }
  return text + "\n";
}

std::string StatusesSection() {
  std::string text = "## Statuses\n\n| status | meaning |\n| --- | --- |\n";
  for (TestStatus status : AllTestStatuses()) {
    text += fmt::format("| `{}` | {} |\n", TestStatusName(status), TestStatusMeaning(status));
  }
  return text + "\n### The pass rule\n\n" + std::string(kPassRule) + "\n";
}

constexpr std::string_view kReproduce = R"(## Reproducing a row

```sh
compatlab import --from-hub ORG/NAME --db runs.db   # this dataset into a local store
compatlab repro RUN_ID --db runs.db > rerun.py       # a script that reruns the row's test
python rerun.py
```

The script rebuilds the row's model at the row's configuration and runs the same kind and
mode on the same target; a rerun's steady time is judged within the row's recorded interval
on the same `cpu_model` and stack. Imported rows are untrusted: their script keeps only an
allow-list of compile settings.

)";

std::string PrivacySection(const CardPrivacy& privacy) {
  if (privacy.kept) {
    return "## What was left out\n\nNothing: exported with `--keep-private`, so the rows keep "
           "the host name, user names, local paths, output tails and tracebacks as they were "
           "stored.\n";
  }
  return fmt::format(
      "## What was left out\n\n"
      "Private text of the machine that exported it was scrubbed from every text column "
      "(compatlab's scrubber, doc/dataset.md, \"Publishing\"); {} runs were changed:\n\n"
      "- the virtual environment's path (and any `.../site-packages` prefix) became `<venv>`;\n"
      "- compile caches (compatlab's, inductor's, Triton's), the Hugging Face cache and "
      "`~/.cache` became `<cache>`;\n"
      "- the compatlab checkout became `<checkout>`;\n"
      "- home directories (`$HOME`, `/home/NAME`, `/Users/NAME` and the superuser's) became "
      "`<home>`;\n"
      "- the user's name became `<user>` and the host's name `<host>` (the `host` column "
      "included).\n\n"
      "Output tails and tracebacks are kept with these rewrites. A row whose test fields held "
      "such text has the `test_id` of its scrubbed fields.\n",
      privacy.scrubbed_runs);
}

}  // namespace

std::string_view TestStatusMeaning(TestStatus status) {
  for (const StatusMeaning& row : kStatusMeanings) {
    if (row.status == status) return row.meaning;
  }
  return "";
}

std::string_view PassRuleText() { return kPassRule; }

absl::Status CheckLicenseId(std::string_view license) {
  const bool ok = !license.empty() && license.size() <= 64 &&
                  std::all_of(license.begin(), license.end(), [](char c) {
                    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
                  });
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "--license '{}': not a Hub license id (letters, digits, '.', '_', '-'; cc-by-4.0, mit, "
      "other)",
      TruncateForDisplay(license, 64)));
}

std::vector<CardConfig> CardConfigs(const std::vector<RunRecord>& runs) {
  std::map<std::filesystem::path, CardConfig> by_file;
  for (const RunRecord& run : runs) {
    const std::filesystem::path file = StackFilePath(
        run.result.torch_version, run.result.transformers_version, run.result.stack_versions);
    CardConfig& config = by_file[file];
    if (config.runs == 0) {
      config.file = file;
      config.torch_version = run.result.torch_version;
      config.transformers_version = run.result.transformers_version;
      config.stack_versions = run.result.stack_versions;
    }
    ++config.runs;
  }
  std::vector<CardConfig> configs;
  std::set<std::string> taken = {std::string(kAllConfigName)};
  for (auto& [file, config] : by_file) {
    config.name = ConfigNameOf(file);
    if (!taken.insert(config.name).second) {
      config.name += "-" + Sha256Hex(file.generic_string()).substr(0, 8);
      taken.insert(config.name);
    }
    configs.push_back(std::move(config));
  }
  return configs;
}

std::string DatasetCard(const std::vector<RunRecord>& runs, const CardOptions& options) {
  const std::vector<CardConfig> configs = CardConfigs(runs);
  std::set<std::string> models;
  for (const RunRecord& run : runs) models.insert(run.spec.model_id);
  std::string card = YamlHeader(configs, options);
  card += fmt::format(
      "\n# compatlab results\n\n"
      "{} test executions of {} distinct models, exported by compatlab (schema version {}): does "
      "each "
      "model run on its target and stack, how long it takes to get ready and to run, how much "
      "memory it needs, are its numbers right, and what fell back to the CPU.\n\n",
      runs.size(), models.size(), kSchemaVersion);
  card += ConfigsSection(configs, static_cast<int64_t>(runs.size())) + "\n";
  card += kLoading;
  card += ColumnsSection();
  card += StatusesSection();
  card += kReproduce;
  card += PrivacySection(options.privacy);
  return card;
}

}  // namespace compatlab
