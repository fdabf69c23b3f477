#include "export/parquet_runs.h"

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>

#include "arrow/api.h"
#include "arrow/io/memory.h"
#include "arrow/json/from_string.h"
#include "core/limits.h"
#include "gtest/gtest.h"
#include "parquet/arrow/reader.h"
#include "parquet/arrow/writer.h"
#include "parquet/file_reader.h"
#include "parquet/metadata.h"
#include "store/schema.h"
#include "store/testing.h"

namespace compatlab {
namespace {

using test::FullRun;
using test::MakeRun;
using test::MakeSpec;

// The Arrow table of a Parquet file.
std::shared_ptr<arrow::Table> TableOf(const std::string& bytes) {
  auto input = std::make_shared<arrow::io::BufferReader>(arrow::Buffer::FromString(bytes));
  auto reader = parquet::arrow::OpenFile(input, arrow::default_memory_pool());
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  auto table = (*reader)->ReadTable();
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  return *table;
}

// `table` as a Parquet file, written with the library's defaults (as another
// tool would), with its schema and metadata when `store_schema` (as pyarrow does).
std::string BytesOf(const arrow::Table& table, bool store_schema = false) {
  auto sink = *arrow::io::BufferOutputStream::Create();
  parquet::ArrowWriterProperties::Builder arrow_properties;
  if (store_schema) arrow_properties.store_schema();
  EXPECT_TRUE(parquet::arrow::WriteTable(
                  table, arrow::default_memory_pool(), sink, parquet::DEFAULT_MAX_ROW_GROUP_LENGTH,
                  parquet::default_writer_properties(), arrow_properties.build())
                  .ok());
  return (*sink->Finish())->ToString();
}

std::string ParquetOf(std::vector<RunRecord> runs) {
  auto bytes = RunsToParquet(std::move(runs));
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : "";
}

void ExpectSameFields(const RunRecord& a, const RunRecord& b) {
  for (const FieldDef& f : ResultFields()) EXPECT_EQ(f.get(a), f.get(b)) << f.name;
}

// The message of rejecting `bytes` contains `needle`.
void ExpectRejected(const std::string& bytes, const std::string& needle) {
  auto runs = RunsFromParquet(bytes, "f.parquet");
  ASSERT_FALSE(runs.ok()) << "expected a rejection containing: " << needle;
  EXPECT_EQ(runs.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(runs.status().message());
  EXPECT_EQ(message.rfind("f.parquet: ", 0), 0u) << message;
  EXPECT_NE(message.find(needle), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(TimestampTest, RoundTripsTheCanonicalFormOnly) {
  auto millis = ParseTimestampMillis("2026-11-30T02:24:35.123Z");
  ASSERT_TRUE(millis.ok()) << millis.status();
  EXPECT_EQ(*millis, 1796005475123);
  EXPECT_EQ(FormatTimestampMillis(*millis), "2026-11-30T02:24:35.123Z");
  EXPECT_EQ(*ParseTimestampMillis("1970-01-01T00:00:00.000Z"), 0);
  EXPECT_EQ(FormatTimestampMillis(-1), "1969-12-31T23:59:59.999Z");
  for (const char* bad :
       {"", "2026-11-30T02:24:35Z", "2026-11-30T02:24:35.123+00:00", "2026-13-30T02:24:35.123Z",
        "2026-02-30T02:24:35.123Z", " 2026-11-30T02:24:35.12Z", "2026-11-30 02:24:35.123Z",
        "2026-11-30T24:00:00.000Z"}) {
    EXPECT_FALSE(ParseTimestampMillis(bad).ok()) << bad;
  }
}

TEST(ParquetRunsTest, SchemaIsTheResultFieldsTyped) {
  const auto& schema = RunsArrowSchema();
  const std::vector<FieldDef>& fields = ResultFields();
  ASSERT_EQ(schema->num_fields(), static_cast<int>(fields.size()));
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto& column = schema->field(static_cast<int>(i));
    EXPECT_EQ(column->name(), fields[i].name);
    // A list column is null where the store holds no curve.
    EXPECT_EQ(column->nullable(), fields[i].nullable || fields[i].list != ListKind::kNone)
        << fields[i].name;
  }
  EXPECT_EQ(schema->GetFieldByName("run_id")->type()->ToString(), "string");
  EXPECT_EQ(schema->GetFieldByName("seq_len")->type()->ToString(), "int64");
  EXPECT_EQ(schema->GetFieldByName("wall_s")->type()->ToString(), "double");
  EXPECT_EQ(schema->GetFieldByName("started_at")->type()->ToString(), "timestamp[ms, tz=UTC]");
  EXPECT_EQ(schema->GetFieldByName("finished_at")->type()->ToString(), "timestamp[ms, tz=UTC]");
  // A list of key/value structs, not a map: `datasets` takes no map column.
  EXPECT_EQ(schema->GetFieldByName("kind_params")->type()->ToString(),
            "list<element: struct<key: string not null, value: string not null> not null>");
}

TEST(ParquetRunsTest, RoundTripKeepsEveryField) {
  RunRecord full = FullRun("s1");
  RunRecord minimal = MakeRun("s1", MakeSpec("gpt2"), TestStatus::kTimeout);
  const std::string bytes = ParquetOf({full, minimal});
  auto runs = RunsFromParquet(bytes, "f.parquet");
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 2u);
  // Sorted by model_id: hf:gpt2 before hf:llama.
  ExpectSameFields((*runs)[0], minimal);
  // The stderr tail held bytes that are not UTF-8: each became U+FFFD.
  full.result.stderr_tail = std::string("err\xEF\xBF\xBD\xEF\xBF\xBD bytes\0inside", 23);
  ExpectSameFields((*runs)[1], full);
  EXPECT_FALSE((*runs)[0].result.build_s.has_value());

  std::shared_ptr<arrow::Table> table = TableOf(bytes);
  EXPECT_EQ(table->schema()->field(0)->name(), "run_id");
  EXPECT_EQ(table->GetColumnByName("started_at")->type()->ToString(), "timestamp[ms, tz=UTC]");
  EXPECT_EQ(table->GetColumnByName("build_s")->null_count(), 1);
  auto metadata = table->schema()->metadata();
  ASSERT_NE(metadata, nullptr);
  EXPECT_EQ(*metadata->Get(std::string(kParquetSchemaVersionKey)), std::to_string(kSchemaVersion));
}

TEST(ParquetRunsTest, NoRunsIsAnEmptyFileWithTheSchema) {
  const std::string bytes = ParquetOf({});
  auto runs = RunsFromParquet(bytes, "f.parquet");
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_TRUE(runs->empty());
  EXPECT_EQ(TableOf(bytes)->num_columns(), static_cast<int>(ResultFields().size()));
}

TEST(ParquetRunsTest, RejectsATimestampThatIsNotCanonical) {
  RunRecord run = MakeRun("s1", MakeSpec("gpt2"));
  run.finished_at = "yesterday";
  auto bytes = RunsToParquet({run});
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(bytes.status().message()).find(run.run_id), std::string::npos);
}

TEST(ParquetRunsTest, RejectsWhatIsNotParquet) {
  ExpectRejected("", "not a readable Parquet file");
  ExpectRejected("PAR1 this is not a parquet file PAR1", "not a readable Parquet file");
  const std::string good = ParquetOf({FullRun("s1")});
  ExpectRejected(good.substr(0, good.size() / 2), "not a readable Parquet file");
}

TEST(ParquetRunsTest, RejectsCorruptPages) {
  std::string bytes = ParquetOf({FullRun("s1"), MakeRun("s1", MakeSpec("gpt2"))});
  // Overwrite the first column chunk's data (after the "PAR1" magic); the
  // footer still parses, the pages do not.
  for (size_t i = 4; i < 200 && i < bytes.size(); ++i) bytes[i] = static_cast<char>(0xA5);
  auto runs = RunsFromParquet(bytes, "f.parquet");
  ASSERT_FALSE(runs.ok());
  EXPECT_EQ(runs.status().code(), absl::StatusCode::kInvalidArgument) << runs.status();
}

TEST(ParquetRunsTest, RejectsAWrongSchema) {
  std::shared_ptr<arrow::Table> table = TableOf(ParquetOf({FullRun("s1")}));
  const int wall = table->schema()->GetFieldIndex("wall_s");

  ExpectRejected(BytesOf(**table->RemoveColumn(wall)), "no column wall_s");

  auto as_text =
      arrow::ChunkedArray::Make({*arrow::MakeArrayFromScalar(arrow::StringScalar("4.75"), 1)});
  ExpectRejected(BytesOf(**table->SetColumn(wall, arrow::field("wall_s", arrow::utf8()), *as_text)),
                 "column wall_s has type string, expected double");

  auto extra = arrow::ChunkedArray::Make({*arrow::MakeArrayFromScalar(arrow::Int64Scalar(1), 1)});
  ExpectRejected(BytesOf(**table->AddColumn(0, arrow::field("bogus", arrow::int64()), *extra)),
                 "unknown column bogus");

  auto newer = table->ReplaceSchemaMetadata(arrow::key_value_metadata(
      {std::string(kParquetSchemaVersionKey)}, {std::to_string(kSchemaVersion + 1)}));
  ExpectRejected(BytesOf(*newer, /*store_schema=*/true), "newer than this compatlab's");

  // A plain re-write (no compatlab metadata, no stored Arrow schema) is fine.
  auto plain = table->ReplaceSchemaMetadata(nullptr);
  EXPECT_TRUE(RunsFromParquet(BytesOf(*plain), "f.parquet").ok());
}

TEST(ParquetRunsTest, RejectsBadValues) {
  std::shared_ptr<arrow::Table> table = TableOf(ParquetOf({FullRun("s1")}));
  auto set_string = [&](const std::string& name, std::optional<std::string> value) {
    const int index = table->schema()->GetFieldIndex(name);
    std::shared_ptr<arrow::Scalar> scalar =
        value
            ? std::static_pointer_cast<arrow::Scalar>(std::make_shared<arrow::StringScalar>(*value))
            : arrow::MakeNullScalar(arrow::utf8());
    auto column = arrow::ChunkedArray::Make({*arrow::MakeArrayFromScalar(*scalar, 1)});
    return BytesOf(**table->SetColumn(index, arrow::field(name, arrow::utf8()), *column));
  };
  ExpectRejected(set_string("status", "exploded"), "row 0: ");
  ExpectRejected(set_string("model_id", "hf:gpt2"), "is not the hash of the row's test fields");
  ExpectRejected(set_string("error_message", std::nullopt), "NULL in a non-nullable field");
  ExpectRejected(set_string("run_id", ""), "empty run_id");
}

TEST(ParquetRunsTest, RejectsARunTwice) {
  RunRecord run = MakeRun("s1", MakeSpec("gpt2"));
  RunRecord again = run;
  again.sweep_id = "s2";
  ExpectRejected(ParquetOf({run, again}), "appears twice");
}

TEST(ParquetRunsTest, RefusesAValueOverTheImportLimitNamingRowAndField) {
  std::vector<RunRecord> runs;
  for (int i = 0; i < 100; ++i) {
    RunRecord run = MakeRun("s" + std::to_string(i), MakeSpec("gpt2"));
    run.run_id = std::string(i < 10 ? "r0" : "r") + std::to_string(i);
    if (i >= 70) run.result.stdout_tail = std::string(kMaxImportTextBytes + 1, 'x');
    runs.push_back(std::move(run));
  }
  // Sorted by model_id, test_id, started_at, run_id: r70 is the 71st row.
  ExpectRejected(ParquetOf(std::move(runs)),
                 "row 70 (run r70): field stdout_tail holds 262145 bytes, over the limit");
}

TEST(ParquetRunsTest, AFileAtTheLimitsImports) {
  RunRecord run = MakeRun("s1", MakeSpec("gpt2"));
  run.result.stdout_tail = std::string(kMaxImportTextBytes, 'x');
  auto read = RunsFromParquet(ParquetOf({run}), "f.parquet");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->front().result.stdout_tail.size(), static_cast<size_t>(kMaxImportTextBytes));
}

// An allocator that fails from its `successes`-th allocation on, as the
// process's allocator does at its memory limit: with OutOfMemory, or throwing
// std::bad_alloc (as operator new does).
class FailingPool : public arrow::MemoryPool {
 public:
  enum class Failure { kStatus, kThrow };
  FailingPool(int64_t successes, Failure failure) : successes_(successes), failure_(failure) {}

  arrow::Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override {
    ARROW_RETURN_NOT_OK(Count());
    return base_->Allocate(size, alignment, out);
  }
  arrow::Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                           uint8_t** ptr) override {
    ARROW_RETURN_NOT_OK(Count());
    return base_->Reallocate(old_size, new_size, alignment, ptr);
  }
  void Free(uint8_t* buffer, int64_t size, int64_t alignment) override {
    base_->Free(buffer, size, alignment);
  }
  int64_t bytes_allocated() const override { return base_->bytes_allocated(); }
  int64_t max_memory() const override { return base_->max_memory(); }
  int64_t total_bytes_allocated() const override { return base_->total_bytes_allocated(); }
  int64_t num_allocations() const override { return calls_; }
  std::string backend_name() const override { return "failing"; }
  bool failed() const { return calls_ > successes_; }

 private:
  arrow::Status Count() {
    if (calls_++ < successes_) return arrow::Status::OK();
    if (failure_ == Failure::kThrow) throw std::bad_alloc();
    return arrow::Status::OutOfMemory("test allocator exhausted");
  }

  arrow::MemoryPool* const base_ = arrow::system_memory_pool();
  const int64_t successes_;
  const Failure failure_;
  int64_t calls_ = 0;
};

// Every run of `bytes` read with a ParquetRunReader whose memory is `memory`.
absl::Status ReadAll(const std::string& bytes, ParquetReaderMemory memory) {
  auto input = std::make_shared<arrow::io::BufferReader>(arrow::Buffer::FromString(bytes));
  auto reader = ParquetRunReader::FromInput(input, "f.parquet", memory);
  if (!reader.ok()) return reader.status();
  std::vector<RunRecord> batch;
  do {
    if (absl::Status s = (*reader)->Next(batch); !s.ok()) return s;
  } while (!batch.empty());
  return absl::OkStatus();
}

// 70 runs (two batches), with text to decode.
std::string SomeRuns() {
  std::vector<RunRecord> runs;
  for (int i = 0; i < 70; ++i) {
    RunRecord run = MakeRun("s" + std::to_string(i), MakeSpec("gpt2"));
    run.run_id = "r" + std::to_string(i);
    run.result.stdout_tail = std::string(1000, 'x');
    runs.push_back(std::move(run));
  }
  return ParquetOf(std::move(runs));
}

// Fails the k-th allocation of a read of SomeRuns() (about 4,900 of them:
// the footer, the schema, each batch's columns), for every k up to 32 and
// then at steps of k/16 (about 120 reads) until the read succeeds: each
// failure must be out of memory, never bad data.
void ExpectEveryFailedAllocationIsOutOfMemory(FailingPool::Failure failure) {
  const std::string bytes = SomeRuns();
  for (int64_t k = 0;; k += 1 + k / 16) {
    ASSERT_LT(k, 10'000) << "the read never succeeded";
    FailingPool base(k, failure);
    absl::Status read = ReadAll(bytes, {.base = &base});
    if (!base.failed()) {
      ASSERT_TRUE(read.ok()) << read;
      EXPECT_GT(k, 3);  // the read allocates, so failures were tried
      return;
    }
    ASSERT_EQ(read.code(), absl::StatusCode::kResourceExhausted)
        << "allocation " << k << " failed: " << read;
    const std::string message(read.message());
    EXPECT_EQ(message.rfind("f.parquet: out of memory while reading it", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(ParquetReaderMemoryTest, AFailedAllocationIsOutOfMemoryNeverBadData) {
  ExpectEveryFailedAllocationIsOutOfMemory(FailingPool::Failure::kStatus);
}

TEST(ParquetReaderMemoryTest, AThrownBadAllocIsOutOfMemoryNeverBadData) {
  ExpectEveryFailedAllocationIsOutOfMemory(FailingPool::Failure::kThrow);
}

TEST(ParquetReaderMemoryTest, DecodingPastThePoolsCapIsBadInputNotOutOfMemory) {
  // Under the default cap the same file reads; past a cap of 64 KiB its
  // batches (64 runs of 1000 bytes of text each, and more) do not fit.
  ASSERT_TRUE(ReadAll(SomeRuns(), {}).ok());
  absl::Status read = ReadAll(SomeRuns(), {.cap = 64 << 10});
  ASSERT_EQ(read.code(), absl::StatusCode::kInvalidArgument) << read;
  const std::string message(read.message());
  EXPECT_NE(message.find("too large: decoding needs more than 65536 bytes at once"),
            std::string::npos)
      << message;
}

std::string WithListArray(const std::shared_ptr<arrow::Table>& table, const std::string& name,
                          const std::shared_ptr<arrow::Array>& array, int version) {
  const int index = table->schema()->GetFieldIndex(name);
  auto replaced = *table->SetColumn(index, arrow::field(name, array->type()),
                                    std::make_shared<arrow::ChunkedArray>(array));
  replaced = replaced->ReplaceSchemaMetadata(arrow::key_value_metadata(
      {std::string(kParquetSchemaVersionKey)}, {std::to_string(version)}));
  return BytesOf(*replaced, /*store_schema=*/true);
}

// The list column `name` of the one-row `table` replaced by `json` (one row,
// Arrow's JSON form) of type `type`; with `version` as the file's schema version.
std::string WithListColumn(const std::shared_ptr<arrow::Table>& table, const std::string& name,
                           const std::shared_ptr<arrow::DataType>& type, const std::string& json,
                           int version = kSchemaVersion) {
  auto array = arrow::json::ArrayFromJSONString(type, json);
  EXPECT_TRUE(array.ok()) << array.status().ToString();
  return WithListArray(table, name, *array, version);
}

std::shared_ptr<arrow::DataType> RealsType() {
  return arrow::list(arrow::field("element", arrow::float64()));
}
std::shared_ptr<arrow::DataType> PointsType() {
  return arrow::list(arrow::field("element",
                                  arrow::struct_({arrow::field("position", arrow::int64(), false),
                                                  arrow::field("value", arrow::float64(), false)}),
                                  false));
}

// A file older than schema 19 has no missing_packages column: its rows are blamed by
// today's rule on import (core/blame.h, FillMissingPackages), so that the missing
// package of an older sweep is not the model's.
TEST(ParquetImportTest, AnOlderFilesMissingPackageIsBlamedOnTheEnvironment) {
  RunRecord run = FullRun("s1");
  run.result.status = TestStatus::kFailToLoad;
  run.result.error_type = "ModuleNotFoundError";
  run.result.error_message = "No module named 'timm'";
  run.result.error_signature = "";
  run.result.blame = "model";
  run.result.missing_packages = "";
  std::shared_ptr<arrow::Table> table = TableOf(ParquetOf({run}));
  table = *table->RemoveColumn(table->schema()->GetFieldIndex("missing_packages"));
  table = table->ReplaceSchemaMetadata(
      arrow::key_value_metadata({std::string(kParquetSchemaVersionKey)}, {"18"}));
  auto runs = RunsFromParquet(BytesOf(*table, /*store_schema=*/true), "v18.parquet");
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->front().result.missing_packages, "timm");
  EXPECT_EQ(runs->front().result.blame, "environment");
}

TEST(ParquetListsTest, CurvesAreTypedListColumnsAndRoundTrip) {
  RunRecord run = FullRun("s1");
  run.result.train_grad_norm = "[1.5, NaN, 1.0]";  // Python's text of an older store
  run.result.train_eager_loss = "";                // no curve
  const std::string bytes = ParquetOf({run});
  std::shared_ptr<arrow::Table> table = TableOf(bytes);
  EXPECT_EQ(table->GetColumnByName("train_loss")->type()->ToString(), "list<element: double>");
  EXPECT_EQ(table->GetColumnByName("gen_decode_curve")->type()->ToString(),
            "list<element: struct<position: int64 not null, value: double not null> not null>");
  EXPECT_EQ(table->GetColumnByName("gen_mem_curve")->type()->ToString(),
            "list<element: struct<position: int64 not null, value: int64 not null> not null>");
  EXPECT_EQ(table->GetColumnByName("train_eager_loss")->null_count(), 1);
  auto losses =
      std::static_pointer_cast<arrow::ListArray>(table->GetColumnByName("train_loss")->chunk(0));
  ASSERT_EQ(losses->value_length(0), 3);
  EXPECT_EQ(std::static_pointer_cast<arrow::DoubleArray>(losses->values())->Value(1), 10.25);
  auto norms = std::static_pointer_cast<arrow::ListArray>(
      table->GetColumnByName("train_grad_norm")->chunk(0));
  EXPECT_TRUE(norms->values()->IsNull(1));  // not finite: null

  auto runs = RunsFromParquet(bytes, "f.parquet");
  ASSERT_TRUE(runs.ok()) << runs.status();
  const RunResult& back = runs->front().result;
  EXPECT_EQ(back.train_loss, "[10.5,10.25,10.0]");
  EXPECT_EQ(back.train_grad_norm, "[1.5,null,1.0]");
  EXPECT_EQ(back.train_eager_loss, "");
  EXPECT_EQ(back.gen_match_curve, run.result.gen_match_curve);
  EXPECT_EQ(back.gen_decode_curve, run.result.gen_decode_curve);
  EXPECT_EQ(back.gen_mem_curve, run.result.gen_mem_curve);
  // Export, import, export: the same file.
  EXPECT_EQ(ParquetOf({runs->front()}), bytes);
}

// The list field `name` as JSON text in a string column: a file of `version`
// imports it by the list rules (`member` is the run's field), and a file of
// this schema version refuses the text.
void ExpectTextListImportsAt(const std::shared_ptr<arrow::Table>& table, const std::string& name,
                             int version, std::string RunResult::*member) {
  auto runs = RunsFromParquet(
      WithListColumn(table, name, arrow::utf8(), R"(["[0.5, 0.25]"])", version), "f.parquet");
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->front().result.*member, "[0.5,0.25]") << name;
  ExpectRejected(WithListColumn(table, name, arrow::utf8(), R"(["[0.5, \"x\"]"])", version),
                 "row 0: field " + name + ": element 1 is not a number or null");
  ExpectRejected(WithListColumn(table, name, arrow::utf8(), R"(["[0.5]"])"),
                 "column " + name + " has type string, expected list<element: double>");
}

TEST(ParquetListsTest, AnOlderFilesTextListsImport) {
  std::shared_ptr<arrow::Table> table = TableOf(ParquetOf({FullRun("s1")}));
  // From schema version 15 on a curve is a typed list, never text.
  ExpectTextListImportsAt(table, "train_loss", /*version=*/12, &RunResult::train_loss);
}

TEST(ParquetListsTest, LoadDistributionsAreTypedFromVersion18AndTextBefore) {
  RunRecord run = FullRun("s1");
  const std::string bytes = ParquetOf({run});
  std::shared_ptr<arrow::Table> table = TableOf(bytes);
  for (const char* name : {"load_ttft_dist", "load_itl_dist", "load_e2e_dist"}) {
    EXPECT_EQ(table->GetColumnByName(name)->type()->ToString(), "list<element: double>") << name;
  }
  auto ttft = std::static_pointer_cast<arrow::ListArray>(
      table->GetColumnByName("load_ttft_dist")->chunk(0));
  ASSERT_EQ(ttft->value_length(0), 3);
  EXPECT_EQ(std::static_pointer_cast<arrow::DoubleArray>(ttft->values())->Value(2), 0.072);
  auto runs = RunsFromParquet(bytes, "f.parquet");
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->front().result.load_ttft_dist, "[0.009,0.011,0.072]");

  // A version 17 file (the curves typed, the distributions still text) imports
  // by the list rules, and text is refused from version 18 on.
  ExpectTextListImportsAt(table, "load_ttft_dist", 17, &RunResult::load_ttft_dist);
  // The curves stay typed in a version 17 file.
  ExpectRejected(WithListColumn(table, "train_loss", arrow::utf8(), R"(["[1.5]"])", 17),
                 "column train_loss has type string, expected list<element: double>");
}

TEST(ParquetListsTest, RejectsACurveOverTheElementBound) {
  std::shared_ptr<arrow::Table> table = TableOf(ParquetOf({FullRun("s1")}));
  std::string json = "[[";
  for (size_t i = 0; i <= kMaxListElements; ++i) json += i == 0 ? "0.5" : ",0.5";
  json += "]]";
  ExpectRejected(WithListColumn(table, "train_loss", RealsType(), json),
                 "row 0: field train_loss: 4097 elements, over the limit of 4096");
}

TEST(ParquetListsTest, RejectsAWrongElementType) {
  std::shared_ptr<arrow::Table> table = TableOf(ParquetOf({FullRun("s1")}));
  ExpectRejected(WithListColumn(table, "train_loss", arrow::list(arrow::int64()), "[[1, 2]]"),
                 "column train_loss has type list<element: int64>, expected list<element: double>");
  ExpectRejected(WithListColumn(table, "gen_decode_curve", RealsType(), "[[0.5]]"),
                 "column gen_decode_curve has type list<element: double>, expected");
}

TEST(ParquetListsTest, RejectsANonFiniteValue) {
  std::shared_ptr<arrow::Table> table = TableOf(ParquetOf({FullRun("s1")}));
  arrow::ListBuilder list(arrow::default_memory_pool(), std::make_shared<arrow::DoubleBuilder>(),
                          RealsType());
  auto* reals = static_cast<arrow::DoubleBuilder*>(list.value_builder());
  ASSERT_TRUE(list.Append().ok());
  ASSERT_TRUE(reals->Append(1.5).ok());
  ASSERT_TRUE(reals->Append(std::nan("")).ok());
  std::shared_ptr<arrow::Array> nan;
  ASSERT_TRUE(list.Finish(&nan).ok());
  ExpectRejected(WithListArray(table, "train_loss", nan, kSchemaVersion),
                 "row 0: field train_loss: element 1 is not finite (nan)");
  // Points: a value that is not finite, a negative position.
  auto infinite = *arrow::json::ArrayFromJSONString(PointsType(), "[[[0, 0.5], [16, 0.0]]]");
  auto points = std::static_pointer_cast<arrow::ListArray>(infinite);
  auto values = std::static_pointer_cast<arrow::StructArray>(points->values());
  arrow::DoubleBuilder with_inf;
  ASSERT_TRUE(with_inf.AppendValues({0.5, HUGE_VAL}).ok());
  std::shared_ptr<arrow::Array> inf_values;
  ASSERT_TRUE(with_inf.Finish(&inf_values).ok());
  auto bad_struct = *arrow::StructArray::Make({values->field(0), inf_values},
                                              {arrow::field("position", arrow::int64(), false),
                                               arrow::field("value", arrow::float64(), false)});
  auto bad_points =
      std::make_shared<arrow::ListArray>(PointsType(), 1, points->value_offsets(), bad_struct);
  ExpectRejected(WithListArray(table, "gen_match_curve", bad_points, kSchemaVersion),
                 "row 0: field gen_match_curve: element 1 is not finite (inf)");
  ExpectRejected(WithListColumn(table, "gen_match_curve", PointsType(), "[[[-1, 0.5]]]"),
                 "row 0: field gen_match_curve: element 0 has a negative position");
}

TEST(ParquetListsTest, AStoredTextThatIsNoListFailsTheExportNamingTheRun) {
  RunRecord run = MakeRun("s1", MakeSpec("gpt2"));
  run.result.gen_decode_curve = "[[1, 0.5], [2]]";
  auto bytes = RunsToParquet({run});
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(bytes.status().message())
                .find(run.run_id + ": field gen_decode_curve: "
                                   "element 1 is not a [position, value] pair"),
            std::string::npos)
      << bytes.status();
}

std::shared_ptr<arrow::DataType> StringMapType() {
  return arrow::map(arrow::utf8(), arrow::utf8());
}

TEST(ParquetKindParamsTest, AreKeyValueStructsSortedByKey) {
  std::shared_ptr<arrow::Table> table = TableOf(ParquetOf({FullRun("s1")}));
  auto list =
      std::static_pointer_cast<arrow::ListArray>(table->GetColumnByName("kind_params")->chunk(0));
  ASSERT_EQ(list->value_length(0), 2);
  auto entries = std::static_pointer_cast<arrow::StructArray>(list->values());
  auto keys = std::static_pointer_cast<arrow::StringArray>(entries->GetFieldByName("key"));
  auto values = std::static_pointer_cast<arrow::StringArray>(entries->GetFieldByName("value"));
  EXPECT_EQ(keys->GetString(0), "b");
  EXPECT_EQ(values->GetString(0), "x\"y");
  EXPECT_EQ(keys->GetString(1), "new_tokens");
  EXPECT_EQ(values->GetString(1), "16");
}

// Files of schema version 19 and older hold kind_params as a map: they import
// as before; from version 20 on a map is refused as any other wrong type.
TEST(ParquetKindParamsTest, AnOlderFilesMapImports) {
  const RunRecord run = FullRun("s1");
  std::shared_ptr<arrow::Table> table = TableOf(ParquetOf({run}));
  const std::string map_json = R"([[["new_tokens", "16"], ["b", "x\"y"]]])";
  auto runs =
      RunsFromParquet(WithListColumn(table, "kind_params", StringMapType(), map_json, 19), "f");
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->front().spec.kind_params, run.spec.kind_params);
  ExpectRejected(WithListColumn(table, "kind_params", StringMapType(), map_json),
                 "expected list<element: struct<key: string not null, value: string not null> "
                 "not null>");
}

TEST(ParquetKindParamsTest, RejectsANullEntryOrAKeyTwice) {
  std::shared_ptr<arrow::Table> table = TableOf(ParquetOf({FullRun("s1")}));
  // Nullable fields, as another writer may declare them: each null is refused by row.
  auto nullable = arrow::list(
      arrow::struct_({arrow::field("key", arrow::utf8()), arrow::field("value", arrow::utf8())}));
  ExpectRejected(
      WithListColumn(table, "kind_params", nullable, R"([[{"key": "steps", "value": null}]])"),
      "row 0: kind_params: NULL value of key 'steps'");
  ExpectRejected(WithListColumn(table, "kind_params", nullable, R"([[null]])"),
                 "row 0: kind_params: NULL entry 0");
  ExpectRejected(WithListColumn(table, "kind_params", nullable,
                                R"([[{"key": "a", "value": "1"}, {"key": "a", "value": "2"}]])"),
                 "row 0: kind_params: key 'a' twice");
  auto other_names = arrow::list(
      arrow::struct_({arrow::field("name", arrow::utf8()), arrow::field("value", arrow::utf8())}));
  ExpectRejected(WithListColumn(table, "kind_params", other_names, "[[]]"),
                 "column kind_params has type");
}

TEST(ParquetRowGroupsTest, AGroupEndsAtItsByteOrRowBound) {
  std::vector<RunRecord> runs(5, MakeRun("s1", MakeSpec("gpt2")));
  const int64_t one = RowGroupLengths({runs[0]}, kRowGroupMaxBytes, kRowGroupMaxRows).size();
  ASSERT_EQ(one, 1);
  runs[2].result.stderr_tail = std::string(10'000, 'e');
  // Two ordinary runs fit in 10,000 bytes, the third (over it alone) is a group of its own.
  EXPECT_EQ(RowGroupLengths(runs, 10'000, 100), (std::vector<int64_t>{2, 1, 2}));
  EXPECT_EQ(RowGroupLengths(runs, kRowGroupMaxBytes, 2), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(RowGroupLengths(runs, kRowGroupMaxBytes, kRowGroupMaxRows), (std::vector<int64_t>{5}));
  EXPECT_TRUE(RowGroupLengths({}, kRowGroupMaxBytes, kRowGroupMaxRows).empty());
}

TEST(ParquetRowGroupsTest, TheFileHasThePageIndexOfEveryColumn) {
  const std::string bytes = ParquetOf({FullRun("s1"), MakeRun("s1", MakeSpec("gpt2"))});
  auto input = std::make_shared<arrow::io::BufferReader>(arrow::Buffer::FromString(bytes));
  std::shared_ptr<parquet::FileMetaData> metadata = parquet::ReadMetaData(input);
  ASSERT_EQ(metadata->num_row_groups(), 1);
  std::unique_ptr<parquet::RowGroupMetaData> group = metadata->RowGroup(0);
  for (int c = 0; c < group->num_columns(); ++c) {
    EXPECT_TRUE(group->ColumnChunk(c)->GetOffsetIndexLocation().has_value()) << c;
  }
}

// Rows "| `name` | type | yes/no | ..." of the column table of doc/dataset.md.
TEST(DatasetDocTest, ListsEveryColumnWithItsType) {
  const char* source_dir = std::getenv("COMPATLAB_SOURCE_DIR");
  ASSERT_NE(source_dir, nullptr) << "COMPATLAB_SOURCE_DIR is not set";
  const std::filesystem::path doc = std::filesystem::path(source_dir) / "doc/dataset.md";
  std::ifstream file(doc);
  ASSERT_TRUE(file) << "cannot read " << doc;
  std::vector<std::string> rows;
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    // The first three cells: name, type, nullable.
    std::vector<std::string> cells;
    size_t start = 1;
    for (int i = 0; i < 3; ++i) {
      const size_t end = line.find('|', start);
      if (end == std::string::npos) break;
      std::string cell = line.substr(start, end - start);
      cell.erase(0, cell.find_first_not_of(' '));
      cell.erase(cell.find_last_not_of(' ') + 1);
      cells.push_back(cell);
      start = end + 1;
    }
    if (cells.size() == 3) rows.push_back(cells[0] + " " + cells[1] + " " + cells[2]);
  }
  std::vector<std::string> expected;
  for (const auto& field : RunsArrowSchema()->fields()) {
    expected.push_back("`" + field->name() + "` " + field->type()->ToString() + " " +
                       (field->nullable() ? "yes" : "no"));
  }
  EXPECT_EQ(rows, expected) << doc << " lists other columns than the export writes";
}

}  // namespace
}  // namespace compatlab
