#include "store/store.h"

#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "sqlite3.h"
#include "store/migrations.h"
#include "store/record_json.h"
#include "store/schema.h"
#include "store/sqlite.h"
#include "store/testing.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;
using test::FullRun;
using test::MakeRun;
using test::MakeSpec;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Only `name` itself is in `dir`: no -wal, -shm or -journal appeared.
void ExpectOnlyFile(const fs::path& dir, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{name});
}

// Every FieldDef agrees on `a` and `b`.
void ExpectSameFields(const RunRecord& a, const RunRecord& b) {
  for (const FieldDef& f : ResultFields()) EXPECT_EQ(f.get(a), f.get(b)) << f.name;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_.path();
    path_ = dir_ / "compatlab.db";
  }

  std::unique_ptr<Store> OpenOrDie(OpenMode mode = OpenMode::kReadWriteCreate) {
    auto store = Store::Open(path_, mode);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // A store with sweep `sweep_id` planning `plan`.
  std::unique_ptr<Store> StoreWithSweep(const std::string& sweep_id,
                                        const std::vector<TestSpec>& plan) {
    std::unique_ptr<Store> store = OpenOrDie();
    SweepInfo sweep;
    sweep.sweep_id = sweep_id;
    sweep.created_at = "2026-11-30T02:00:00.000Z";
    EXPECT_TRUE(store->CreateSweep(sweep, plan).ok());
    return store;
  }

  // Opening the file fails in every mode with `code` and a one-line message
  // naming the file and containing `needle`; the file's bytes stay as they were.
  void ExpectRefusedInEveryMode(absl::StatusCode code, const std::string& needle) {
    const std::string before = Slurp(path_);
    for (OpenMode mode : {OpenMode::kReadWriteCreate, OpenMode::kReadWrite, OpenMode::kReadOnly}) {
      auto store = Store::Open(path_, mode);
      EXPECT_EQ(store.status().code(), code) << store.status();
      const std::string message(store.status().message());
      EXPECT_NE(message.find(needle), std::string::npos) << message;
      EXPECT_NE(message.find(path_.filename().string()), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
    EXPECT_EQ(Slurp(path_), before);
  }

  // A raw SQLite connection to the store file.
  std::unique_ptr<sqlite::Database> Raw(int flags = SQLITE_OPEN_READWRITE) {
    auto db = sqlite::Database::Open(path_.string(), flags);
    EXPECT_TRUE(db.ok()) << db.status();
    return *std::move(db);
  }

  test::ScopedTempDir temp_;
  fs::path dir_;
  fs::path path_;
};

TEST_F(StoreTest, CreatesVersionedStoreInWalMode) {
  ASSERT_NE(OpenOrDie(), nullptr);
  auto db = Raw();
  EXPECT_EQ(*db->QueryInt("PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(*db->QueryInt("PRAGMA application_id"), kStoreApplicationId);
  EXPECT_EQ(*db->QueryInt("SELECT journal_mode = 'wal' FROM pragma_journal_mode"), 1);
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM meta WHERE key = 'created_by'"), 1);
  // Reopening in every mode works and changes nothing.
  db.reset();
  EXPECT_TRUE(Store::Open(path_, OpenMode::kReadWrite).ok());
  EXPECT_TRUE(Store::Open(path_, OpenMode::kReadOnly).ok());
  EXPECT_TRUE(Store::Open(path_, OpenMode::kReadWriteCreate).ok());
}

TEST_F(StoreTest, MissingFileIsNotFoundAndNotCreated) {
  for (OpenMode mode : {OpenMode::kReadOnly, OpenMode::kReadWrite}) {
    auto store = Store::Open(path_, mode);
    EXPECT_EQ(store.status().code(), absl::StatusCode::kNotFound) << store.status();
    EXPECT_FALSE(fs::exists(path_));
  }
}

TEST_F(StoreTest, InMemoryAndEmptyPathsAreRefused) {
  for (const char* path : {"", ":memory:", "file:x?mode=memory", "file:compatlab.db"}) {
    auto store = Store::Open(path, OpenMode::kReadWriteCreate);
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument) << path;
    EXPECT_NE(store.status().message().find("--db"), std::string::npos) << store.status();
  }
  EXPECT_TRUE(CheckStorePath(path_).ok());
}

TEST_F(StoreTest, WritersRefuseAStoreWhoseUniqueIndexIsDamagedAndLeaveItByteIdentical) {
  {
    std::unique_ptr<Store> store = StoreWithSweep("s1", {MakeSpec("gpt2")});
    ASSERT_TRUE(store->InsertRun(MakeRun("s1", MakeSpec("gpt2"))).ok());
  }
  int64_t page_size = 0, root = 0;
  std::string test_id;
  {
    auto db = Raw();
    page_size = *db->QueryInt("PRAGMA page_size");
    root = *db->QueryInt(
        "SELECT rootpage FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'runs' AND name "
        "LIKE 'sqlite_autoindex_runs_%'");
    test_id = MakeSpec("gpt2").TestId();
  }
  std::string bytes = Slurp(path_);
  const size_t start = static_cast<size_t>((root - 1) * page_size);
  const size_t at = bytes.find(test_id, start);
  ASSERT_LT(at, start + static_cast<size_t>(page_size));
  bytes[at] = bytes[at] == '0' ? '1' : '0';  // the index entry no longer matches its row
  WriteBytes(path_, bytes);
  for (OpenMode mode : {OpenMode::kReadWrite, OpenMode::kReadWriteCreate}) {
    auto store = Store::Open(path_, mode);
    EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
    EXPECT_NE(store.status().message().find("integrity_check"), std::string::npos)
        << store.status();
  }
  EXPECT_EQ(Slurp(path_), bytes);
  EXPECT_TRUE(Store::Open(path_, OpenMode::kReadOnly).ok());  // readers still read what they can
}

TEST_F(StoreTest, RejectsCorruptDatabaseWithoutWriting) {
  std::string garbage = "this is not a database, just text that a user passed as --db\n";
  for (int i = 0; i < 100; ++i) garbage += "0123456789abcdef";
  WriteBytes(path_, garbage);
  ExpectRefusedInEveryMode(absl::StatusCode::kInvalidArgument, "not a database");
  ExpectOnlyFile(dir_, "compatlab.db");
}

TEST_F(StoreTest, RejectsForeignSqliteDatabaseWithoutWriting) {
  {
    auto db = Raw(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(db->Exec("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine')").ok());
  }
  ExpectRefusedInEveryMode(absl::StatusCode::kFailedPrecondition, "not a compatlab store");
  ExpectOnlyFile(dir_, "compatlab.db");
}

TEST_F(StoreTest, RejectsStoreWithoutMetaTable) {
  {
    auto db = Raw(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(db->Exec("CREATE TABLE runs (x TEXT); PRAGMA application_id = " +
                         std::to_string(kStoreApplicationId))
                    .ok());
  }
  ExpectRefusedInEveryMode(absl::StatusCode::kFailedPrecondition, "no meta table");
}

TEST_F(StoreTest, RejectsNewerSchemaVersionWithoutWriting) {
  ASSERT_NE(StoreWithSweep("s1", {MakeSpec("llama")}), nullptr);
  {
    auto db = Raw();
    ASSERT_TRUE(db->Exec("PRAGMA user_version = " + std::to_string(kSchemaVersion + 1)).ok());
  }  // closing checkpoints the WAL into the file
  ExpectRefusedInEveryMode(absl::StatusCode::kFailedPrecondition, "newer");
}

TEST_F(StoreTest, MigrateBringsAnOlderStoreToThisVersionAndReadersNameTheCommand) {
  {
    auto db = Raw(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(Migrate(*db, kSchemaVersion - 1, ResultFields()).ok());
  }
  absl::StatusOr<std::unique_ptr<Store>> reader = Store::Open(path_, OpenMode::kReadOnly);
  ASSERT_EQ(reader.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(
      reader.status().message().find("run `compatlab migrate --db " + path_.string() + "` once"),
      std::string::npos)
      << reader.status();

  absl::StatusOr<int> was = MigrateStoreAt(path_);
  ASSERT_TRUE(was.ok()) << was.status();
  EXPECT_EQ(*was, kSchemaVersion - 1);
  ASSERT_TRUE(Store::Open(path_, OpenMode::kReadOnly).ok());
  was = MigrateStoreAt(path_);  // nothing left to do
  ASSERT_TRUE(was.ok()) << was.status();
  EXPECT_EQ(*was, kSchemaVersion);
  EXPECT_EQ(MigrateStoreAt(dir_ / "absent.db").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StoreTest, EmptyFileBecomesStoreOnlyWhenCreating) {
  WriteBytes(path_, "");
  EXPECT_EQ(Store::Open(path_, OpenMode::kReadOnly).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Store::Open(path_, OpenMode::kReadWrite).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fs::file_size(path_), 0u);
  EXPECT_TRUE(Store::Open(path_, OpenMode::kReadWriteCreate).ok());
  EXPECT_TRUE(Store::Open(path_, OpenMode::kReadOnly).ok());
}

TEST_F(StoreTest, ReadOnlyStoreRefusesWrites) {
  const TestSpec spec = MakeSpec("llama");
  ASSERT_NE(StoreWithSweep("s1", {spec}), nullptr);
  std::unique_ptr<Store> store = OpenOrDie(OpenMode::kReadOnly);
  EXPECT_FALSE(store->InsertRun(MakeRun("s1", spec)).ok());
  EXPECT_FALSE(store->FinishSweep("s1", "2026-11-30T03:00:00.000Z").ok());
  EXPECT_FALSE(store->CreateSweep(SweepInfo{.sweep_id = "s2"}, {}).ok());
  EXPECT_EQ(*store->CountRuns({}), 0);
  EXPECT_EQ(store->ListSweeps()->size(), 1u);
}

TEST_F(StoreTest, ReaderLeavesNoWalOrShmFilesBehind) {
  ASSERT_NE(StoreWithSweep("s1", {MakeSpec("llama")}), nullptr);  // closed again
  ASSERT_FALSE(fs::exists(path_.string() + "-wal"));
  {
    std::unique_ptr<Store> reader = OpenOrDie(OpenMode::kReadOnly);
    EXPECT_EQ(reader->ListSweeps()->size(), 1u);
  }
  EXPECT_FALSE(fs::exists(path_.string() + "-wal"));
  EXPECT_FALSE(fs::exists(path_.string() + "-shm"));
}

TEST_F(StoreTest, CreateSweepRecordsSweepAndPlanInOrder) {
  std::unique_ptr<Store> store = OpenOrDie();
  SweepInfo sweep{.sweep_id = "s1",
                  .created_at = "2026-11-30T02:00:00.000Z",
                  .suite = "smoke",
                  .args = "compatlab sweep --suite smoke --db 'a b.db'",
                  .host = "host-1",
                  .jobs = 2,
                  .planned = 99};
  std::vector<TestSpec> plan = {MakeSpec("llama"), MakeSpec("gpt2"), MakeSpec("bert", "train")};
  plan[2].kind_params = {{"steps", "3"}};
  ASSERT_TRUE(store->CreateSweep(sweep, plan).ok());

  auto got = store->GetSweep("s1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->created_at, sweep.created_at);
  EXPECT_FALSE(got->finished_at.has_value());
  EXPECT_EQ(got->suite, "smoke");
  EXPECT_EQ(got->args, sweep.args);
  EXPECT_EQ(got->host, "host-1");
  EXPECT_EQ(got->jobs, 2);
  EXPECT_EQ(got->planned, 3);
  EXPECT_EQ(got->recorded, 0);

  auto planned = store->PlannedTests("s1");
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_EQ(planned->size(), 3u);
  for (size_t i = 0; i < plan.size(); ++i) {
    EXPECT_EQ((*planned)[i].TestId(), plan[i].TestId());
    EXPECT_EQ(*TestSpecToJson((*planned)[i]), *TestSpecToJson(plan[i]));
  }
  EXPECT_EQ(store->GetSweep("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->PlannedTests("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StoreTest, CreateSweepRejectsTakenIdAndDuplicateTestsWithoutWriting) {
  std::unique_ptr<Store> store = StoreWithSweep("s1", {MakeSpec("llama")});
  EXPECT_EQ(store->CreateSweep(SweepInfo{.sweep_id = "s1"}, {MakeSpec("gpt2")}).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(
      store->CreateSweep(SweepInfo{.sweep_id = "s2"}, {MakeSpec("gpt2"), MakeSpec("gpt2")}).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->CreateSweep(SweepInfo{}, {}).code(), absl::StatusCode::kInvalidArgument);
  TestSpec bad_utf8 = MakeSpec("gpt2");
  bad_utf8.model_class = "Bad\xff";
  EXPECT_EQ(store->CreateSweep(SweepInfo{.sweep_id = "s3"}, {bad_utf8}).code(),
            absl::StatusCode::kInvalidArgument);
  auto sweeps = store->ListSweeps();
  ASSERT_EQ(sweeps->size(), 1u);
  EXPECT_EQ((*store->PlannedTests("s1"))[0].model_id, "hf:llama");
}

TEST_F(StoreTest, SecondResultForSameTestIsRejected) {
  const TestSpec spec = MakeSpec("llama");
  std::unique_ptr<Store> store = StoreWithSweep("s1", {spec});
  RunRecord first = MakeRun("s1", spec, TestStatus::kFailToRun);
  first.result.error_message = "first";
  ASSERT_TRUE(store->InsertRun(first).ok());

  RunRecord second = MakeRun("s1", spec, TestStatus::kPass);
  second.run_id = "another-run";
  absl::Status status = store->InsertRun(second);
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists) << status;

  auto runs = store->QueryRuns({});
  ASSERT_EQ(runs->size(), 1u);
  ExpectSameFields((*runs)[0], first);
}

TEST_F(StoreTest, RunIdMustBeUnique) {
  const TestSpec a = MakeSpec("llama"), b = MakeSpec("gpt2");
  std::unique_ptr<Store> store = StoreWithSweep("s1", {a, b});
  RunRecord run_a = MakeRun("s1", a);
  RunRecord run_b = MakeRun("s1", b);
  run_b.run_id = run_a.run_id;
  ASSERT_TRUE(store->InsertRun(run_a).ok());
  EXPECT_EQ(store->InsertRun(run_b).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(*store->CountRuns({}), 1);
}

TEST_F(StoreTest, CountsRunsByModelMostFirstUnderTheFilter) {
  const TestSpec a = MakeSpec("qwen3"), b = MakeSpec("qwen3", "train"), c = MakeSpec("qwen2"),
                 d = MakeSpec("bert");
  std::unique_ptr<Store> store = StoreWithSweep("s1", {a, b, c, d});
  for (const TestSpec& spec : {a, b, c, d}) ASSERT_TRUE(store->InsertRun(MakeRun("s1", spec)).ok());
  RunFilter qwen;
  qwen.model = "qwen";
  auto counts = store->CountRunsByModel(qwen);
  ASSERT_TRUE(counts.ok()) << counts.status();
  using Counts = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ(*counts, (Counts{{"hf:qwen3", 2}, {"hf:qwen2", 1}}));
  qwen.kind = "train";
  EXPECT_EQ(*store->CountRunsByModel(qwen), (Counts{{"hf:qwen3", 1}}));
}

TEST_F(StoreTest, InsertRunRequiresAPlannedTestOfAKnownSweep) {
  const TestSpec planned = MakeSpec("llama");
  std::unique_ptr<Store> store = StoreWithSweep("s1", {planned});
  EXPECT_EQ(store->InsertRun(MakeRun("nope", planned)).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->InsertRun(MakeRun("s1", MakeSpec("gpt2"))).code(),
            absl::StatusCode::kFailedPrecondition);
  RunRecord wrong_id = MakeRun("s1", planned);
  wrong_id.test_id = "0123";
  EXPECT_EQ(store->InsertRun(wrong_id).code(), absl::StatusCode::kInvalidArgument);
  RunRecord no_run_id = MakeRun("s1", planned);
  no_run_id.run_id.clear();
  EXPECT_EQ(store->InsertRun(no_run_id).code(), absl::StatusCode::kInvalidArgument);
  RunRecord bad_utf8 = MakeRun("s1", planned);
  bad_utf8.spec.model_class = "Bad\xff";
  EXPECT_EQ(store->InsertRun(bad_utf8).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*store->CountRuns({}), 0);
}

TEST_F(StoreTest, PendingTestsExcludeFinished) {
  std::vector<TestSpec> plan;
  for (const char* type : {"a", "b", "c", "d", "e"}) plan.push_back(MakeSpec(type));
  std::unique_ptr<Store> store = StoreWithSweep("s1", plan);
  ASSERT_TRUE(store->InsertRun(MakeRun("s1", plan[3])).ok());
  ASSERT_TRUE(store->InsertRun(MakeRun("s1", plan[0], TestStatus::kCrash)).ok());

  auto pending = store->PendingTests("s1");
  ASSERT_TRUE(pending.ok()) << pending.status();
  std::vector<std::string> types;
  for (const TestSpec& spec : *pending) types.push_back(spec.model_type);
  EXPECT_EQ(types, (std::vector<std::string>{"b", "c", "e"}));
  EXPECT_EQ(store->GetSweep("s1")->recorded, 2);
  EXPECT_EQ(store->PendingTests("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StoreTest, PendingTestsAreCountedPerSweep) {
  const TestSpec spec = MakeSpec("llama");
  std::unique_ptr<Store> store = StoreWithSweep("s1", {spec});
  ASSERT_TRUE(store->CreateSweep(SweepInfo{.sweep_id = "s2"}, {spec}).ok());
  ASSERT_TRUE(store->InsertRun(MakeRun("s1", spec)).ok());
  EXPECT_TRUE(store->PendingTests("s1")->empty());
  EXPECT_EQ(store->PendingTests("s2")->size(), 1u);
  ASSERT_TRUE(store->InsertRun(MakeRun("s2", spec)).ok());  // same test, other sweep
}

TEST_F(StoreTest, RoundTripsEveryField) {
  const RunRecord full = FullRun("s1");
  RunRecord sparse = MakeRun("s1", MakeSpec("gpt2"), TestStatus::kTimeout);
  std::unique_ptr<Store> store = StoreWithSweep("s1", {full.spec, sparse.spec});
  ASSERT_TRUE(store->InsertRun(full).ok());
  ASSERT_TRUE(store->InsertRun(sparse).ok());
  store.reset();

  std::unique_ptr<Store> reader = OpenOrDie(OpenMode::kReadOnly);
  auto runs = reader->QueryRuns({});
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 2u);
  ExpectSameFields((*runs)[0], full);
  EXPECT_EQ((*runs)[0].result.stderr_tail, full.result.stderr_tail);  // bytes, NUL included
  EXPECT_EQ((*runs)[0].spec.kind_params, full.spec.kind_params);
  ExpectSameFields((*runs)[1], sparse);
  const RunResult& r = (*runs)[1].result;
  EXPECT_FALSE(r.build_s || r.prepare_s || r.steady_median_s || r.steady_p90_s || r.steady_iters ||
               r.param_count || r.host_peak_rss_bytes || r.torch_num_threads || r.exit_code ||
               r.term_signal);
}

TEST_F(StoreTest, MetricsAreStoredAsNullWhenUnmeasured) {
  const TestSpec spec = MakeSpec("gpt2");
  std::unique_ptr<Store> store = StoreWithSweep("s1", {spec});
  ASSERT_TRUE(store->InsertRun(MakeRun("s1", spec)).ok());
  store.reset();
  auto db = Raw(SQLITE_OPEN_READONLY);
  EXPECT_EQ(*db->QueryInt("SELECT build_s IS NULL AND exit_code IS NULL FROM runs"), 1);
  EXPECT_EQ(*db->QueryInt("SELECT typeof(wall_s) = 'real' FROM runs"), 1);
}

TEST_F(StoreTest, QueryRunsFilters) {
  std::vector<TestSpec> plan = {MakeSpec("llama"), MakeSpec("gpt2"), MakeSpec("gpt_neox"),
                                MakeSpec("llama", "train")};
  plan[1].mode = "compile";
  std::unique_ptr<Store> store = StoreWithSweep("s1", plan);
  ASSERT_TRUE(store->CreateSweep(SweepInfo{.sweep_id = "s2"}, {plan[0]}).ok());
  ASSERT_TRUE(store->InsertRun(MakeRun("s1", plan[0])).ok());
  ASSERT_TRUE(store->InsertRun(MakeRun("s1", plan[1], TestStatus::kFailToCompile)).ok());
  ASSERT_TRUE(store->InsertRun(MakeRun("s1", plan[2], TestStatus::kOom)).ok());
  ASSERT_TRUE(store->InsertRun(MakeRun("s1", plan[3])).ok());
  ASSERT_TRUE(store->InsertRun(MakeRun("s2", plan[0], TestStatus::kTimeout)).ok());

  auto types = [&](const RunFilter& filter) {
    std::vector<std::string> out;
    auto runs = store->QueryRuns(filter);
    EXPECT_TRUE(runs.ok()) << runs.status();
    for (const RunRecord& r : *runs) out.push_back(r.spec.model_type + "/" + r.sweep_id);
    EXPECT_EQ(*store->CountRuns(filter),
              filter.limit > 0 ? *store->CountRuns(RunFilter{filter}) : int64_t(out.size()));
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(types({}), (V{"llama/s1", "gpt2/s1", "gpt_neox/s1", "llama/s1", "llama/s2"}));
  EXPECT_EQ(types({.sweep_id = "s2"}), V{"llama/s2"});
  EXPECT_EQ(types({.model = "GPT"}), (V{"gpt2/s1", "gpt_neox/s1"}));
  EXPECT_EQ(types({.model = "hf:gpt_"}), V{"gpt_neox/s1"});
  EXPECT_EQ(types({.model = "%"}), V{});
  EXPECT_EQ(types({.model = "'; DROP TABLE runs; --"}), V{});
  EXPECT_EQ(types({.status = TestStatus::kPass}), (V{"llama/s1", "llama/s1"}));
  EXPECT_EQ(types({.sweep_id = "s1", .status = TestStatus::kPass, .kind = "train"}), V{"llama/s1"});
  EXPECT_EQ(types({.mode = "compile"}), V{"gpt2/s1"});
  EXPECT_EQ(types({.target = "cuda"}), V{});
  EXPECT_EQ(types({.test_id = plan[0].TestId()}), (V{"llama/s1", "llama/s2"}));
  EXPECT_EQ(types({.run_id = MakeRun("s2", plan[0]).run_id}), V{"llama/s2"});
  EXPECT_EQ(types({.run_id = "no-such-run"}), V{});
  EXPECT_EQ(types({.limit = 2}), (V{"llama/s1", "gpt2/s1"}));
  EXPECT_EQ(types({.limit = 2, .newest_first = true}), (V{"llama/s2", "llama/s1"}));
  EXPECT_EQ(*store->CountRuns({.limit = 2}), 5);
}

TEST_F(StoreTest, SweepLifecycle) {
  std::unique_ptr<Store> store = OpenOrDie();
  EXPECT_FALSE(store->LatestUnfinishedSweep()->has_value());
  ASSERT_TRUE(
      store->CreateSweep({.sweep_id = "old", .created_at = "2026-11-29T00:00:00.000Z"}, {}).ok());
  ASSERT_TRUE(
      store->CreateSweep({.sweep_id = "new", .created_at = "2026-11-30T00:00:00.000Z"}, {}).ok());
  EXPECT_EQ((*store->LatestUnfinishedSweep())->sweep_id, "new");

  ASSERT_TRUE(store->FinishSweep("new", "2026-11-30T01:00:00.000Z").ok());
  EXPECT_EQ(store->GetSweep("new")->finished_at, "2026-11-30T01:00:00.000Z");
  EXPECT_EQ((*store->LatestUnfinishedSweep())->sweep_id, "old");
  ASSERT_TRUE(store->FinishSweep("old", "2026-11-30T02:00:00.000Z").ok());
  EXPECT_FALSE(store->LatestUnfinishedSweep()->has_value());
  EXPECT_EQ(store->FinishSweep("nope", "x").code(), absl::StatusCode::kNotFound);

  auto sweeps = store->ListSweeps();
  ASSERT_EQ(sweeps->size(), 2u);
  EXPECT_EQ((*sweeps)[0].sweep_id, "old");
  EXPECT_EQ((*sweeps)[1].sweep_id, "new");
}

TEST_F(StoreTest, TwoConnectionsShareTheStore) {
  const TestSpec a = MakeSpec("llama"), b = MakeSpec("gpt2");
  std::unique_ptr<Store> writer1 = StoreWithSweep("s1", {a, b});
  std::unique_ptr<Store> writer2 = OpenOrDie(OpenMode::kReadWrite);
  std::unique_ptr<Store> reader = OpenOrDie(OpenMode::kReadOnly);
  ASSERT_TRUE(writer1->InsertRun(MakeRun("s1", a)).ok());
  ASSERT_TRUE(writer2->InsertRun(MakeRun("s1", b)).ok());
  EXPECT_EQ(writer2->InsertRun(MakeRun("s1", a)).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(*reader->CountRuns({.sweep_id = "s1"}), 2);
  EXPECT_TRUE(reader->PendingTests("s1")->empty());
}

TEST_F(StoreTest, DamagedRowIsDataLoss) {
  const TestSpec spec = MakeSpec("llama");
  ASSERT_NE(StoreWithSweep("s1", {spec}), nullptr);
  {
    std::unique_ptr<Store> store = OpenOrDie();
    ASSERT_TRUE(store->InsertRun(MakeRun("s1", spec)).ok());
  }
  {
    auto db = Raw();
    ASSERT_TRUE(db->Exec("UPDATE runs SET status = 'passed'; "
                         "UPDATE planned_tests SET spec = '{\"seq_len\": \"x\"}'")
                    .ok());
  }
  std::unique_ptr<Store> store = OpenOrDie(OpenMode::kReadOnly);
  EXPECT_EQ(store->QueryRuns({}).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(store->PlannedTests("s1").status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(StoreTest, QueryRunsFiltersByDtypeAndStack) {
  std::vector<TestSpec> plan = {MakeSpec("llama"), MakeSpec("gpt2")};
  plan[1].dtype = "bfloat16";
  std::unique_ptr<Store> store = StoreWithSweep("s1", plan);
  RunRecord a = MakeRun("s1", plan[0]);
  a.result.torch_version = "2.12.0";
  a.result.transformers_version = "5.22.0";
  RunRecord b = MakeRun("s1", plan[1]);
  b.result.torch_version = "2.13.0+cpu";
  b.result.transformers_version = "5.23.0";
  ASSERT_TRUE(store->InsertRun(a).ok());
  ASSERT_TRUE(store->InsertRun(b).ok());
  EXPECT_EQ(store->QueryRuns({.dtype = "bfloat16"})->size(), 1u);
  EXPECT_EQ(store->QueryRuns({.torch_version = "2.12.0"})->front().spec.model_type, "llama");
  EXPECT_EQ(store->QueryRuns({.transformers_version = "5.23.0"})->front().spec.model_type, "gpt2");
  EXPECT_TRUE(store->QueryRuns({.torch_version = "2.13.0"})->empty());  // exact, not a prefix
}

TEST_F(StoreTest, QueryRunsSortsBySchemaFields) {
  std::vector<TestSpec> plan = {MakeSpec("llama"), MakeSpec("gpt2"), MakeSpec("bert")};
  std::unique_ptr<Store> store = StoreWithSweep("s1", plan);
  const std::vector<double> walls = {2.0, 1.0, 2.0};
  for (size_t i = 0; i < plan.size(); ++i) {
    RunRecord run = MakeRun("s1", plan[i]);
    run.result.wall_s = walls[i];
    if (i != 1) run.result.steady_median_s = 0.5;
    ASSERT_TRUE(store->InsertRun(run).ok());
  }
  auto order = [&](const std::string& sort) {
    auto keys = ParseRunSort(sort);
    EXPECT_TRUE(keys.ok()) << keys.status();
    RunFilter filter;
    filter.sort = *keys;
    std::vector<std::string> out;
    auto runs = store->QueryRuns(filter);
    EXPECT_TRUE(runs.ok()) << runs.status();
    if (runs.ok()) {
      for (const RunRecord& r : *runs) out.push_back(r.spec.model_type);
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(order("model_type"), (V{"bert", "gpt2", "llama"}));
  EXPECT_EQ(order("-model_type"), (V{"llama", "gpt2", "bert"}));
  EXPECT_EQ(order("-wall_s,model_type"), (V{"bert", "llama", "gpt2"}));
  EXPECT_EQ(order("-wall_s"), (V{"llama", "bert", "gpt2"}));          // ties in insertion order
  EXPECT_EQ(order("steady_median_s"), (V{"gpt2", "llama", "bert"}));  // NULL first
  EXPECT_EQ(ParseRunSort("wall_s;DROP TABLE runs").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseRunSort("wall_s,").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseRunSort("-").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ParseRunSort("")->empty());
  RunFilter bad;
  bad.sort = {{.field = "rowid"}};
  EXPECT_EQ(store->QueryRuns(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(StoreTest, MergeRunsCreatesSweepsAndPlansAndIsIdempotent) {
  std::unique_ptr<Store> store = OpenOrDie();
  std::vector<RunRecord> runs = {MakeRun("far", MakeSpec("llama")),
                                 MakeRun("far", MakeSpec("gpt2"))};
  runs[0].started_at = "2026-11-30T03:00:00.000Z";
  runs[0].finished_at = "2026-11-30T03:00:05.000Z";
  runs[0].host = "far-host";
  runs[0].jobs = 4;
  auto stats = store->MergeRuns(runs, "compatlab import x");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->inserted, 2);
  EXPECT_EQ(stats->already_present, 0);
  EXPECT_EQ(stats->sweeps_created, 1);
  EXPECT_EQ(stats->tests_planned, 2);
  auto sweep = store->GetSweep("far");
  ASSERT_TRUE(sweep.ok());
  EXPECT_EQ(sweep->created_at, "2026-11-30T02:00:00.000Z");   // earliest started_at
  EXPECT_EQ(sweep->finished_at, "2026-11-30T03:00:05.000Z");  // latest finished_at
  EXPECT_EQ(sweep->host, "far-host");
  EXPECT_EQ(sweep->jobs, 4);
  EXPECT_EQ(sweep->planned, 2);
  EXPECT_EQ(sweep->recorded, 2);
  EXPECT_EQ(sweep->args, "compatlab import x");
  EXPECT_TRUE(store->PendingTests("far")->empty());
  EXPECT_FALSE(store->LatestUnfinishedSweep()->has_value());

  // The same runs again: nothing changes.
  stats = store->MergeRuns(runs, "again");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->inserted, 0);
  EXPECT_EQ(stats->already_present, 2);
  EXPECT_EQ(*store->CountRuns({}), 2);

  // A third test of the same sweep is appended to its plan.
  stats = store->MergeRuns({MakeRun("far", MakeSpec("bert"))}, "more");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->sweeps_created, 0);
  EXPECT_EQ(stats->tests_planned, 1);
  EXPECT_EQ(store->GetSweep("far")->planned, 3);
  EXPECT_EQ(store->PlannedTests("far")->back().model_type, "bert");
  ExpectSameFields(store->QueryRuns({.model = "gpt2"})->front(), runs[1]);
}

TEST_F(StoreTest, MergeRunsIsAllOrNothing) {
  std::unique_ptr<Store> store = StoreWithSweep("s1", {MakeSpec("llama")});
  ASSERT_TRUE(store->InsertRun(MakeRun("s1", MakeSpec("llama"))).ok());
  ASSERT_TRUE(store->FinishSweep("s1", "2026-11-30T02:10:00.000Z").ok());  // no longer a plan here
  // A new run for a test the sweep already has a result for: a conflict.
  RunRecord conflict = MakeRun("s1", MakeSpec("llama"), TestStatus::kOom);
  conflict.run_id = "other-run";
  auto stats = store->MergeRuns({MakeRun("s2", MakeSpec("gpt2")), conflict}, "x");
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kAlreadyExists) << stats.status();
  EXPECT_NE(std::string(stats.status().message()).find("other-run"), std::string::npos);
  EXPECT_EQ(*store->CountRuns({}), 1);
  EXPECT_EQ(store->GetSweep("s2").status().code(), absl::StatusCode::kNotFound);

  RunRecord bad = MakeRun("s3", MakeSpec("gpt2"));
  bad.test_id = "0123";
  EXPECT_EQ(store->MergeRuns({bad}, "x").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->GetSweep("s3").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StoreTest, MergeRunsRefusesIdsThatAreNoStoredIds) {
  std::unique_ptr<Store> store = OpenOrDie();
  for (const auto& [sweep_id, run_id] : std::vector<std::pair<std::string, std::string>>{
           {"x/../../victim", "r1"}, {"s1", "../r1"}, {"s1", "r\n1"}}) {
    RunRecord run = MakeRun(sweep_id, MakeSpec("gpt2"));
    run.run_id = run_id;
    auto stats = store->MergeRuns({run}, "import");
    EXPECT_EQ(stats.status().code(), absl::StatusCode::kInvalidArgument) << sweep_id << run_id;
    EXPECT_NE(std::string(stats.status().message()).find("is not an id compatlab writes"),
              std::string::npos)
        << stats.status();
  }
  EXPECT_EQ(*store->CountRuns({}), 0);
}

TEST_F(StoreTest, ImportedRunsNeverJoinASweepPlannedHere) {
  // An unfinished sweep of this store, and a finished one whose plan has
  // execution settings: both were planned by `compatlab sweep`.
  std::unique_ptr<Store> store = StoreWithSweep("open", {MakeSpec("llama"), MakeSpec("gpt2")});
  SweepInfo done;
  done.sweep_id = "done";
  done.created_at = "2026-11-30T02:00:00.000Z";
  ResolvedTest planned{MakeSpec("bert"), TestExecution{}};
  ASSERT_TRUE(store->CreateResolvedSweep(done, {planned}).ok());
  ASSERT_TRUE(store->FinishSweep("done", "2026-11-30T02:10:00.000Z").ok());
  ASSERT_TRUE(store->MergeRuns({MakeRun("imported", MakeSpec("t5"))}, "import").ok());
  EXPECT_TRUE(*store->IsPlannedHere("open"));
  EXPECT_TRUE(*store->IsPlannedHere("done"));
  EXPECT_FALSE(*store->IsPlannedHere("imported"));
  EXPECT_FALSE(*store->IsPlannedHere("none"));

  // A pending test's result, a test the plan lacks, a finished local sweep:
  // each refused, nothing written.
  for (const RunRecord& run : {MakeRun("open", MakeSpec("llama")), MakeRun("open", MakeSpec("t5")),
                               MakeRun("done", MakeSpec("t5"))}) {
    auto merged = store->MergeRuns({MakeRun("new", MakeSpec("gpt2")), run}, "import");
    EXPECT_EQ(merged.status().code(), absl::StatusCode::kInvalidArgument) << merged.status();
    EXPECT_NE(std::string(merged.status().message()).find("was planned in this store"),
              std::string::npos)
        << merged.status();
  }
  EXPECT_EQ(store->PendingTests("open")->size(), 2u);
  EXPECT_EQ(store->GetSweep("done")->planned, 1);
  EXPECT_EQ(store->GetSweep("new").status().code(), absl::StatusCode::kNotFound);
  // An imported sweep still takes more imported runs.
  EXPECT_TRUE(store->MergeRuns({MakeRun("imported", MakeSpec("bert"))}, "more").ok());
}

TEST_F(StoreTest, AMergedShardSweepKeepsItsRecordAndWholePlanAndNeverReadsAsLocal) {
  std::unique_ptr<Store> store = OpenOrDie();
  MergedSweep shard;
  shard.info.sweep_id = "s1";
  shard.info.created_at = "2026-12-05T10:00:00.000Z";
  shard.info.suite = "ci";
  shard.info.plan_id = "p1";
  shard.info.shard = 1;
  shard.info.shards = 3;
  shard.plan = {MakeSpec("gpt2"), MakeSpec("bert")};  // unfinished: bert has no run
  auto one_run = [calls = 0](std::vector<RunRecord>& batch) mutable {
    if (++calls == 1) batch.push_back(MakeRun("s1", MakeSpec("gpt2")));
    return absl::OkStatus();
  };
  auto stats = store->MergeRunBatches(one_run, "merge", nullptr, {shard});
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->sweeps_created, 1);
  EXPECT_EQ(stats->tests_planned, 2);
  EXPECT_EQ(stats->inserted, 1);
  absl::StatusOr<SweepInfo> info = store->GetSweep("s1");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->suite, "ci");
  EXPECT_EQ(info->plan_id, "p1");
  EXPECT_EQ(info->shard, 1);
  EXPECT_EQ(info->shards, 3);
  EXPECT_EQ(info->planned, 2);
  EXPECT_EQ(info->finished_at, "2026-11-30T02:00:01.000Z");  // its run's end
  EXPECT_EQ(store->PendingTests("s1")->size(), 1u);
  EXPECT_FALSE(*store->IsPlannedHere("s1"));
  // Again: nothing added. With another plan or shard: refused, nothing written.
  stats = store->MergeRunBatches([](std::vector<RunRecord>&) { return absl::OkStatus(); }, "m",
                                 nullptr, {shard});
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->sweeps_created + stats->tests_planned, 0);
  shard.info.shard = 2;
  stats = store->MergeRunBatches([](std::vector<RunRecord>&) { return absl::OkStatus(); }, "m",
                                 nullptr, {shard});
  EXPECT_TRUE(absl::IsInvalidArgument(stats.status())) << stats.status();
  // A sweep this store planned itself is never joined.
  StoreWithSweep("local", {MakeSpec("vit")});
  shard.info.sweep_id = "local";
  shard.info.plan_id = "";
  shard.info.shard.reset();
  shard.info.shards.reset();
  stats = store->MergeRunBatches([](std::vector<RunRecord>&) { return absl::OkStatus(); }, "m",
                                 nullptr, {shard});
  EXPECT_TRUE(absl::IsInvalidArgument(stats.status())) << stats.status();
}

TEST_F(StoreTest, MergeRunBatchesReadsBatchByBatchInOneTransaction) {
  std::unique_ptr<Store> store = OpenOrDie();
  int calls = 0;
  auto stats = store->MergeRunBatches(
      [&calls](std::vector<RunRecord>& batch) {
        if (++calls <= 3) batch.push_back(MakeRun("b" + std::to_string(calls), MakeSpec("gpt2")));
        return absl::OkStatus();
      },
      "import");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->inserted, 3);
  EXPECT_EQ(calls, 4);
  // An error of the source after some batches: nothing of them is kept.
  calls = 0;
  stats = store->MergeRunBatches(
      [&calls](std::vector<RunRecord>& batch) {
        if (++calls == 2) return absl::InvalidArgumentError("bad file");
        batch.push_back(MakeRun("c", MakeSpec("gpt2")));
        return absl::OkStatus();
      },
      "import");
  EXPECT_EQ(stats.status().message(), "bad file");
  EXPECT_EQ(*store->CountRuns({}), 3);
  // A run stored already goes to on_stored with its rowid.
  int64_t seen = 0;
  stats = store->MergeRunBatches(
      [&calls](std::vector<RunRecord>& batch) {
        if (++calls < 4) batch.push_back(MakeRun("b1", MakeSpec("gpt2")));
        return absl::OkStatus();
      },
      "again",
      [&seen](const RunRecord&, int64_t rowid) {
        seen = rowid;
        return absl::AlreadyExistsError("twice");
      });
  EXPECT_EQ(stats.status().message(), "twice");
  EXPECT_EQ(seen, 1);
}

// --- stores from anywhere ---------------------------------------------------

// The store at `path_` edited with a raw connection as a hostile sender
// would: `sql` run with the schema writable, the integrity check still ok.
void EditSchema(const fs::path& path, const std::string& sql) {
  auto db = sqlite::Database::Open(path.string(), SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->Exec(sql).ok()) << sql;
  EXPECT_EQ(*(*db)->QueryInt("SELECT 'ok' = (SELECT * FROM pragma_integrity_check)"), 1);
}

TEST_F(StoreTest, AStoreWhoseSchemaIsNotItsVersionsIsRefusedBeforeAnyRowIsRead) {
  const struct {
    std::string sql;
    std::string needle;
  } cases[] = {
      {"ALTER TABLE runs RENAME TO real_runs; CREATE VIEW runs AS WITH RECURSIVE n(i) AS "
       "(SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT * FROM real_runs, n",
       "runs is a view where a store has a table"},
      {"CREATE TRIGGER t AFTER INSERT ON sweeps BEGIN DELETE FROM runs; END",
       "it holds trigger t, which no store has"},
      {"CREATE TABLE extra (x)", "it holds table extra"},
      {"CREATE INDEX runs_by_status ON runs (status)", "it holds index runs_by_status"},
      {"DROP INDEX runs_by_test_id; CREATE INDEX runs_by_test_id ON runs (lower(test_id))",
       "index runs_by_test_id has"},
      {"ALTER TABLE runs ADD COLUMN slow TEXT AS (upper(run_id))", "table runs has"},
      // sweeps rebuilt as a sender would, one property changed: STRICT, NOT NULL, DEFAULT.
      {"CREATE TABLE s2 (sweep_id TEXT NOT NULL PRIMARY KEY, created_at TEXT NOT NULL, "
       "finished_at TEXT, suite TEXT NOT NULL, args TEXT NOT NULL, host TEXT NOT NULL, "
       "jobs INTEGER NOT NULL, planned INTEGER NOT NULL, plan_id TEXT NOT NULL DEFAULT '', "
       "shard INTEGER, shards INTEGER); INSERT INTO s2 SELECT * FROM "
       "sweeps; DROP TABLE sweeps; ALTER TABLE s2 RENAME TO sweeps",
       "table sweeps has 'not strict' where this version has 'strict'"},
      {"CREATE TABLE s2 (sweep_id TEXT NOT NULL PRIMARY KEY, created_at TEXT NOT NULL, "
       "finished_at TEXT, suite TEXT, args TEXT NOT NULL, host TEXT NOT NULL, "
       "jobs INTEGER NOT NULL, planned INTEGER NOT NULL, plan_id TEXT NOT NULL DEFAULT '', "
       "shard INTEGER, shards INTEGER) STRICT; INSERT INTO s2 SELECT * FROM "
       "sweeps; DROP TABLE sweeps; ALTER TABLE s2 RENAME TO sweeps",
       "table sweeps has 'suite TEXT pk=0 hidden=0 notnull=0 default=none'"},
      {"CREATE TABLE s2 (sweep_id TEXT NOT NULL PRIMARY KEY, created_at TEXT NOT NULL, "
       "finished_at TEXT, suite TEXT NOT NULL, args TEXT NOT NULL, host TEXT NOT NULL DEFAULT "
       "(hex(randomblob(16))), "
       "jobs INTEGER NOT NULL, planned INTEGER NOT NULL, plan_id TEXT NOT NULL DEFAULT '', "
       "shard INTEGER, shards INTEGER) STRICT; INSERT INTO s2 SELECT * FROM "
       "sweeps; DROP TABLE sweeps; ALTER TABLE s2 RENAME TO sweeps",
       "default=hex(randomblob(16))"},
  };
  for (const auto& c : cases) {
    fs::remove(path_);
    ASSERT_NE(OpenOrDie(), nullptr);
    EditSchema(path_, c.sql);
    for (OpenMode mode :
         {OpenMode::kReadOnly, OpenMode::kReadOnlyImmutable, OpenMode::kReadWrite}) {
      const std::string before = Slurp(path_);
      auto store = Store::Open(path_, mode);
      EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << c.sql;
      EXPECT_NE(std::string(store.status().message()).find(c.needle), std::string::npos)
          << store.status();
      EXPECT_EQ(Slurp(path_), before);
    }
  }
  // SQLite's own statistics tables (ANALYZE) are no difference.
  fs::remove(path_);
  ASSERT_NE(OpenOrDie(), nullptr);
  EditSchema(path_, "ANALYZE");
  EXPECT_TRUE(Store::Open(path_, OpenMode::kReadOnly).ok());
}

TEST_F(StoreTest, TheSchemaCheckComparesWithTheSchemaOfTheFieldsItIsGiven) {
  auto db = sqlite::Database::Open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(Migrate(**db, kSchemaVersion, ResultFields()).ok());
  EXPECT_TRUE(CheckSchemaObjects(**db, kSchemaVersion, ResultFields()).ok());
  std::vector<FieldDef> fewer = ResultFields();
  fewer.pop_back();  // a runs table without the last field's column
  absl::Status s = CheckSchemaObjects(**db, kSchemaVersion, fewer);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(std::string(s.message()).find("table runs has"), std::string::npos) << s;
}

TEST_F(StoreTest, AStatementPastTheWorkBoundStopsWithAClearError) {
  auto db = sqlite::Database::Open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(db.ok());
  (*db)->LimitStatementWork(1000);  // a million instructions
  constexpr std::string_view kEndless =
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n";
  auto endless = (*db)->QueryInt(kEndless);
  EXPECT_EQ(endless.status().code(), absl::StatusCode::kResourceExhausted) << endless.status();
  EXPECT_NE(std::string(endless.status().message()).find("1000000 SQLite instructions"),
            std::string::npos);
  EXPECT_EQ((*db)->Exec(std::string(kEndless)).code(), absl::StatusCode::kResourceExhausted);
  // Rows stepped one by one count toward their statement's bound, and a new
  // run of a statement starts from zero.
  auto rows = (*db)->Prepare(
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n");
  ASSERT_TRUE(rows.ok());
  absl::StatusOr<bool> row = true;
  int64_t read = 0;
  while (row.ok() && *row) {
    row = rows->Step();
    ++read;
  }
  EXPECT_EQ(row.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_GT(read, 1000);
  EXPECT_EQ(*(*db)->QueryInt("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                             "LIMIT 1000) SELECT count(*) FROM n"),
            1000);
}

TEST_F(StoreTest, AnImmutableReaderLeavesTheFileAndItsNeighboursAlone) {
  ASSERT_NE(OpenOrDie(), nullptr);
  fs::path odd = dir_ / "a store?#%.db";
  fs::rename(path_, odd);
  const std::string before = Slurp(odd);
  {
    auto store = Store::Open(odd, OpenMode::kReadOnlyImmutable);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ(*(*store)->CountRuns({}), 0);
    auto refused = Store::Open(dir_ / "missing.db", OpenMode::kReadOnlyImmutable);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kNotFound);
  }
  EXPECT_EQ(Slurp(odd), before);
  ExpectOnlyFile(dir_, odd.filename().string());
  // A -wal with commits not in the file is refused, and left as it is.
  WriteBytes(odd.string() + "-wal", "not checkpointed");
  auto store = Store::Open(odd, OpenMode::kReadOnlyImmutable);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(store.status().message()).find("write-ahead log"), std::string::npos);
  EXPECT_EQ(Slurp(odd.string() + "-wal"), "not checkpointed");
}

TEST_F(StoreTest, ScanFieldsRunsByRowidAndFieldsByRowid) {
  std::vector<TestSpec> plan = {MakeSpec("llama"), MakeSpec("gpt2"), MakeSpec("bert")};
  std::unique_ptr<Store> store = StoreWithSweep("s1", plan);
  for (const TestSpec& spec : plan) {
    RunRecord run = MakeRun("s1", spec, TestStatus::kFailToRun);
    run.result.error_traceback = "Traceback ...";
    ASSERT_TRUE(store->InsertRun(run).ok());
  }
  std::vector<int64_t> rowids;
  std::vector<std::string> types;
  ASSERT_TRUE(store
                  ->ScanFields({"model_type", "status"}, 0,
                               [&](int64_t rowid, std::vector<FieldValue>& values) {
                                 rowids.push_back(rowid);
                                 types.push_back(std::get<std::string>(values[0]));
                                 EXPECT_EQ(std::get<std::string>(values[1]), "fail_to_run");
                               })
                  .ok());
  EXPECT_EQ(types, (std::vector<std::string>{"llama", "gpt2", "bert"}));
  int64_t later = 0;
  ASSERT_TRUE(
      store->ScanFields({}, rowids[1], [&](int64_t, std::vector<FieldValue>&) { ++later; }).ok());
  EXPECT_EQ(later, 1);
  EXPECT_EQ(store->ScanFields({"rowid; DROP TABLE runs"}, 0, [](int64_t, auto&) {}).code(),
            absl::StatusCode::kInvalidArgument);

  auto runs = store->RunsByRowid({rowids[2], 999, rowids[0]}, false);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].spec.model_type, "bert");
  EXPECT_EQ((*runs)[1].spec.model_type, "llama");
  EXPECT_EQ((*runs)[0].result.error_traceback, "");
  EXPECT_EQ(store->RunsByRowid({rowids[0]}, true)->front().result.error_traceback, "Traceback ...");

  std::vector<std::string> picked;
  std::vector<int64_t> picked_rowids;
  ASSERT_TRUE(store
                  ->FieldsByRowid({"model_type"}, {rowids[1], 999, rowids[0], rowids[1]},
                                  [&](int64_t rowid, const std::vector<FieldView>& values) {
                                    picked_rowids.push_back(rowid);
                                    picked.emplace_back(std::get<std::string_view>(values[0]));
                                  })
                  .ok());
  EXPECT_EQ(picked, (std::vector<std::string>{"gpt2", "llama", "gpt2"}));
  EXPECT_EQ(picked_rowids, (std::vector<int64_t>{rowids[1], rowids[0], rowids[1]}));
  int64_t calls = 0;
  ASSERT_TRUE(store->FieldsByRowid({"model_type"}, {}, [&](int64_t, auto&) { ++calls; }).ok());
  EXPECT_EQ(calls, 0);
  // No field: a call for each run, with no value.
  ASSERT_TRUE(store
                  ->FieldsByRowid({}, {rowids[0], 999},
                                  [&](int64_t rowid, const std::vector<FieldView>& values) {
                                    EXPECT_EQ(rowid, rowids[0]);
                                    EXPECT_TRUE(values.empty());
                                    ++calls;
                                  })
                  .ok());
  EXPECT_EQ(calls, 1);
  // The prepared reads, used again, find a run stored since their last use.
  SweepInfo later_sweep;
  later_sweep.sweep_id = "s2";
  later_sweep.created_at = "2026-11-30T03:00:00.000Z";
  ASSERT_TRUE(store->CreateSweep(later_sweep, {plan[0]}).ok());
  absl::Status inserted = store->InsertRun(MakeRun("s2", plan[0], TestStatus::kPass));
  ASSERT_TRUE(inserted.ok()) << inserted;
  const int64_t newest = rowids[2] + 1;
  picked.clear();
  ASSERT_TRUE(store
                  ->FieldsByRowid({"status"}, {newest},
                                  [&](int64_t, const std::vector<FieldView>& values) {
                                    picked.emplace_back(std::get<std::string_view>(values[0]));
                                  })
                  .ok());
  EXPECT_EQ(picked, (std::vector<std::string>{"pass"}));
  ASSERT_EQ(store->RunsByRowid({newest}, false)->size(), 1u);
  EXPECT_EQ(store->FieldsByRowid({"nope"}, {rowids[0]}, [](int64_t, auto&) {}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(StoreTest, FieldsByRowidReadsMoreFieldListsThanItKeepsStatementsFor) {
  std::unique_ptr<Store> store = StoreWithSweep("s1", {MakeSpec("llama")});
  RunRecord run = MakeRun("s1", MakeSpec("llama"), TestStatus::kPass);
  run.result.error_traceback = "";
  ASSERT_TRUE(store->InsertRun(run).ok());
  const std::vector<std::string> names = {"model_type", "status",  "model_id",   "kind",
                                          "mode",       "target",  "error_type", "seq_len",
                                          "batch_size", "sweep_id"};
  ASSERT_GT(names.size(), Store::kKeptFieldsSelects);
  // Every list, in turn and then again: each answers with its own columns,
  // whether its statement was kept or made again.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < names.size(); ++i) {
      const std::vector<std::string> fields = {names[i], "status"};
      std::vector<FieldView> seen;
      std::string status;
      ASSERT_TRUE(store
                      ->FieldsByRowid(fields, {1},
                                      [&](int64_t, const std::vector<FieldView>& values) {
                                        seen = values;
                                        status = std::get<std::string_view>(values[1]);
                                      })
                      .ok());
      ASSERT_EQ(seen.size(), 2u) << names[i];
      EXPECT_EQ(status, "pass") << names[i];
    }
  }
  // The views hold a value of each kind as stored: null, integer, text.
  ASSERT_TRUE(store
                  ->FieldsByRowid({"error_type", "seq_len", "model_type"}, {1},
                                  [&](int64_t, const std::vector<FieldView>& values) {
                                    EXPECT_TRUE(
                                        std::holds_alternative<std::string_view>(values[0]) ||
                                        std::holds_alternative<std::monostate>(values[0]));
                                    EXPECT_EQ(std::get<int64_t>(values[1]), run.spec.seq_len);
                                    EXPECT_EQ(std::get<std::string_view>(values[2]), "llama");
                                  })
                  .ok());
}

}  // namespace
}  // namespace compatlab
