#include "server/run_index.h"

#include <random>
#include <set>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "query/matrix.h"
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
                    m.columns[c].mode + " " +
                    (row.cells[c] < 0 ? "-" : m.runs[row.cells[c]].run_id));
    }
  }
  return out;
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

}  // namespace
}  // namespace compatlab
