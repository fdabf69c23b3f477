#include "export/transfer.h"

#include "core/limits.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/testing.h"
#include "util/fs.h"
#include "util/hash.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class TransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_ = temp_.path() / "source.db";
    std::vector<RunRecord> runs;
    for (const char* torch : {"2.12.0", "2.13.0"}) {
      TestSpec spec = test::MakeSpec(std::string("gpt2-") + torch);
      RunRecord run = test::MakeRun("s1", spec);
      run.result.torch_version = torch;
      run.result.transformers_version = "5.23.0";
      runs.push_back(run);
    }
    test::WriteRuns(source_, "s1", runs);
  }

  test::ScopedTempDir temp_;
  fs::path source_;
};

TEST_F(TransferTest, ExportWritesOneFilePerStackAndImportMergesThem) {
  ExportOptions out;
  out.db = source_;
  out.dir = temp_.path() / "dataset";
  absl::StatusOr<ExportSummary> exported = ExportStore(out);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->runs, 2);
  ASSERT_EQ(exported->files.size(), 2u);
  EXPECT_EQ(exported->files[0].runs, 1);

  ImportOptions in;
  in.db = temp_.path() / "target.db";
  in.paths = {out.dir};
  in.args = "compatlab import dataset";
  absl::StatusOr<ImportResult> imported = ImportIntoStore(in);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_TRUE(imported->rejected.empty());
  EXPECT_EQ(imported->files, 2);
  EXPECT_EQ(imported->merged.inserted, 2);
  imported = ImportIntoStore(in);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->merged.already_present, 2);
}

TEST_F(TransferTest, ExportOfNoMatchWritesNothing) {
  ExportOptions out;
  out.db = source_;
  out.dir = temp_.path() / "dataset";
  out.filter.torch_version = "0.0.1";
  absl::StatusOr<ExportSummary> exported = ExportStore(out);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->runs, 0);
  EXPECT_FALSE(fs::exists(out.dir));
  out.db = temp_.path() / "missing.db";
  EXPECT_EQ(ExportStore(out).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(TransferTest, RejectedFileCreatesNoStore) {
  const fs::path bad = temp_.path() / "bad.parquet";
  ASSERT_TRUE(WriteFileAtomic(bad, "not parquet").ok());
  ImportOptions in;
  in.db = temp_.path() / "target.db";
  in.paths = {bad};
  absl::StatusOr<ImportResult> imported = ImportIntoStore(in);
  ASSERT_TRUE(imported.ok()) << imported.status();
  ASSERT_EQ(imported->rejected.size(), 1u);
  EXPECT_THAT(imported->rejected[0].message(), HasSubstr("bad.parquet"));
  EXPECT_FALSE(fs::exists(in.db));

  in.paths = {temp_.path() / "nothing-here"};
  EXPECT_EQ(ImportIntoStore(in).status().code(), absl::StatusCode::kNotFound);
  fs::create_directories(temp_.path() / "empty");
  in.paths = {temp_.path() / "empty"};
  absl::StatusOr<ImportResult> none = ImportIntoStore(in);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(none.status().message(), "no .parquet files under the given paths");
  EXPECT_FALSE(fs::exists(in.db));
}

TEST_F(TransferTest, ImportFromStoresMergesOnceAndRefusesBadSources) {
  ImportOptions in;
  in.db = temp_.path() / "target.db";
  in.paths = {source_};
  absl::StatusOr<MergeStats> merged = ImportStoresIntoStore(in);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->inserted, 2);
  merged = ImportStoresIntoStore(in);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->inserted, 0);
  EXPECT_EQ(merged->already_present, 2);

  in.paths = {in.db};  // the target itself
  EXPECT_EQ(ImportStoresIntoStore(in).status().code(), absl::StatusCode::kInvalidArgument);
  const fs::path bogus = temp_.path() / "bogus.db";
  ASSERT_TRUE(WriteFileAtomic(bogus, "not a database").ok());
  in.db = temp_.path() / "other.db";
  in.paths = {source_, bogus};
  EXPECT_EQ(ImportStoresIntoStore(in).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fs::exists(in.db)) << "a bad source leaves no new store";
}

TEST_F(TransferTest, ImportFromStoreRefusesARunOverTheLimitsBeforeLoadingIt) {
  // A hostile source store: one run stored with 8 MiB of text (over the row
  // limit: refused by SQLite's length limit, never loaded), another with one
  // field just over the per-field limit (read, then refused by name).
  const fs::path big = temp_.path() / "big.db";
  RunRecord huge = test::MakeRun("s9", test::MakeSpec("bomb"));
  huge.run_id = "run-huge";
  huge.result.stdout_tail = std::string(size_t{8} << 20, 'x');
  test::WriteRuns(big, "s9", {huge});
  const fs::path wide = temp_.path() / "wide.db";
  RunRecord over = test::MakeRun("s8", test::MakeSpec("wide"));
  over.run_id = "run-wide";
  over.result.stderr_tail = std::string(kMaxImportTextBytes + 1, 'y');
  test::WriteRuns(wide, "s8", {over});

  ImportOptions in;
  in.db = temp_.path() / "target.db";
  in.paths = {source_, big};
  absl::StatusOr<MergeStats> merged = ImportStoresIntoStore(in);
  EXPECT_EQ(merged.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(merged.status().message(), HasSubstr("big.db: the run at rowid 1 is stored in more"));
  EXPECT_FALSE(fs::exists(in.db)) << "a refused source leaves no new store";

  in.paths = {wide};
  merged = ImportStoresIntoStore(in);
  EXPECT_EQ(merged.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(merged.status().message(),
              HasSubstr("wide.db: run run-wide: field stderr_tail holds 262145 bytes"));
  EXPECT_FALSE(fs::exists(in.db));
}

TEST(CheckDatasetTracesTest, RefusesTracesPastTheTotalAnImportTakes) {
  test::ScopedTempDir dir;
  const fs::path traces = dir.path() / std::string(kDatasetTraceDir);
  fs::create_directories(traces);
  for (const std::string body : {"one", "two", "three"}) {
    const std::string gzip = std::string("\x1f\x8b") + body + std::string(20, 'x');
    ASSERT_TRUE(WriteFileAtomic(traces / (Sha256Hex(gzip) + ".json.gz"), gzip).ok());
  }
  absl::StatusOr<std::vector<fs::path>> all = CheckDatasetTraces({dir.path()}, 1000);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 3u);
  absl::StatusOr<std::vector<fs::path>> capped = CheckDatasetTraces({dir.path()}, 60);
  ASSERT_FALSE(capped.ok());
  EXPECT_THAT(capped.status().message(), HasSubstr("more than an import takes"));
}

}  // namespace
}  // namespace compatlab
