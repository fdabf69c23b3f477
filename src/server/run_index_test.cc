#include "server/run_index.h"

#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <set>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "query/matrix.h"
#include "sqlite3.h"
#include "store/testing.h"

namespace compatlab {
namespace {

// A store of runs over 6 models, 2 targets, 2 modes, 2 kinds and 3 stacks, in
// shuffled finish order (so insertion order and finish order disagree), some
// finishing at the same millisecond.
class RunIndexMatrixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = temp_.path() / "compatlab.db";
    std::mt19937 rng(11);
    const char* const stacks[3][2] = {
        {"2.12.0+cpu", "5.22.0"}, {"2.13.0+cpu", "5.23.0"}, {"2.13.0+cu128", "5.23.0"}};
    for (int sweep = 0; sweep < 8; ++sweep) {
      std::vector<RunRecord> runs;
      const std::string sweep_id = fmt::format("s{}", sweep);
      for (int m = 0; m < 6; ++m) {
        for (const char* target : {"cpu", "cuda"}) {
          for (const char* mode : {"eager", "compile"}) {
            for (const char* kind : {"forward", "generate"}) {
              if (rng() % 3 == 0) continue;
              TestSpec spec = test::MakeSpec(fmt::format("model{}", m), kind);
              spec.target = target;
              spec.mode = mode;
              RunRecord run = test::MakeRun(
                  sweep_id, spec, rng() % 4 == 0 ? TestStatus::kFailToRun : TestStatus::kPass);
              const int stack = static_cast<int>(rng() % 3);
              run.result.torch_version = stacks[stack][0];
              run.result.transformers_version = stacks[stack][1];
              run.finished_at = fmt::format("2026-12-0{}T10:00:0{}.000Z", 1 + rng() % 3, rng() % 2);
              run.started_at = fmt::format("2026-11-30T0{}:00:00.000Z", rng() % 10);
              runs.push_back(run);
            }
          }
        }
      }
      // Twins the CLI's matrix puts in columns of their own (doc/matrix.md): a forward test
      // over 2 ranks, and dynamic-shapes tests (true and mark over the same shapes).
      for (int m = 0; m < 2; ++m) {
        TestSpec ranks = test::MakeSpec(fmt::format("model{}", m), "forward");
        ranks.ranks = 2;
        TestSpec dynamic = test::MakeSpec(fmt::format("model{}", m), "forward");
        dynamic.mode = "compile";
        dynamic.shapes = fmt::format("{}x{},{}x{}", dynamic.batch_size, dynamic.seq_len,
                                     dynamic.batch_size, dynamic.seq_len * 2);
        TestSpec mark = dynamic;
        dynamic.dynamic = "true";
        mark.dynamic = "mark";
        for (const TestSpec& spec : {ranks, dynamic, mark}) {
          RunRecord run = test::MakeRun(sweep_id, spec);
          run.result.torch_version = stacks[sweep % 3][0];
          run.result.transformers_version = stacks[sweep % 3][1];
          run.finished_at = fmt::format("2026-12-0{}T10:00:0{}.000Z", 1 + rng() % 3, rng() % 2);
          runs.push_back(run);
        }
      }
      RunRecord harness = test::MakeRun(sweep_id, test::MakeSpec("x", "noop"));
      harness.spec.model_id = std::string(kHarnessModelId);
      harness.test_id = harness.spec.TestId();
      harness.run_id = "harness-" + sweep_id;
      runs.push_back(harness);
      test::WriteRuns(db_, sweep_id, runs);
    }
    auto store = Store::Open(db_, OpenMode::kReadOnly);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    ASSERT_TRUE(index_.Refresh(*store_).ok());
    auto all = store_->QueryRuns({});
    ASSERT_TRUE(all.ok());
    all_ = *std::move(all);
  }

  // The page of the index, made into a matrix as /api/matrix does.
  Matrix Page(const MatrixIndexQuery& query, MatrixIndexPage* out = nullptr) {
    const MatrixIndexPage page = index_.MatrixPage(query);
    auto runs = store_->RunsByRowid(page.rowids, false);
    EXPECT_TRUE(runs.ok());
    Matrix m = BuildMatrix(*std::move(runs), query.selection, page.columns);
    m.current = page.cells;
    m.superseded = page.selected - page.cells;
    m.stacks = page.stacks;
    if (out != nullptr) *out = page;
    return m;
  }

  test::ScopedTempDir temp_;
  std::filesystem::path db_;
  std::unique_ptr<Store> store_;
  RunIndex index_;
  std::vector<RunRecord> all_;
};

// The run id of each cell of each row: what a matrix says.
std::vector<std::string> CellIds(const Matrix& m) {
  std::vector<std::string> out;
  for (const MatrixRow& row : m.rows) {
    for (size_t c = 0; c < m.columns.size(); ++c) {
      out.push_back(row.model_id + " " + row.test + " " + m.columns[c].target + "/" +
                    m.columns[c].mode + "/" + std::to_string(m.columns[c].ranks) + "/" +
                    m.columns[c].dynamic + " " +
                    (row.cells[c] < 0 ? "-" : m.runs[row.cells[c]].run_id));
    }
  }
  return out;
}

TEST_F(RunIndexMatrixTest, CountsAreTheFacetsCountsWithoutTheirValues) {
  const Facets facets = index_.GetFacets();
  const Facets counts = index_.Counts();
  std::set<std::string> models;
  for (const RunRecord& run : all_) models.insert(run.spec.model_id);
  EXPECT_EQ(counts.runs, static_cast<int64_t>(all_.size()));
  EXPECT_EQ(counts.models, static_cast<int64_t>(models.size()));
  EXPECT_EQ(counts.runs, facets.runs);
  EXPECT_EQ(counts.models, facets.models);
  EXPECT_FALSE(facets.values.empty());
  EXPECT_TRUE(counts.values.empty());
}

TEST_F(RunIndexMatrixTest, PagesAgreeWithTheMatrixOfEveryRun) {
  for (const char* stack : {"newest", "all", "torch=2.12.0", "torch=2.13.0+cu128"}) {
    const StackSelection selection = *ParseStackSelection(stack);
    const Matrix whole = BuildMatrix(all_, selection);
    ASSERT_FALSE(whole.rows.empty()) << stack;
    MatrixIndexQuery query;
    query.selection = selection;
    query.limit = 1000;
    MatrixIndexPage page;
    const Matrix from_index = Page(query, &page);
    EXPECT_EQ(CellIds(from_index), CellIds(whole)) << stack;
    EXPECT_EQ(page.rows, static_cast<int64_t>(whole.rows.size()));
    EXPECT_EQ(from_index.current, whole.current) << stack;
    EXPECT_EQ(from_index.superseded, whole.superseded) << stack;
    EXPECT_EQ(from_index.stacks, whole.stacks);
    // Pages of 5 rows: the same rows and cells, with every column on each page.
    std::vector<std::string> paged;
    for (size_t offset = 0; offset < whole.rows.size(); offset += 5) {
      query.offset = offset;
      query.limit = 5;
      const Matrix part = Page(query);
      EXPECT_EQ(part.columns, whole.columns);
      for (const std::string& id : CellIds(part)) paged.push_back(id);
    }
    EXPECT_EQ(paged, CellIds(whole)) << stack;
  }
  // The filters narrow both alike.
  MatrixIndexQuery query;
  query.query.filter.model = "MODEL3";
  query.query.filter.kind = "generate";
  query.limit = 100;
  RunFilter filter;
  filter.model = "MODEL3";
  filter.kind = "generate";
  auto runs = store_->QueryRuns(filter);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(CellIds(Page(query)), CellIds(BuildMatrix(*runs, StackSelection{})));
}

TEST_F(RunIndexMatrixTest, PagesAfterARefreshPlaceNewModelsAndTestsInOrder) {
  MatrixIndexQuery query;
  query.selection = *ParseStackSelection("all");
  query.limit = 1000;
  ASSERT_EQ(CellIds(Page(query)), CellIds(BuildMatrix(all_, query.selection)));
  // New rows that sort first (a new model) and between (a new test of a known
  // model), and a newer run of a known cell, indexed by a second refresh.
  std::vector<RunRecord> more;
  for (const char* model : {"aaa", "model2"}) {
    TestSpec spec = test::MakeSpec(model, "forward");
    spec.seq_len = 77;
    spec.target = "neuron";
    more.push_back(test::MakeRun("later", spec));
    more.back().finished_at = "2026-12-09T00:00:00.000Z";
  }
  TestSpec known = test::MakeSpec("model1", "forward");
  known.target = "cpu";
  more.push_back(test::MakeRun("later", known));
  more.back().finished_at = "2026-12-09T00:00:00.000Z";
  test::WriteRuns(db_, "later", more);
  ASSERT_TRUE(index_.Refresh(*store_).ok());
  auto all = store_->QueryRuns({});
  ASSERT_TRUE(all.ok());
  const Matrix whole = BuildMatrix(*all, query.selection);
  const Matrix from_index = Page(query);
  EXPECT_EQ(CellIds(from_index), CellIds(whole));
  EXPECT_EQ(from_index.current, whole.current);
  EXPECT_EQ(from_index.superseded, whole.superseded);
  ASSERT_FALSE(from_index.rows.empty());
  EXPECT_EQ(from_index.rows.front().model_id, "hf:aaa");
}

TEST_F(RunIndexMatrixTest, RunsAreMarkedSupersededWithinTheirCellAndStack) {
  std::vector<int64_t> rowids;
  for (int64_t i = 1; i <= static_cast<int64_t>(all_.size()); ++i) rowids.push_back(i);
  const std::vector<bool> current = index_.Current(rowids);
  const Matrix every = BuildMatrix(all_, *ParseStackSelection("all"));
  // A run the matrix of all stacks shows is current (nothing on its stack finished later).
  std::set<std::string> shown;
  for (const RunRecord& run : every.runs) shown.insert(run.run_id);
  auto records = store_->RunsByRowid(rowids, false);
  ASSERT_TRUE(records.ok());
  int64_t superseded = 0;
  for (size_t i = 0; i < records->size(); ++i) {
    if (shown.contains((*records)[i].run_id)) {
      EXPECT_TRUE(current[i]) << (*records)[i].run_id;
    }
    superseded += current[i] ? 0 : 1;
  }
  EXPECT_GT(superseded, 0);
  EXPECT_EQ(index_.Current({999999}), std::vector<bool>{true});
}

// Rowids need not be dense (a store edited by hand, or one whose runs were
// deleted): runs are found by rowid all the same.
TEST_F(RunIndexMatrixTest, RunsAreFoundByRowidWhenRowidsHaveGaps) {
  std::vector<int64_t> rowids;
  for (int64_t i = 1; i <= static_cast<int64_t>(all_.size()); ++i) rowids.push_back(i);
  const std::vector<bool> dense = index_.Current(rowids);
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE runs SET rowid = rowid + 1000 WHERE rowid > 50", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = Store::Open(db_, OpenMode::kReadOnly);
  ASSERT_TRUE(store.ok()) << store.status();
  RunIndex gaps;
  ASSERT_TRUE(gaps.Refresh(**store).ok());
  for (int64_t& rowid : rowids) rowid += rowid > 50 ? 1000 : 0;
  EXPECT_EQ(gaps.Current(rowids), dense);
  EXPECT_GT(std::count(dense.begin(), dense.end(), false), 0);
  EXPECT_EQ(gaps.Current({51}), std::vector<bool>{true});  // no such run
}

// A store of 2,000 runs where each search route wins for some query: 400
// models (so a rare model's merge is cheapest), a rare target and dtype
// (their posting lists are), and broad filters (the plain scan is).
class RunIndexSearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = temp_.path() / "compatlab.db";
    std::mt19937 rng(5);
    const char* const types[] = {"llama", "gpt2", "bert", "t5", "qwen3", "whisper"};
    for (int sweep = 0; sweep < 4; ++sweep) {
      std::vector<RunRecord> runs;
      const std::string sweep_id = fmt::format("s{}", sweep);
      for (int i = 0; i < 500; ++i) {
        const int m = static_cast<int>(rng() % 400);
        TestSpec spec = test::MakeSpec(types[m % 6], rng() % 2 ? "forward" : "generate");
        spec.model_id = fmt::format("hf:{}-{}", types[m % 6], m);
        spec.seq_len = 1 + i;  // one test per run of a sweep
        spec.target = rng() % 50 == 0 ? "neuron" : (rng() % 3 ? "cpu" : "cuda");
        spec.mode = rng() % 2 ? "eager" : "compile";
        spec.dtype = rng() % 40 == 0 ? "bfloat16" : "float32";
        const TestStatus status = rng() % 5 == 0 ? TestStatus::kFailToRun : TestStatus::kPass;
        RunRecord run = test::MakeRun(sweep_id, spec, status);
        run.result.torch_version = sweep % 2 ? "2.13.0+cpu" : "2.12.0+cpu";
        runs.push_back(run);
      }
      test::WriteRuns(db_, sweep_id, runs);
    }
    auto store = Store::Open(db_, OpenMode::kReadOnly);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    ASSERT_TRUE(index_.Refresh(*store_).ok());
    ASSERT_TRUE(store_
                    ->ScanFields({"run_id"}, 0,
                                 [&](int64_t rowid, std::vector<FieldValue>& values) {
                                   rowids_[std::get<std::string>(values[0])] = rowid;
                                 })
                    .ok());
  }

  // The rowids of the runs the store's own filter selects, newest first.
  std::vector<int64_t> Expected(const RunFilter& filter) {
    RunFilter newest = filter;
    newest.newest_first = true;
    auto runs = store_->QueryRuns(newest);
    EXPECT_TRUE(runs.ok());
    std::vector<int64_t> rowids;
    for (const RunRecord& run : *runs) rowids.push_back(rowids_.at(run.run_id));
    return rowids;
  }

  test::ScopedTempDir temp_;
  std::filesystem::path db_;
  std::unique_ptr<Store> store_;
  RunIndex index_;
  std::map<std::string, int64_t> rowids_;  // by run_id
};

TEST_F(RunIndexSearchTest, EveryRouteFindsWhatTheStoresFilterFinds) {
  std::vector<RunFilter> filters(12);
  filters[1].target = "neuron";
  filters[2].target = "neuron";
  filters[2].status = TestStatus::kPass;
  filters[3].model = "LLAMA-12";  // hf:llama-12, -120..-129 (any case)
  filters[4].model = "gpt2";
  filters[4].mode = "compile";
  filters[5].dtype = "bfloat16";
  filters[5].model = "bert";
  filters[6].status = TestStatus::kFailToRun;
  filters[6].torch_version = "2.13.0+cpu";
  filters[7].model = "t5-3";
  filters[7].dtype = "bfloat16";
  filters[8].target = "cuda";
  filters[8].kind = "generate";
  filters[9].sweep_id = "s2";
  filters[9].target = "neuron";
  filters[10].target = "tpu";  // no such value: nothing
  filters[11].model = "no-such-model";
  std::set<WalkKind> walks;
  for (const RunFilter& filter : filters) {
    const std::vector<int64_t> all = Expected(filter);
    for (const int64_t before : {int64_t{0}, int64_t{1001}}) {
      std::vector<int64_t> expected;
      for (int64_t rowid : all) {
        if (before == 0 || rowid < before) expected.push_back(rowid);
      }
      for (const auto& [limit, cap] : {std::pair<size_t, size_t>{50, 1000}, {7, 20}}) {
        IndexQuery query;
        query.filter = filter;
        query.before_rowid = before;
        query.limit = limit;
        query.count_cap = cap;
        const IndexPage page = index_.Search(query);
        walks.insert(page.walk);
        const std::vector<int64_t> want(expected.begin(),
                                        expected.begin() + std::min(expected.size(), limit));
        const std::string what = fmt::format("model={} target={} before={} limit={}", filter.model,
                                             filter.target, before, limit);
        EXPECT_EQ(page.rowids, want) << what;
        EXPECT_EQ(page.has_more, expected.size() > limit) << what;
        EXPECT_EQ(page.total, static_cast<int64_t>(std::min(expected.size(), cap))) << what;
        EXPECT_EQ(page.total_capped, expected.size() > cap) << what;
      }
    }
  }
  EXPECT_TRUE(walks.contains(WalkKind::kScan));
  EXPECT_TRUE(walks.contains(WalkKind::kModels));
  EXPECT_TRUE(walks.contains(WalkKind::kPostings));
}

// A store for the matrix page's two routes: 16 models of 5 types, 3 targets, 2
// modes, 2 kinds, 2 dtypes and 2 sequence lengths; 6 stack pairs (two torch
// builds of one release, a transformers version that compares equal to
// another, an empty torch version); finish times from a few seconds, so many
// runs of a cell finish at the same time; harness runs; two tests whose labels
// are the same text with another kind and dtype.
class RunIndexMatrixRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = temp_.path() / "compatlab.db";
    for (int sweep = 0; sweep < 8; ++sweep) WriteSweep(sweep);
    auto store = Store::Open(db_, OpenMode::kReadOnly);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    ASSERT_TRUE(index_.Refresh(*store_).ok());
  }

  void WriteSweep(int sweep) {
    const char* const stacks[][2] = {
        {"2.12.0+cpu", "5.22.0"},  {"2.13.0+cpu", "5.23.0"}, {"2.13.0+cu128", "5.23.0"},
        {"2.13.0+cpu", "5.023.0"}, {"", "5.23.0"},           {"2.11.0", "5.22.0"}};
    const char* const types[] = {"llama", "gpt2", "bert", "t5", "qwen3"};
    std::vector<RunRecord> runs;
    std::set<std::string> tests;  // a sweep has one result per test
    const std::string sweep_id = fmt::format("s{}", sweep);
    for (int i = 0; i < 100; ++i) {
      const int m = static_cast<int>(rng_() % 16);
      TestSpec spec = test::MakeSpec(types[m % 5], rng_() % 3 ? "forward" : "generate");
      spec.model_id = fmt::format("hf:{}-{}", types[m % 5], m);
      spec.target = std::array{"cpu", "cuda", "neuron"}[rng_() % 3];
      spec.mode = rng_() % 2 ? "eager" : "compile";
      spec.dtype = rng_() % 5 ? "float32" : "bfloat16";
      spec.seq_len = rng_() % 4 ? 32 : 128;
      if (m == 7 && rng_() % 2) {
        // "x 1x32 y 1x32 z" twice: kind "x 1x32 y", dtype "z"; kind "x", dtype "y 1x32 z".
        const bool first = rng_() % 2;
        spec.kind = first ? "x 1x32 y" : "x";
        spec.dtype = first ? "z" : "y 1x32 z";
        spec.seq_len = 32;
      }
      const TestStatus status = rng_() % 4 == 0 ? TestStatus::kFailToRun : TestStatus::kPass;
      if (!tests.insert(spec.TestId()).second) continue;
      RunRecord run = test::MakeRun(sweep_id, spec, status);
      run.run_id = fmt::format("{}-{}", sweep_id, i);
      const auto& stack = stacks[rng_() % 6];
      run.result.torch_version = stack[0];
      run.result.transformers_version = stack[1];
      run.finished_at = fmt::format("2026-12-0{}T10:00:0{}.000Z", 1 + rng_() % 2, rng_() % 3);
      runs.push_back(run);
    }
    RunRecord harness = test::MakeRun(sweep_id, test::MakeSpec("x", "noop"));
    harness.spec.model_id = std::string(kHarnessModelId);
    harness.test_id = harness.spec.TestId();
    harness.run_id = "harness-" + sweep_id;
    harness.finished_at = "2026-12-09T00:00:00.000Z";
    harness.result.torch_version = "9.9.9";
    runs.push_back(harness);
    test::WriteRuns(db_, sweep_id, runs);
  }

  // The queries: filters that are cell or stack properties, crossed with
  // stack selections and pages.
  std::vector<MatrixIndexQuery> Queries() const {
    std::vector<IndexQuery> filters(16);
    filters[1].filter.model = "LLAMA";
    filters[2].filter.model = "a-1";  // hf:llama-10, hf:llama-15
    filters[3].filter.target = "cuda";
    filters[4].filter.mode = "compile";
    filters[4].filter.model = "t5";
    filters[5].filter.kind = "generate";
    filters[6].filter.dtype = "bfloat16";
    filters[6].filter.target = "cpu";
    filters[7].filter.torch_version = "2.13.0+cu128";
    filters[8].filter.transformers_version = "5.22.0";
    filters[9].model_id = "hf:gpt2-11";
    filters[9].filter.model = "gpt";
    filters[10].filter.kind = "x";
    filters[11].filter.dtype = "z";
    filters[11].filter.model = "bert-7";
    filters[12].filter.target = "tpu";  // no such value
    filters[13].filter.model = "no-such-model";
    filters[14].model_id = std::string(kHarnessModelId);
    filters[15].filter.torch_version = "9.9.9";  // only the harness ran on it
    std::vector<MatrixIndexQuery> queries;
    for (const IndexQuery& filter : filters) {
      for (const char* stack :
           {"newest", "all", "torch=2.12.0", "torch=2.13.0+cu128", "transformers=5.23.0",
            "torch=2.13.0,transformers=5.023.0", "torch=9.9"}) {
        for (const auto& [offset, limit] :
             {std::pair<size_t, size_t>{0, 1000}, {0, 5}, {7, 5}, {30, 4}, {5000, 50}}) {
          MatrixIndexQuery& query = queries.emplace_back();
          query.query = filter;
          query.selection = *ParseStackSelection(stack);
          query.offset = offset;
          query.limit = limit;
        }
      }
    }
    return queries;
  }

  // Checks MatrixPage against MatrixPageByWalk for every query; returns how
  // many pages held tied runs (more candidate rowids than cells shown).
  int ExpectRoutesAgree() {
    int tied = 0;
    for (const MatrixIndexQuery& query : Queries()) {
      const MatrixIndexPage fast = index_.MatrixPage(query);
      const MatrixIndexPage walked = index_.MatrixPageByWalk(query);
      const std::string what = fmt::format(
          "model={} model_id={} target={} mode={} kind={} dtype={} torch={} "
          "transformers={} stack={} offset={} limit={}",
          query.query.filter.model, query.query.model_id, query.query.filter.target,
          query.query.filter.mode, query.query.filter.kind, query.query.filter.dtype,
          query.query.filter.torch_version, query.query.filter.transformers_version,
          query.selection.Describe(), query.offset, query.limit);
      EXPECT_TRUE(fast.from_summaries) << what;
      EXPECT_FALSE(walked.from_summaries) << what;
      EXPECT_EQ(fast.rowids, walked.rowids) << what;
      EXPECT_EQ(fast.columns, walked.columns) << what;
      EXPECT_EQ(fast.rows, walked.rows) << what;
      EXPECT_EQ(fast.cells, walked.cells) << what;
      EXPECT_EQ(fast.selected, walked.selected) << what;
      EXPECT_EQ(fast.stacks, walked.stacks) << what;
      EXPECT_EQ(fast.newest, walked.newest) << what;
      tied += !walked.rowids.empty() && CellsShown(walked) < walked.rowids.size();
    }
    return tied;
  }

  // The cells the page shows: one current run each.
  size_t CellsShown(const MatrixIndexPage& page) {
    auto runs = store_->RunsByRowid(page.rowids, false);
    EXPECT_TRUE(runs.ok());
    return runs.ok() ? BuildMatrix(*std::move(runs), *ParseStackSelection("all")).runs.size() : 0;
  }

  std::mt19937 rng_{23};
  test::ScopedTempDir temp_;
  std::filesystem::path db_;
  std::unique_ptr<Store> store_;
  RunIndex index_;
};

TEST_F(RunIndexMatrixRoutesTest, MatrixPageFromCellSummariesEqualsTheWalk) {
  EXPECT_GT(ExpectRoutesAgree(), 10);
  // Runs appended by a later refresh join the summaries: newer runs, runs at a
  // cell's latest time, new models and stacks.
  WriteSweep(8);
  WriteSweep(9);
  ASSERT_TRUE(index_.Refresh(*store_).ok());
  EXPECT_GT(ExpectRoutesAgree(), 10);
}

TEST_F(RunIndexMatrixRoutesTest, FiltersThatAreNotCellPropertiesWalk) {
  MatrixIndexQuery query;
  query.query.filter.status = TestStatus::kPass;
  EXPECT_FALSE(index_.MatrixPage(query).from_summaries);
  query = {};
  query.query.filter.sweep_id = "s3";
  EXPECT_FALSE(index_.MatrixPage(query).from_summaries);
  query = {};
  query.selection = *ParseStackSelection("s3");
  const MatrixIndexPage page = index_.MatrixPage(query);
  EXPECT_FALSE(page.from_summaries);
  EXPECT_GT(page.cells, 0);
  query = {};
  EXPECT_TRUE(index_.MatrixPage(query).from_summaries);
}

}  // namespace
}  // namespace compatlab
