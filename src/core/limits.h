// Bounds on everything that comes from outside: imported files and stores,
// flags, and what the HTTP API answers. One place for every such limit;
// doc/limits.md lists them with their reasons. Sizes are of decompressed,
// decoded data (what would be held in memory or stored), never of the file.
#ifndef COMPATLAB_CORE_LIMITS_H_
#define COMPATLAB_CORE_LIMITS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/records.h"

namespace compatlab {

// --- import (Parquet files and --from-store stores) -------------------------
// One text value of a run (the longest a sweep stores is a 64 KiB output tail).
inline constexpr int64_t kMaxImportTextBytes = int64_t{256} << 10;
// All text values of one run together.
inline constexpr int64_t kMaxImportRowBytes = int64_t{1} << 20;
// Elements of one list field (a curve: doc/limits.md): one per train step at
// most, and --train-steps is at most 4096.
inline constexpr size_t kMaxListElements = 4096;
// The most ranks (processes of one group) one test may run as: --ranks, a suite's "ranks".
inline constexpr int64_t kMaxRanks = 64;
// Shapes of one dynamic-shapes test (TestSpec::shapes; its per-shape list fields hold one
// element per shape): a plan's batch sizes x sequence lengths, or a stored or imported value.
inline constexpr size_t kMaxDynamicShapes = 64;
// One stored profile trace (gzip Chrome trace, doc/limits.md): a larger one is
// not kept by a sweep, and refused by an import.
inline constexpr int64_t kMaxProfileTraceBytes = int64_t{32} << 20;
// Runs of one import, all files together.
inline constexpr int64_t kMaxImportRuns = 2'000'000;
// Decoded text of one import, all files together (about what its runs hold in memory).
inline constexpr int64_t kMaxImportBytes = int64_t{2} << 30;
// What the Parquet reader may allocate at once for one file (pages, a batch).
inline constexpr int64_t kMaxParquetReaderBytes = int64_t{512} << 20;
// Rows the Parquet reader decodes at once: values are checked batch by batch,
// so at most this many rows of a file are materialised before a check.
inline constexpr int64_t kParquetBatchRows = 64;

// --- stores (every store opened, a foreign one or not) ------------------------
// SQLite virtual-machine instructions one run of one statement may execute
// before it is stopped: a store whose schema passed the checks but whose data
// makes a query endless fails with a clear error instead of hanging. The
// largest statement measured on a 1,000,000-run store (every field of every
// run sorted by a metric: 446 M; integrity_check 312 M) is a ninth of it.
inline constexpr int64_t kMaxStatementWork = int64_t{4'000'000'000};

// --- flags and files ---------------------------------------------------------
// Every duration (--timeout, --grace, a suite's timeout_s): finite, at most a week.
inline constexpr double kMaxDurationS = 7 * 24 * 3600.0;
// The least --mem-limit (and stored mem_limit_bytes a resume accepts).
inline constexpr int64_t kMinMemLimitBytes = int64_t{64} << 20;
// A path component made from data (a version in an export's file name).
inline constexpr size_t kMaxPathComponentBytes = 100;
// An id read from a store (sweep, test or run id) before it is used: at most
// this many bytes of [A-Za-z0-9._-], never "." or "..": it may name a
// temporary file or directory (a sweep's compile caches), so it must never
// climb out of one.
inline constexpr size_t kMaxStoredIdBytes = 128;
// How deep objects and arrays may nest in the JSON files read strictly (suites, target
// profiles, plan files: plan/strict_json.h): these files are shallow, and a value nested
// deeper (a plan file from elsewhere) would overflow the stack of what walks it later.
inline constexpr int kMaxStrictJsonDepth = 64;

// --- the HTTP API --------------------------------------------------------------
// A text value in a run list (/api/search, /api/model, /api/diff): longer ones
// are cut and marked; /api/run has the whole value (up to kMaxApiTextBytes).
inline constexpr size_t kMaxListTextBytes = 1024;
// A text value in /api/run.
inline constexpr size_t kMaxApiTextBytes = 256 << 10;

// The bytes of `record`'s text fields together, when each of them and their
// sum are within the import limits; else InvalidArgument naming the field and
// its size.
absl::StatusOr<int64_t> CheckImportedRun(const RunRecord& record);

// `text` cut to at most `max_bytes` (at a UTF-8 boundary) followed by
// " [... N more bytes]" when it was longer; `text` itself otherwise.
std::string TruncateForDisplay(std::string_view text, size_t max_bytes);

// OK when `id` is a stored id as kMaxStoredIdBytes says; else InvalidArgument
// "<what> '<id, escaped>' is not an id compatlab writes (...)".
absl::Status CheckStoredId(std::string_view id, std::string_view what);

// A duration flag or key checked: finite, > 0 (>= 0 when `zero_ok`), at most
// kMaxDurationS. InvalidArgument "<what> must be ..." otherwise.
absl::Status CheckDuration(double seconds, std::string_view what, bool zero_ok);

}  // namespace compatlab

#endif  // COMPATLAB_CORE_LIMITS_H_
