#include "export/transfer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <utility>

#include "core/limits.h"
#include "export/card.h"
#include "export/parquet_ops.h"
#include "export/scrub.h"
#include "export/staging.h"
#include "fmt/format.h"
#include "store/artifacts.h"
#include "store/record_json.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/status.h"

namespace compatlab {
namespace {

// The target store of an import. A store that exists is opened; a new one is
// created under a temporary name beside it and only appears under its name
// once the import succeeded (Commit): an import into a new store that fails,
// a full disk included, leaves nothing behind.
class ImportTarget {
 public:
  explicit ImportTarget(std::filesystem::path db) : db_(std::move(db)) {}
  ImportTarget(const ImportTarget&) = delete;
  ImportTarget& operator=(const ImportTarget&) = delete;
  ~ImportTarget() {
    store_.reset();
    if (!temporary_.empty()) RemoveTemporary();
  }

  absl::StatusOr<Store*> Open() {
    if (absl::Status s = CheckStorePath(db_); !s.ok()) return s;
    std::error_code ec;
    std::filesystem::path path = db_;
    if (!std::filesystem::exists(db_, ec)) {
      const std::filesystem::path dir = db_.has_parent_path() ? db_.parent_path() : ".";
      temporary_ = dir / ("." + db_.filename().string() + ".import-" + RandomHex(6));
      path = temporary_;
    }
    absl::StatusOr<std::unique_ptr<Store>> opened = Store::Open(path, OpenMode::kReadWriteCreate);
    if (!opened.ok()) {
      absl::Status status = Recode(opened.status(), absl::StatusCode::kFailedPrecondition);
      if (temporary_.empty()) return status;
      return absl::Status(status.code(),
                          fmt::format("{}: {}", db_.string(), std::string(status.message())));
    }
    store_ = *std::move(opened);
    return store_.get();
  }

  // After a successful merge: a new store takes its name (never replacing a
  // file that appeared there meanwhile).
  absl::Status Commit() {
    if (temporary_.empty()) return absl::OkStatus();
    store_.reset();  // closes it: the WAL is checkpointed into the file and removed
    if (::link(temporary_.c_str(), db_.c_str()) != 0) {
      return absl::InternalError(fmt::format("cannot create {}: {}; nothing imported", db_.string(),
                                             std::strerror(errno)));
    }
    RemoveTemporary();
    return absl::OkStatus();
  }

 private:
  void RemoveTemporary() {
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      std::filesystem::remove(temporary_.string() + suffix, ignored);
    }
    temporary_.clear();
  }

  const std::filesystem::path db_;
  std::filesystem::path temporary_;  // "" unless a new store is being made
  std::unique_ptr<Store> store_;
};

// A failed merge as an import reports it: a conflict with the store keeps its
// code (bad input), anything else is Internal; nothing was imported either way.
absl::Status MergeFailed(const absl::Status& status) {
  const absl::StatusCode code = status.code();
  const bool conflict =
      code == absl::StatusCode::kAlreadyExists || code == absl::StatusCode::kInvalidArgument;
  return absl::Status(conflict ? code : absl::StatusCode::kInternal,
                      std::string(status.message()) + "; nothing imported");
}

// Where an import into `db` stages its runs: beside the target.
std::filesystem::path StagingDir(const std::filesystem::path& db) {
  return db.has_parent_path() ? db.parent_path() : std::filesystem::path(".");
}

// The room a stored row needs beyond its text (numbers, the record header):
// the row limit of a source store is the import's text limit plus this.
constexpr int64_t kRowOverheadBytes = int64_t{64} << 10;

// Stages every run of the store at `source`, opened read-only and immutable
// and read one run at a time within doc/limits.md's import limits: a stored
// row over the per-run limit is refused before it is loaded
// (Store::LimitRowBytes), and the runs and text of all sources together
// (`runs`, `text_bytes`) are bounded as a Parquet import's are.
// InvalidArgument naming the source and the run otherwise.
absl::Status StageStore(const std::filesystem::path& source, const std::filesystem::path& target,
                        ImportStaging& staging, int64_t& runs, int64_t& text_bytes,
                        const Store::OnStoredRun& on_stored = nullptr) {
  std::error_code ec;
  if (std::filesystem::exists(target, ec) && std::filesystem::equivalent(source, target, ec)) {
    return absl::InvalidArgumentError(
        fmt::format("{} is the target store itself", source.string()));
  }
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(source, OpenMode::kReadOnlyImmutable);
  if (!store.ok()) return Recode(store.status(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<int64_t> count = (*store)->CountRuns(RunFilter{});
  if (!count.ok()) return Recode(count.status(), absl::StatusCode::kInternal);
  if (*count > kMaxImportRuns - runs) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: the import holds more than {} runs (doc/limits.md)", source.string(), kMaxImportRuns));
  }
  // The rowids alone (8 bytes a run): no row is loaded to list them.
  std::vector<int64_t> rowids;
  rowids.reserve(static_cast<size_t>(*count));
  absl::Status listed = (*store)->ScanFields(
      {}, 0, [&rowids](int64_t rowid, std::vector<FieldValue>&) { rowids.push_back(rowid); });
  if (!listed.ok()) return Recode(listed, absl::StatusCode::kInternal);
  (*store)->LimitRowBytes(kMaxImportRowBytes + kRowOverheadBytes);
  size_t at = 0;
  auto next = [&](std::vector<RunRecord>& batch) -> absl::Status {
    for (;
         at < rowids.size() && static_cast<int64_t>(batch.size()) < ImportStaging::kMergeBatchRuns;
         ++at) {
      const int64_t rowid = rowids[at];
      absl::StatusOr<std::vector<RunRecord>> read = (*store)->RunsByRowid({rowid}, true);
      if (absl::IsOutOfRange(read.status())) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: the run at rowid {} is stored in more than {} bytes, over the limit "
            "of {} bytes of text per run (doc/limits.md)",
            source.string(), rowid, kMaxImportRowBytes + kRowOverheadBytes, kMaxImportRowBytes));
      }
      if (!read.ok()) return Recode(read.status(), absl::StatusCode::kInternal);
      for (RunRecord& run : *read) {
        absl::StatusOr<int64_t> bytes = CheckImportedRun(run);
        if (!bytes.ok()) {
          return absl::InvalidArgumentError(fmt::format("{}: run {}: {}", source.string(),
                                                        TruncateForDisplay(run.run_id, 100),
                                                        std::string(bytes.status().message())));
        }
        text_bytes += *bytes;
        if (text_bytes > kMaxImportBytes) {
          return absl::InvalidArgumentError(
              fmt::format("{}: the import's text is over {} bytes (doc/limits.md)", source.string(),
                          kMaxImportBytes));
        }
        ++runs;
        batch.push_back(std::move(run));
      }
    }
    return absl::OkStatus();
  };
  return staging.Stage(next, source.string(), on_stored).status();
}

// OK when `stored` (the run a merge found under `run`'s id) is `run`; else
// InvalidArgument: one run id never names two different runs.
absl::Status CheckSameRun(const RunRecord& run,
                          const absl::StatusOr<std::vector<RunRecord>>& stored,
                          const std::string& where) {
  if (!stored.ok()) return stored.status();
  if (!stored->empty() && RunRecordToJson(stored->front()) == RunRecordToJson(run)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      fmt::format("run id {} is stored in {} with different content; a run id names one run "
                  "only (doc/scale-out.md)",
                  run.run_id, where));
}

// Stages every run of the stores `sources` (StageStore; the limits over all of them
// together); with `same_content`, a run id staged twice must name the same run.
absl::Status StageStores(const std::vector<std::filesystem::path>& sources,
                         const std::filesystem::path& target, ImportStaging& staging,
                         bool same_content) {
  int64_t runs = 0;
  int64_t text_bytes = 0;
  Store::OnStoredRun same = nullptr;
  if (same_content) {
    same = [&staging](const RunRecord& run, int64_t rowid) {
      return CheckSameRun(run, staging.StagedRuns({rowid}), "another source");
    };
  }
  for (const std::filesystem::path& source : sources) {
    if (absl::Status s = StageStore(source, target, staging, runs, text_bytes, same); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

// The sweeps of the store at `source` with their whole plans (specs only),
// counted into `planned` against kMaxImportRuns.
absl::StatusOr<std::vector<MergedSweep>> SourceSweeps(const std::filesystem::path& source,
                                                      int64_t& planned) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(source, OpenMode::kReadOnlyImmutable);
  if (!store.ok()) return Recode(store.status(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<std::vector<SweepInfo>> sweeps = (*store)->ListSweeps();
  if (!sweeps.ok()) return Recode(sweeps.status(), absl::StatusCode::kInternal);
  std::vector<MergedSweep> merged;
  for (SweepInfo& info : *sweeps) {
    planned += info.planned;
    if (planned > kMaxImportRuns) {
      return absl::InvalidArgumentError(
          fmt::format("{}: the merge plans more than {} tests (doc/limits.md)", source.string(),
                      kMaxImportRuns));
    }
    absl::StatusOr<std::vector<TestSpec>> plan = (*store)->PlannedTests(info.sweep_id);
    if (!plan.ok()) return Recode(plan.status(), absl::StatusCode::kInternal);
    merged.push_back({std::move(info), *std::move(plan)});
  }
  return merged;
}

// OK when every sweep of `sweeps` (with the source each came from) is of one plan.
absl::Status CheckOnePlan(const std::vector<std::pair<std::string, SweepInfo>>& sweeps) {
  for (const auto& [where, sweep] : sweeps) {
    const auto& [first_where, first] = sweeps.front();
    if (sweep.plan_id == first.plan_id) continue;
    auto shown = [](const std::string& id) { return id.empty() ? std::string("(none)") : id; };
    return absl::InvalidArgumentError(fmt::format(
        "{}: sweep {} is of plan {}, but sweep {} of {} is of plan {}; merging stores of "
        "different plans needs --allow-mixed",
        where, sweep.sweep_id, shown(sweep.plan_id), first.sweep_id, first_where,
        shown(first.plan_id)));
  }
  return absl::OkStatus();
}

// OK when `dir` is missing or an empty directory: a published directory
// holds exactly the files its card describes.
absl::Status CheckPublishDir(const std::filesystem::path& dir) {
  std::error_code error;
  if (!std::filesystem::exists(dir, error)) return absl::OkStatus();
  if (std::filesystem::is_directory(dir, error) && std::filesystem::is_empty(dir, error) &&
      !error) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      fmt::format("--publish {}: not an empty directory; name a new or empty one (a published "
                  "dataset holds exactly what its card describes)",
                  dir.string()));
}

}  // namespace

namespace {

// The traces of `runs` found in the store's artifact directory `artifacts`, copied into
// <dir>/kDatasetTraceDir (a digest whose file is missing is skipped); how many.
absl::StatusOr<int64_t> ExportTraces(const std::vector<RunRecord>& runs,
                                     const std::filesystem::path& artifacts,
                                     const std::filesystem::path& dir) {
  std::set<std::string> done;
  for (const RunRecord& run : runs) {
    const std::string& digest = run.result.profile_trace_sha256;
    if (digest.empty() || done.contains(digest)) continue;
    absl::StatusOr<std::filesystem::path> path = ArtifactPath(artifacts, digest);
    std::error_code ec;
    if (!path.ok() || !std::filesystem::exists(*path, ec)) continue;
    if (std::filesystem::file_size(*path, ec) > static_cast<uintmax_t>(kMaxProfileTraceBytes)) {
      continue;
    }
    absl::StatusOr<std::string> data = ReadFile(*path);
    if (!data.ok()) return data.status();
    absl::StatusOr<KeptArtifact> kept =
        StoreArtifact(dir / kDatasetTraceDir, *data, kMaxProfileTraceBytes);
    if (!kept.ok()) return kept.status();
    done.insert(digest);
  }
  return static_cast<int64_t>(done.size());
}

// One dataset trace file, read and checked (CheckDatasetTraces).
absl::StatusOr<std::string> ReadDatasetTrace(const std::filesystem::path& file) {
  const std::string name = file.filename().string();
  const std::string digest = name.substr(0, name.find('.'));
  auto bad = [&file](std::string_view why) {
    return absl::InvalidArgumentError(fmt::format("profile trace {}: {}", file.string(), why));
  };
  if (!ArtifactPath(".", digest).ok() || name != digest + ".json.gz") {
    return bad("not named <sha256>.json.gz");
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec) ||
      std::filesystem::file_size(file, ec) > static_cast<uintmax_t>(kMaxProfileTraceBytes)) {
    return bad(
        fmt::format("not a file of at most {} bytes (doc/limits.md)", kMaxProfileTraceBytes));
  }
  absl::StatusOr<std::string> data = ReadFile(file);
  if (!data.ok()) return data.status();
  if (Sha256Hex(*data) != digest) return bad("its content does not hash to its name");
  if (!data->starts_with("\x1f\x8b")) return bad("not gzip");
  return data;
}

}  // namespace

absl::StatusOr<std::vector<std::filesystem::path>> CheckDatasetTraces(
    const std::vector<std::filesystem::path>& paths, int64_t max_total_bytes) {
  std::vector<std::filesystem::path> traces;
  int64_t total = 0;
  for (const std::filesystem::path& path : paths) {
    const std::filesystem::path dir = path / kDatasetTraceDir;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (traces.size() >= static_cast<size_t>(kMaxImportRuns)) {
        return absl::InvalidArgumentError("more profile traces than an import takes");
      }
      absl::StatusOr<std::string> data = ReadDatasetTrace(entry.path());
      if (!data.ok()) return data.status();
      total += static_cast<int64_t>(data->size());
      if (total > max_total_bytes) {
        return absl::InvalidArgumentError(
            fmt::format("profile traces of more than {} bytes in all: more than an import takes "
                        "(doc/limits.md)",
                        max_total_bytes));
      }
      traces.push_back(entry.path());
    }
    if (ec) return absl::InternalError(fmt::format("{}: {}", dir.string(), ec.message()));
  }
  return traces;
}

namespace {

// Merges checked op results into the store at `db` (created if missing), one op sweep
// at a time (Store::MergeOpResults).
absl::StatusOr<ImportResult> ImportOpResults(const std::filesystem::path& db,
                                             const std::vector<OpSweepResults>& sweeps) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(db, OpenMode::kReadWriteCreate);
  if (!store.ok()) return Recode(store.status(), absl::StatusCode::kFailedPrecondition);
  ImportResult result;
  for (const OpSweepResults& s : sweeps) {
    absl::StatusOr<int64_t> added = (*store)->MergeOpResults(s.sweep, s.results);
    if (!added.ok()) return added.status();
    result.op_results += *added;
  }
  return result;
}

// Every op sweep of `store` and its results, written to <dir>/op_results.ops.parquet
// when there is one (doc/dataset.md, "Op coverage").
absl::Status ExportOpResults(Store& store, const std::filesystem::path& dir,
                             ExportSummary* summary) {
  absl::StatusOr<std::vector<OpSweepInfo>> sweeps = store.ListOpSweeps();
  if (!sweeps.ok()) return Recode(sweeps.status(), absl::StatusCode::kInternal);
  if (sweeps->empty()) return absl::OkStatus();
  std::vector<OpSweepResults> all;
  for (const OpSweepInfo& sweep : *sweeps) {
    absl::StatusOr<std::vector<OpResult>> results = store.OpResults(sweep.op_sweep_id);
    if (!results.ok()) return Recode(results.status(), absl::StatusCode::kInternal);
    summary->op_results += static_cast<int64_t>(results->size());
    all.push_back({sweep, *std::move(results)});
  }
  absl::StatusOr<std::string> bytes = OpResultsToParquet(all);
  if (!bytes.ok()) return bytes.status();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  summary->op_results_file = dir / (std::string("op_results") + std::string(kOpResultsFileSuffix));
  return Recode(WriteFileAtomic(summary->op_results_file, *bytes), absl::StatusCode::kInternal);
}

// The op results files under `paths` (kOpResultsFileSuffix), each read and checked,
// kMaxImportOpResults rows in all; InvalidArgument naming the first bad one.
absl::StatusOr<std::vector<OpSweepResults>> ReadOpResultsFiles(
    const std::vector<std::filesystem::path>& paths) {
  std::vector<OpSweepResults> all;
  int64_t rows = 0;
  for (const std::filesystem::path& path : paths) {
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file() &&
            it->path().filename().string().ends_with(kOpResultsFileSuffix)) {
          files.push_back(it->path());
        }
      }
    } else if (path.filename().string().ends_with(kOpResultsFileSuffix)) {
      files.push_back(path);
    }
    std::sort(files.begin(), files.end());
    for (const std::filesystem::path& file : files) {
      const uintmax_t size = std::filesystem::file_size(file, ec);
      if (ec || size > static_cast<uintmax_t>(kMaxImportOpFileBytes)) {
        return absl::InvalidArgumentError(
            fmt::format("{}: unreadable or over {} bytes", file.string(), kMaxImportOpFileBytes));
      }
      absl::StatusOr<std::string> bytes = ReadFile(file);
      if (!bytes.ok()) return bytes.status();
      absl::StatusOr<std::vector<OpSweepResults>> read =
          OpResultsFromParquet(*bytes, file.string(), kMaxImportOpResults - rows);
      if (!read.ok()) return read.status();
      for (OpSweepResults& s : *read) {
        rows += static_cast<int64_t>(s.results.size());
        all.push_back(std::move(s));
      }
    }
  }
  return all;
}

}  // namespace

absl::StatusOr<ExportSummary> ExportStore(const ExportOptions& options) {
  if (options.publish) {  // first: its message names --publish
    if (absl::Status s = CheckLicenseId(options.license); !s.ok()) return s;
    if (absl::Status s = CheckPublishDir(options.dir); !s.ok()) return s;
    if (options.traces && !options.keep_private) {  // the scrubber does not read traces
      return absl::InvalidArgumentError(
          "--publish --traces: profile traces hold this machine's paths in their Python "
          "stacks and are not scrubbed; publish without --traces, or add --keep-private");
    }
  }
  if (absl::Status s = CheckExportDir(options.dir); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options.db, OpenMode::kReadOnly);
  if (!store.ok()) return Recode(store.status(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<std::vector<RunRecord>> runs = (*store)->QueryRuns(options.filter);
  if (!runs.ok()) return Recode(runs.status(), absl::StatusCode::kInternal);
  ExportSummary summary;
  if (!options.publish) {
    if (absl::Status s = ExportOpResults(**store, options.dir, &summary); !s.ok()) return s;
  }
  if (runs->empty()) return summary;
  std::vector<ExtraExportFile> extra;
  if (options.publish) {
    CardOptions card;
    card.license = options.license;
    card.privacy.kept = options.keep_private;
    if (!options.keep_private) {
      const PrivateText private_text = ThisMachinesPrivateText();
      for (RunRecord& run : *runs) summary.scrubbed_runs += ScrubRun(run, private_text) ? 1 : 0;
    }
    card.privacy.scrubbed_runs = summary.scrubbed_runs;
    extra.push_back({"README.md", DatasetCard(*runs, card)});
  }
  absl::StatusOr<std::vector<ExportedFile>> files = ExportRuns(*runs, options.dir, extra);
  if (!files.ok()) return Recode(files.status(), absl::StatusCode::kInternal);
  summary.runs = static_cast<int64_t>(runs->size());
  summary.files = *std::move(files);
  if (options.traces) {
    absl::StatusOr<int64_t> traces = ExportTraces(*runs, ArtifactDir(options.db), options.dir);
    if (!traces.ok()) return Recode(traces.status(), absl::StatusCode::kInternal);
    summary.traces = *traces;
  }
  return summary;
}

absl::StatusOr<ImportResult> ImportIntoStore(const ImportOptions& options) {
  absl::StatusOr<std::vector<std::filesystem::path>> files = CollectParquetFiles(options.paths);
  if (!files.ok()) return files.status();
  absl::StatusOr<std::vector<OpSweepResults>> op_results = ReadOpResultsFiles(options.paths);
  if (!op_results.ok()) return op_results.status();
  if (files->empty() && !op_results->empty()) return ImportOpResults(options.db, *op_results);
  if (files->empty()) return absl::InvalidArgumentError("no .parquet files under the given paths");
  absl::StatusOr<std::vector<std::filesystem::path>> traces = CheckDatasetTraces(options.paths);
  if (!traces.ok()) return traces.status();
  ImportTarget target(options.db);
  bool opened = false;
  auto open_store = [&target, &opened]() -> absl::StatusOr<Store*> {
    absl::StatusOr<Store*> store = target.Open();
    opened = store.ok();
    return store;
  };
  absl::StatusOr<ImportResult> result =
      ImportFiles(open_store, *files, options.args, StagingDir(options.db));
  if (!result.ok() && opened) return MergeFailed(result.status());
  if (result.ok() && result->rejected.empty()) {
    if (absl::Status s = target.Commit(); !s.ok()) return s;
    for (const std::filesystem::path& trace : *traces) {  // checked above
      absl::StatusOr<std::string> data = ReadDatasetTrace(trace);
      if (!data.ok()) return data.status();
      absl::StatusOr<KeptArtifact> kept =
          StoreArtifact(ArtifactDir(options.db), *data, kMaxProfileTraceBytes);
      if (!kept.ok()) return kept.status();
      ++result->traces;
    }
    if (!op_results->empty()) {
      absl::StatusOr<ImportResult> ops = ImportOpResults(options.db, *op_results);
      if (!ops.ok()) return ops.status();
      result->op_results = ops->op_results;
    }
  }
  return result;
}

absl::StatusOr<MergeStats> ImportStoresIntoStore(const ImportOptions& options) {
  if (absl::Status s = CheckStorePath(options.db); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<ImportStaging>> staging =
      ImportStaging::Create(StagingDir(options.db));
  if (!staging.ok()) return staging.status();
  if (absl::Status s = StageStores(options.paths, options.db, **staging, false); !s.ok()) return s;
  ImportTarget target(options.db);
  absl::StatusOr<Store*> store = target.Open();
  if (!store.ok()) return store.status();
  absl::StatusOr<MergeStats> merged = (*staging)->MergeInto(**store, options.args);
  if (!merged.ok()) return MergeFailed(merged.status());
  if (absl::Status s = target.Commit(); !s.ok()) return s;
  return merged;
}

}  // namespace compatlab

namespace compatlab {

absl::StatusOr<MergeStats> MergeStores(const MergeOptions& options) {
  if (absl::Status s = CheckStorePath(options.out); !s.ok()) return s;
  std::vector<MergedSweep> sweeps;
  std::vector<std::pair<std::string, SweepInfo>> plans;  // (where, sweep) for CheckOnePlan
  int64_t planned = 0;
  for (const std::filesystem::path& source : options.inputs) {
    absl::StatusOr<std::vector<MergedSweep>> read = SourceSweeps(source, planned);
    if (!read.ok()) return read.status();
    for (MergedSweep& sweep : *read) {
      plans.emplace_back(source.string(), sweep.info);
      sweeps.push_back(std::move(sweep));
    }
  }
  if (!options.allow_mixed && !plans.empty()) {  // the sources first, before any staging
    if (absl::Status s = CheckOnePlan(plans); !s.ok()) return s;
  }
  absl::StatusOr<std::unique_ptr<ImportStaging>> staging =
      ImportStaging::Create(StagingDir(options.out));
  if (!staging.ok()) return staging.status();
  if (absl::Status s = StageStores(options.inputs, options.out, **staging, true); !s.ok()) {
    return s;
  }
  ImportTarget target(options.out);
  absl::StatusOr<Store*> store = target.Open();
  if (!store.ok()) return store.status();
  absl::StatusOr<std::vector<SweepInfo>> stored = (*store)->ListSweeps();
  if (!stored.ok()) return Recode(stored.status(), absl::StatusCode::kInternal);
  for (SweepInfo& sweep : *stored) plans.emplace_back(options.out.string(), std::move(sweep));
  if (!options.allow_mixed && !plans.empty()) {
    if (absl::Status s = CheckOnePlan(plans); !s.ok()) return s;
  }
  auto same = [&](const RunRecord& run, int64_t rowid) {
    return CheckSameRun(run, (*store)->RunsByRowid({rowid}, true), options.out.string());
  };
  absl::StatusOr<MergeStats> merged = (*staging)->MergeInto(**store, options.args, same, sweeps);
  if (!merged.ok()) return MergeFailed(merged.status());
  if (absl::Status s = target.Commit(); !s.ok()) return s;
  return merged;
}

}  // namespace compatlab
