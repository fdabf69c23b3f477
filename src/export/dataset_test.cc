#include "export/dataset.h"

#include <algorithm>
#include <fstream>
#include <random>
#include <set>

#include "arrow/api.h"
#include "arrow/io/memory.h"
#include "core/error_signature.h"
#include "core/limits.h"
#include "export/parquet_runs.h"
#include "gtest/gtest.h"
#include "parquet/arrow/reader.h"
#include "parquet/arrow/writer.h"
#include "store/schema.h"
#include "store/testing.h"
#include "util/fs.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;
using test::FullRun;
using test::MakeRun;
using test::MakeSpec;
using test::ScopedTempDir;

RunRecord RunOn(const std::string& sweep_id, const std::string& model_type,
                const std::string& torch, const std::string& transformers) {
  RunRecord run = MakeRun(sweep_id, MakeSpec(model_type));
  run.result.torch_version = torch;
  run.result.transformers_version = transformers;
  run.result.wall_s = 1.5;
  run.result.steady_median_s = 0.01;
  run.cpu_model = "cpu-A";
  return run;
}

// Runs of two sweeps on three stacks, one of them unknown (a crash before the
// probe reported its versions).
std::vector<RunRecord> SampleRuns() {
  std::vector<RunRecord> runs = {
      RunOn("s1", "llama", "2.13.0+cpu", "5.23.0"), RunOn("s1", "gpt2", "2.13.0+cpu", "5.23.0"),
      RunOn("s1", "bert", "", ""), RunOn("s2", "llama", "2.12.0", "5.23.0"), FullRun("s2")};
  runs.back().result.torch_version = "2.12.0";
  runs.back().result.stack_versions = "";  // a target stack's own file: StackFilePath's test
  return runs;
}

// A store at `path` holding `runs` (their sweeps planned as needed).
std::unique_ptr<Store> StoreWith(const fs::path& path, const std::vector<RunRecord>& runs) {
  auto store = Store::Open(path, OpenMode::kReadWriteCreate);
  EXPECT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE((*store)->MergeRuns(runs, "test").ok());
  return *std::move(store);
}

// The Parquet file `bytes` re-written without its last column.
// The Parquet file `bytes` without the columns of `fields`; with
// `schema_version` > 0 its schema-version metadata says that version.
std::string WithoutColumns(const std::string& bytes, const std::set<std::string>& fields,
                           int schema_version = 0) {
  auto input = std::make_shared<arrow::io::BufferReader>(arrow::Buffer::FromString(bytes));
  auto reader = *parquet::arrow::OpenFile(input, arrow::default_memory_pool());
  auto table = *reader->ReadTable();
  for (int i = table->num_columns() - 1; i >= 0; --i) {
    if (fields.count(table->field(i)->name())) table = *table->RemoveColumn(i);
  }
  if (schema_version > 0) {
    auto metadata = table->schema()->metadata() ? table->schema()->metadata()->Copy()
                                                : std::make_shared<arrow::KeyValueMetadata>();
    EXPECT_TRUE(
        metadata->Set(std::string(kParquetSchemaVersionKey), std::to_string(schema_version)).ok());
    table = table->ReplaceSchemaMetadata(metadata);
  }
  auto sink = *arrow::io::BufferOutputStream::Create();
  // store_schema: the writer keeps the schema's metadata (the version) only then.
  EXPECT_TRUE(parquet::arrow::WriteTable(
                  *table, arrow::default_memory_pool(), sink, parquet::DEFAULT_MAX_ROW_GROUP_LENGTH,
                  parquet::default_writer_properties(),
                  parquet::ArrowWriterProperties::Builder().store_schema()->build())
                  .ok());
  return (*sink->Finish())->ToString();
}

std::map<std::string, std::string> FilesUnder(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) {
      files[fs::relative(entry.path(), dir).string()] = *ReadFile(entry.path());
    }
  }
  return files;
}

TEST(ExportTest, LongVersionsAreCutWithAHashSuffix) {
  const std::string a = "2.13.0+" + std::string(300, 'x');
  const std::string b = a + "y";
  const std::string safe_a = SafePathComponent(a);
  EXPECT_EQ(safe_a.size(), kMaxPathComponentBytes);
  EXPECT_EQ(safe_a.substr(0, 7), "2.13.0+");
  EXPECT_NE(safe_a, SafePathComponent(b));  // the suffix keeps them apart
  EXPECT_EQ(safe_a, SafePathComponent(a));
  EXPECT_EQ(SafePathComponent(std::string(kMaxPathComponentBytes, 'v')),
            std::string(kMaxPathComponentBytes, 'v'));
}

TEST(ExportTest, SafePathComponents) {
  EXPECT_EQ(SafePathComponent("2.13.0+cpu"), "2.13.0+cpu");
  EXPECT_EQ(SafePathComponent("2.6.0a0+git1234"), "2.6.0a0+git1234");
  EXPECT_EQ(SafePathComponent(""), "unknown");
  EXPECT_EQ(SafePathComponent("../../etc"), "_.._.._etc");
  EXPECT_EQ(SafePathComponent(".."), "_..");
  EXPECT_EQ(SafePathComponent("a b/c\\d"), "a_b_c_d");
  EXPECT_EQ(StackFilePath("2.13.0+cpu", "5.23.0"),
            fs::path("torch-2.13.0+cpu/transformers-5.23.0.parquet"));
  EXPECT_EQ(StackFilePath("2.13.0+cpu", "5.23.0", "{}"),
            fs::path("torch-2.13.0+cpu/transformers-5.23.0.parquet"));
  const fs::path ort = StackFilePath("2.13.0+cpu", "5.23.0", R"({"onnxruntime":"1.32.0"})");
  EXPECT_EQ(ort.parent_path(), fs::path("torch-2.13.0+cpu"));
  EXPECT_TRUE(ort.filename().string().starts_with("transformers-5.23.0-stack-")) << ort;
  EXPECT_NE(ort, StackFilePath("2.13.0+cpu", "5.23.0", R"({"onnxruntime":"1.33.0"})"));
}

TEST(ExportTest, WritesOneFilePerStack) {
  ScopedTempDir temp;
  const fs::path dir = temp.path() / "out";
  auto files = ExportRuns(SampleRuns(), dir);
  ASSERT_TRUE(files.ok()) << files.status();
  std::map<std::string, int64_t> counts;
  for (const ExportedFile& f : *files) counts[fs::relative(f.path, dir).string()] = f.runs;
  EXPECT_EQ(counts,
            (std::map<std::string, int64_t>{{"torch-2.12.0/transformers-5.23.0.parquet", 2},
                                            {"torch-2.13.0+cpu/transformers-5.23.0.parquet", 2},
                                            {"torch-unknown/transformers-unknown.parquet", 1}}));
  // Nothing else: no temporary file left behind.
  EXPECT_EQ(FilesUnder(dir).size(), 3u);
  auto runs = RunsFromParquet(*ReadFile(dir / "torch-2.12.0/transformers-5.23.0.parquet"), "f");
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 2u);
  for (const RunRecord& run : *runs) EXPECT_EQ(run.result.torch_version, "2.12.0");
}

TEST(ExportTest, OutputIsDeterministic) {
  ScopedTempDir temp;
  std::vector<RunRecord> runs = SampleRuns();
  ASSERT_TRUE(ExportRuns(runs, temp.path() / "a").ok());
  std::shuffle(runs.begin(), runs.end(), std::mt19937(7));
  ASSERT_TRUE(ExportRuns(runs, temp.path() / "b").ok());
  std::reverse(runs.begin(), runs.end());
  ASSERT_TRUE(ExportRuns(runs, temp.path() / "b").ok());  // over the same files
  const auto a = FilesUnder(temp.path() / "a");
  EXPECT_EQ(a.size(), 3u);
  EXPECT_TRUE(a == FilesUnder(temp.path() / "b"));
}

TEST(ExportTest, AnExportDirectoryMustBeADirectory) {
  ScopedTempDir temp;
  const fs::path file = temp.path() / "taken";
  ASSERT_TRUE(WriteFileAtomic(file, "a file").ok());
  EXPECT_TRUE(CheckExportDir(temp.path()).ok());
  EXPECT_TRUE(CheckExportDir(temp.path() / "new" / "deeper").ok());
  for (const fs::path& bad : {file, file / "sub", file / "sub" / "deeper"}) {
    const absl::Status status = CheckExportDir(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(std::string(status.message()).find("--parquet " + bad.string() + ": "),
              std::string::npos)
        << status;
    const auto exported = ExportRuns(SampleRuns(), bad);
    EXPECT_EQ(exported.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(*ReadFile(file), "a file");
  EXPECT_EQ(FilesUnder(temp.path()).size(), 1u);
}

TEST(ImportTest, StreamsThroughAStagingStoreItRemoves) {
  ScopedTempDir temp;
  ASSERT_TRUE(ExportRuns(SampleRuns(), temp.path() / "in").ok());
  auto files = CollectParquetFiles({temp.path() / "in"});
  ASSERT_TRUE(files.ok());
  // The batches of a file, read one after another.
  auto reader = ParquetRunReader::Open(files->front());
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<RunRecord> batch;
  ASSERT_TRUE((*reader)->Next(batch).ok());
  EXPECT_FALSE(batch.empty());
  EXPECT_EQ((*reader)->rows_read(), static_cast<int64_t>(batch.size()));
  ASSERT_TRUE((*reader)->Next(batch).ok());
  EXPECT_TRUE(batch.empty());
  // An import leaves the store alone beside its files: no staging store.
  const fs::path dir = temp.path() / "target";
  fs::create_directories(dir);
  auto target = Store::Open(dir / "target.db", OpenMode::kReadWriteCreate);
  ASSERT_TRUE(target.ok());
  auto imported = ImportFiles(**target, *files, "x");
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->merged.inserted, 5);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  for (const std::string& name : names)
    EXPECT_EQ(name.find(".compatlab-import-"), std::string::npos);
}

TEST(ImportTest, IsIdempotent) {
  ScopedTempDir temp;
  std::unique_ptr<Store> source = StoreWith(temp.path() / "source.db", SampleRuns());
  auto runs = source->QueryRuns({});
  ASSERT_TRUE(runs.ok());
  ASSERT_TRUE(ExportRuns(*runs, temp.path() / "first").ok());

  auto target = Store::Open(temp.path() / "target.db", OpenMode::kReadWriteCreate);
  ASSERT_TRUE(target.ok());
  auto files = CollectParquetFiles({temp.path() / "first"});
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 3u);
  auto imported = ImportFiles(**target, *files, "compatlab import first");
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_TRUE(imported->rejected.empty());
  EXPECT_EQ(imported->files, 3);
  EXPECT_EQ(imported->runs_read, 5);
  EXPECT_EQ(imported->merged.inserted, 5);
  EXPECT_EQ(imported->merged.sweeps_created, 2);

  // Again, and once more through a file path given twice: still one row per run.
  imported = ImportFiles(**target, *files, "again");
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->merged.inserted, 0);
  EXPECT_EQ(imported->merged.already_present, 5);
  EXPECT_EQ(*(*target)->CountRuns({}), 5);
  EXPECT_EQ((*target)->ListSweeps()->size(), 2u);

  // Export of the imported store: the same bytes.
  ASSERT_TRUE(ExportRuns(*(*target)->QueryRuns({}), temp.path() / "second").ok());
  EXPECT_TRUE(FilesUnder(temp.path() / "first") == FilesUnder(temp.path() / "second"));
}

TEST(ImportTest, RejectsWrongSchemaWithoutImporting) {
  ScopedTempDir temp;
  ASSERT_TRUE(ExportRuns(SampleRuns(), temp.path() / "good").ok());
  const std::string good =
      *ReadFile(temp.path() / "good" / "torch-2.12.0" / "transformers-5.23.0.parquet");
  // A Parquet file of another schema: a good file without one of its columns.
  const fs::path bad = temp.path() / "good" / "zz-bad.parquet";
  ASSERT_TRUE(WriteFileAtomic(bad, WithoutColumns(good, {"compatlab_version"})).ok());
  const fs::path truncated = temp.path() / "truncated.parquet";
  ASSERT_TRUE(WriteFileAtomic(truncated, good.substr(0, good.size() - 10)).ok());

  auto store = Store::Open(temp.path() / "target.db", OpenMode::kReadWriteCreate);
  ASSERT_TRUE(store.ok());
  auto files = CollectParquetFiles({temp.path() / "good", truncated});
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(files->size(), 5u);
  auto imported = ImportFiles(**store, *files, "x");
  ASSERT_TRUE(imported.ok()) << imported.status();
  ASSERT_EQ(imported->rejected.size(), 2u);
  for (const absl::Status& rejected : imported->rejected) {
    const std::string message(rejected.message());
    EXPECT_TRUE(message.find("zz-bad.parquet: not a compatlab runs file: no column "
                             "compatlab_version") != std::string::npos ||
                message.find("truncated.parquet: not a readable Parquet file") != std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  EXPECT_EQ(imported->merged.inserted, 0);
  EXPECT_EQ(*(*store)->CountRuns({}), 0);
  EXPECT_TRUE((*store)->ListSweeps()->empty());
}

TEST(ImportTest, AFileOfAnOlderSchemaImportsWithTheLaterFieldsAtTheirDefaults) {
  ScopedTempDir temp;
  // A file older than schema 28 holds one-rank static tests only: the identity fields added
  // since (ranks when not 1, dynamic, shapes) take their defaults there.
  std::vector<RunRecord> sample = SampleRuns();
  for (RunRecord& run : sample) {
    run.spec.ranks = 1;
    run.spec.dynamic.clear();
    run.spec.shapes.clear();
    run.test_id = run.spec.TestId();
  }
  ASSERT_TRUE(ExportRuns(sample, temp.path() / "good").ok());
  const std::string good =
      *ReadFile(temp.path() / "good" / "torch-2.12.0" / "transformers-5.23.0.parquet");
  std::set<std::string> later;
  for (const FieldDef& f : ResultFields()) {
    if (f.since_version > 1) later.insert(std::string(f.name));
  }
  ASSERT_FALSE(later.empty());
  fs::create_directories(temp.path() / "v1");
  ASSERT_TRUE(
      WriteFileAtomic(temp.path() / "v1" / "old.parquet", WithoutColumns(good, later, 1)).ok());
  // The same file claiming the current version is refused: it lacks columns.
  ASSERT_TRUE(
      WriteFileAtomic(temp.path() / "v2.parquet", WithoutColumns(good, later, kSchemaVersion))
          .ok());

  auto store = Store::Open(temp.path() / "target.db", OpenMode::kReadWriteCreate);
  ASSERT_TRUE(store.ok());
  auto files = CollectParquetFiles({temp.path() / "v2.parquet"});
  ASSERT_TRUE(files.ok());
  auto imported = ImportFiles(**store, *files, "x");
  ASSERT_TRUE(imported.ok()) << imported.status();
  ASSERT_EQ(imported->rejected.size(), 1u);
  EXPECT_NE(std::string(imported->rejected[0].message()).find("no column"), std::string::npos);

  files = CollectParquetFiles({temp.path() / "v1"});
  ASSERT_TRUE(files.ok());
  imported = ImportFiles(**store, *files, "x");
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_TRUE(imported->rejected.empty());
  EXPECT_GT(imported->merged.inserted, 0);
  auto runs = (*store)->QueryRuns({});
  ASSERT_TRUE(runs.ok());
  int64_t signed_failures = 0;
  for (const RunRecord& r : *runs) {
    EXPECT_FALSE(r.result.speedup.has_value());
    EXPECT_EQ(r.result.acc_rule, "");
    // The file has no error_signature: the import computes it, as a sweep does.
    EXPECT_EQ(r.result.error_signature, FailureSignature(r.result));
    signed_failures += r.result.error_signature.empty() ? 0 : 1;
  }
  EXPECT_EQ(signed_failures, 1);  // FullRun's crash
}

TEST(ImportTest, AConflictImportsNothing) {
  ScopedTempDir temp;
  std::vector<RunRecord> runs = SampleRuns();
  std::unique_ptr<Store> store = StoreWith(temp.path() / "store.db", {runs[0]});
  // Another run of the same (sweep, test) as runs[0], beside a new one.
  RunRecord other = runs[0];
  other.run_id = "run-from-elsewhere";
  ASSERT_TRUE(ExportRuns({other, runs[1]}, temp.path() / "x").ok());
  auto imported = ImportFiles(*store, *CollectParquetFiles({temp.path() / "x"}), "x");
  EXPECT_EQ(imported.status().code(), absl::StatusCode::kAlreadyExists) << imported.status();
  EXPECT_EQ(*store->CountRuns({}), 1);
}

TEST(ImportTest, CollectParquetFilesFindsFilesUnderDirectories) {
  ScopedTempDir temp;
  ASSERT_TRUE(ExportRuns(SampleRuns(), temp.path()).ok());
  ASSERT_TRUE(WriteFileAtomic(temp.path() / "notes.txt", "not data").ok());
  auto files = CollectParquetFiles({temp.path(), temp.path() / "torch-unknown"});
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(files->size(), 3u);
  EXPECT_TRUE(std::is_sorted(files->begin(), files->end()));
  EXPECT_EQ(CollectParquetFiles({temp.path() / "missing"}).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace compatlab
