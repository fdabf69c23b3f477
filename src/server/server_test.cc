#include "server/server.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "sqlite3.h"
#include "store/op_testing.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store/testing.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::MakeRun;
using test::MakeSpec;

// The run objects of a {"fields": [...], "rows": [[...]]} answer.
json Runs(const json& table) {
  json runs = json::array();
  for (const json& row : table["rows"]) {
    json run = json::object();
    for (size_t i = 0; i < table["fields"].size(); ++i)
      run[table["fields"][i].get<std::string>()] = row[i];
    runs.push_back(run);
  }
  return runs;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = temp_.path() / "compatlab.db";
    web_ = temp_.path() / "web";
    fs::create_directories(web_);
    std::FILE* f = std::fopen((web_ / "index.html").c_str(), "w");
    std::fputs("<!doctype html><title>compatlab</title>", f);
    std::fclose(f);
    f = std::fopen((temp_.path() / "secret.txt").c_str(), "w");
    std::fputs("secret", f);
    std::fclose(f);
    auto store = Store::Open(db_, OpenMode::kReadWriteCreate);
    ASSERT_TRUE(store.ok()) << store.status();
    writer_ = *std::move(store);
    // 30 models x 2 targets, one sweep; model 7 fails on cuda with HTML in its message.
    for (int m = 0; m < 30; ++m) {
      for (const char* target : {"cpu", "cuda"}) {
        TestSpec spec = MakeSpec("model" + std::to_string(m));
        spec.target = target;
        plan_.push_back(spec);
      }
    }
    SweepInfo sweep;
    sweep.sweep_id = "s1";
    sweep.created_at = "2026-11-30T02:00:00.000Z";
    ASSERT_TRUE(writer_->CreateSweep(sweep, plan_).ok());
    for (size_t i = 0; i + 2 < plan_.size(); ++i) Insert(i);  // the last model comes later
  }

  void Insert(size_t i) {
    const TestSpec& spec = plan_[i];
    const bool fails = spec.model_type == "model7" && spec.target == "cuda";
    RunRecord run = MakeRun("s1", spec, fails ? TestStatus::kFailToRun : TestStatus::kPass);
    run.result.torch_version = "2.13.0";
    if (fails) {
      run.result.error_type = "RuntimeError";
      run.result.error_message = "<img src=x onerror=alert(1)><script>alert(2)</script>";
      run.result.error_traceback = "Traceback (most recent call last): ...";
    } else {
      run.result.prepare_s = 1.0 + static_cast<double>(i);
      run.result.steady_median_s = 0.01;
    }
    ASSERT_TRUE(writer_->InsertRun(run).ok());
  }

  // `python`: the script generator's interpreter; "" for none.
  void Start(const std::string& python = "") {
    ServerOptions options;
    options.db = db_;
    options.web_dir = web_;
    options.kb_path = temp_.path() / "no-kb.json";
    options.probe.python = python;
    options.probe.probe_dir = (temp_.path() / "probe").string();
    options.targets_dir = temp_.path() / "targets";
    options.refresh_interval_s = 0;
    options.threads = threads_;
    auto server = Server::Open(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_TRUE(server_->Bind("127.0.0.1", 0).ok());
    thread_ = std::thread([this] { EXPECT_TRUE(server_->Serve().ok()); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }

  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
  }

  // GET `path`: the status, and the body parsed as JSON when it is JSON.
  std::pair<int, json> Get(const std::string& path) {
    httplib::Result r = client_->Get(path);
    EXPECT_TRUE(r) << path;
    if (!r) return {0, nullptr};
    last_headers_ = r->headers;
    json body = json::parse(r->body, nullptr, false);
    return {r->status, body.is_discarded() ? json(r->body) : body};
  }

  int threads_ = 4;  // worker threads of the next Start()
  test::ScopedTempDir temp_;
  fs::path db_, web_;
  std::vector<TestSpec> plan_;
  std::unique_ptr<Store> writer_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  std::unique_ptr<httplib::Client> client_;
  httplib::Headers last_headers_;
};

TEST_F(ServerTest, SearchFiltersPagesAndCounts) {
  Start();
  auto [status, page] = Get("/api/search?target=cuda&limit=10");
  ASSERT_EQ(status, 200) << page;
  EXPECT_EQ(Runs(page).size(), 10u);
  EXPECT_EQ(page["total"], 29);
  EXPECT_EQ(page["total_capped"], false);
  EXPECT_EQ(page["has_more"], true);
  EXPECT_EQ(Runs(page)[0]["model_id"], "hf:model28");  // newest first
  EXPECT_FALSE(Runs(page)[0].contains("stdout_tail"));
  std::set<std::string> seen;
  std::string cursor = page["next_cursor"];
  for (const auto& r : Runs(page)) seen.insert(r["run_id"].get<std::string>());
  while (true) {
    auto [s, next] = Get("/api/search?target=cuda&limit=10&cursor=" + cursor);
    ASSERT_EQ(s, 200);
    for (const auto& r : Runs(next)) {
      EXPECT_EQ(r["target"], "cuda");
      EXPECT_TRUE(seen.insert(r["run_id"].get<std::string>()).second) << "repeated row";
    }
    if (!next["has_more"].get<bool>()) break;
    cursor = next["next_cursor"];
  }
  EXPECT_EQ(seen.size(), 29u);

  auto [s2, models] = Get("/api/search?model=MODEL2&status=pass");
  ASSERT_EQ(s2, 200);
  EXPECT_EQ(models["total"], 20);  // model2, model20..model28 on two targets, model29 absent
  auto [s3, none] = Get("/api/search?torch_version=9.9");
  EXPECT_EQ(none["total"], 0);
  EXPECT_EQ(none["next_cursor"], nullptr);
}

TEST_F(ServerTest, BadParametersAndUnknownRoutesAreJsonErrors) {
  Start();
  for (const std::string path :
       {"/api/search?status=great", "/api/search?limit=0", "/api/search?limit=1000",
        "/api/search?cursor=abc", "/api/search?colour=red", "/api/search?model=%0a", "/api/model",
        "/api/diff?head=", "/api/search?model=a&model=b", "/api/diff?base=torch=2.13.0&head=s1"}) {
    auto [status, body] = Get(path);
    EXPECT_EQ(status, 400) << path;
    EXPECT_TRUE(body.contains("error")) << path << " " << body;
  }
  auto [status, body] = Get("/api/nothing");
  EXPECT_EQ(status, 404);
  EXPECT_TRUE(body.contains("error"));
  EXPECT_EQ(Get("/api/model?model_id=hf:unknown").first, 404);
  EXPECT_EQ(Get("/api/run?run_id=nope").first, 404);
  EXPECT_EQ(Get("/api/search?model=" + std::string(300, 'x')).first, 400);
}

TEST_F(ServerTest, SecurityHeadersAndStaticFilesStayInTheirFolder) {
  Start();
  auto [status, body] = Get("/");
  EXPECT_EQ(status, 200);
  EXPECT_THAT(body.get<std::string>(), ::testing::HasSubstr("compatlab"));
  ASSERT_TRUE(last_headers_.count("Content-Security-Policy"));
  EXPECT_THAT(last_headers_.find("Content-Security-Policy")->second,
              ::testing::HasSubstr("script-src 'self'"));
  Get("/api/health");
  EXPECT_TRUE(last_headers_.count("Content-Security-Policy"));
  for (const std::string path : {"/../secret.txt", "/%2e%2e/secret.txt", "/..%2fsecret.txt"}) {
    auto [s, b] = Get(path);
    EXPECT_EQ(s, 404) << path;
    EXPECT_THAT(b.dump(), ::testing::Not(::testing::HasSubstr("secret\""))) << path;
  }
}

TEST_F(ServerTest, ModelDetailKeepsMarkupAsText) {
  Start();
  auto [status, model] = Get("/api/model?model_id=hf:model7");
  ASSERT_EQ(status, 200) << model;
  EXPECT_EQ(model["model_type"], "model7");
  ASSERT_EQ(Runs(model).size(), 2u);
  EXPECT_EQ(Runs(model)[0]["status"], "fail_to_run");
  EXPECT_EQ(Runs(model)[0]["error_message"],
            "<img src=x onerror=alert(1)><script>alert(2)</script>");
  auto [s1, errors_of_model] = Get("/api/errors?model_id=hf:model7");
  ASSERT_EQ(errors_of_model["groups"].size(), 1u);
  EXPECT_EQ(errors_of_model["groups"][0]["runs"], 1);

  auto [s2, run] = Get("/api/run?run_id=" + Runs(model)[0]["run_id"].get<std::string>());
  ASSERT_EQ(s2, 200);
  EXPECT_EQ(run["run"]["error_traceback"], "Traceback (most recent call last): ...");

  auto [s3, errors] = Get("/api/errors");
  ASSERT_EQ(s3, 200);
  EXPECT_EQ(errors["groups"].size(), 1u);
}

TEST_F(ServerTest, SummaryDiffAndFacets) {
  Start();
  auto [status, summary] = Get("/api/summary");
  ASSERT_EQ(status, 200) << summary;
  ASSERT_EQ(summary["by_stack"].size(), 1u);
  const json& stack = summary["by_stack"][0];
  EXPECT_EQ(stack["torch_version"], "2.13.0");
  EXPECT_EQ(stack["runs"], 58);
  EXPECT_EQ(stack["pass"], 57);
  EXPECT_EQ(stack["passing"]["prepare_s"]["count"], 57);
  EXPECT_EQ(summary["points"].size(), 57u);

  auto [s2, facets] = Get("/api/facets");
  EXPECT_EQ(facets["values"]["target"], json::array({"cpu", "cuda"}));

  auto [s3, diff] = Get("/api/diff?base=torch%3D2.13.0&head=s1&target=cuda");
  ASSERT_EQ(s3, 200) << diff;
  EXPECT_EQ(diff["compared"], 29) << diff;
  EXPECT_EQ(diff["regressions"], 0);
}

// Sweep s2: model7 on cuda now passes, model0 on cpu fails in compatlab's reduction.
void AddSweepTwo(Store& store, const std::vector<TestSpec>& plan) {
  const TestSpec& fixed = plan[15];   // model7, cuda
  const TestSpec& reduced = plan[0];  // model0, cpu
  SweepInfo sweep;
  sweep.sweep_id = "s2";
  sweep.created_at = "2026-11-30T03:00:00.000Z";
  ASSERT_TRUE(store.CreateSweep(sweep, {fixed, reduced}).ok());
  RunRecord pass = MakeRun("s2", fixed);
  pass.result.torch_version = "2.13.0";
  ASSERT_TRUE(store.InsertRun(pass).ok());
  RunRecord failed = MakeRun("s2", reduced, TestStatus::kFailToRun);
  failed.result.torch_version = "2.13.0";
  failed.result.blame = "reduction";
  failed.result.rerun_status = "pass";
  ASSERT_TRUE(store.InsertRun(failed).ok());
}

TEST_F(ServerTest, SummaryPassRateLeavesOutRunsNotBlamedOnTheModel) {
  ASSERT_EQ(plan_[15].model_type, "model7");
  ASSERT_EQ(plan_[15].target, "cuda");
  AddSweepTwo(*writer_, plan_);
  Start();
  auto [status, summary] = Get("/api/summary?sweep_id=s2");
  ASSERT_EQ(status, 200) << summary;
  const json& stack = summary["by_stack"][0];
  EXPECT_EQ(stack["runs"], 2);
  EXPECT_EQ(stack["pass"], 1);
  EXPECT_EQ(stack["not_model"], 1);
  EXPECT_EQ(stack["pass_rate"], 1.0);  // the reduction's failure does not lower it
  auto [s2, all] = Get("/api/summary");
  EXPECT_EQ(all["by_stack"][0]["runs"], 60);
  EXPECT_EQ(all["by_stack"][0]["not_model"], 1);
  EXPECT_DOUBLE_EQ(all["by_stack"][0]["pass_rate"].get<double>(), 58.0 / 59.0);
}

// A skipped run (never run: no modelling class, a kind the model does not take) is
// counted apart and lowers no pass rate (core/blame.h, PassRateRoleOf).
TEST_F(ServerTest, SummaryPassRateLeavesOutSkippedRuns) {
  SweepInfo sweep;
  sweep.sweep_id = "s3";
  sweep.created_at = "2026-11-30T04:00:00.000Z";
  ASSERT_TRUE(writer_->CreateSweep(sweep, {plan_[1], plan_[2]}).ok());
  RunRecord pass = MakeRun("s3", plan_[1]);
  pass.result.torch_version = "2.14.0";
  ASSERT_TRUE(writer_->InsertRun(pass).ok());
  RunRecord skipped = MakeRun("s3", plan_[2], TestStatus::kSkipped);
  skipped.result.torch_version = "2.14.0";
  ASSERT_TRUE(writer_->InsertRun(skipped).ok());
  Start();
  auto [status, summary] = Get("/api/summary?sweep_id=s3");
  ASSERT_EQ(status, 200) << summary;
  const json& stack = summary["by_stack"][0];
  EXPECT_EQ(stack["runs"], 2);
  EXPECT_EQ(stack["pass"], 1);
  EXPECT_EQ(stack["not_model"], 0);
  EXPECT_EQ(stack["skipped"], 1);
  EXPECT_EQ(stack["model_runs"], 1);
  EXPECT_EQ(stack["pass_rate"], 1.0);
}

TEST_F(ServerTest, DiffCountsImprovementsAndPassRatesOfTheModelsRuns) {
  AddSweepTwo(*writer_, plan_);
  Start();
  auto [status, diff] = Get("/api/diff?base=s1&head=s2");
  ASSERT_EQ(status, 200) << diff;
  EXPECT_EQ(diff["compared"], 2);
  EXPECT_EQ(diff["improvements"], 1);  // model7 on cuda newly passing, as the CLI counts it
  EXPECT_EQ(diff["regressions"], 1);   // model0 on cpu newly failing
  EXPECT_EQ(diff["pass_rate"]["head"]["rate"], 1.0);
  EXPECT_EQ(diff["pass_rate"]["head"]["model_runs"], 1);
  EXPECT_EQ(diff["pass_rate"]["head"]["not_model"], 1);
  EXPECT_EQ(diff["pass_rate"]["base"]["passes"], 57);
}

TEST_F(ServerTest, NewRunsAppearWithoutARestart) {
  Start();
  EXPECT_EQ(Get("/api/model?model_id=hf:model29").first, 404);
  Insert(plan_.size() - 2);
  auto [status, model] = Get("/api/model?model_id=hf:model29");
  EXPECT_EQ(status, 200) << model;
}

// The run lists read only the fields their runs fill once every run was read
// before (FilledFields): the answers are the same, byte for byte, as from the
// first read of all fields, and a run stored since is read in full.
TEST_F(ServerTest, RunListsAnswerTheSameOnceTheirRunsAreLearned) {
  Start();
  auto body = [this](const std::string& path) {
    httplib::Result r = client_->Get(path);
    EXPECT_TRUE(r && r->status == 200) << path;
    return r ? r->body : std::string();
  };
  const std::string model7 = body("/api/model?model_id=hf:model7");  // a pass and a failure
  EXPECT_EQ(body("/api/model?model_id=hf:model7"), model7);
  const std::string search = body("/api/search?model=model7&limit=5");
  EXPECT_EQ(body("/api/search?model=model7&limit=5"), search);
  const std::string all = body("/api/search?limit=50");
  EXPECT_EQ(body("/api/search?limit=50"), all);

  Insert(plan_.size() - 2);  // model29 on cpu: a pass
  const std::string passed = body("/api/model?model_id=hf:model29");
  EXPECT_EQ(body("/api/model?model_id=hf:model29"), passed);
  json page = json::parse(passed);
  EXPECT_THAT(page["fields"], ::testing::Contains("prepare_s"));
  EXPECT_THAT(page["fields"], ::testing::Not(::testing::Contains("error_type")));

  // A failure of the same model, filling fields the pass does not.
  RunRecord failed = MakeRun("s1", plan_.back(), TestStatus::kFailToRun);
  failed.result.error_type = "ValueError";
  ASSERT_TRUE(writer_->InsertRun(failed).ok());
  const std::string both = body("/api/model?model_id=hf:model29");
  EXPECT_EQ(body("/api/model?model_id=hf:model29"), both);
  page = json::parse(both);
  EXPECT_THAT(page["fields"], ::testing::Contains("error_type"));
  EXPECT_THAT(page["fields"], ::testing::Contains("prepare_s"));
  json runs = Runs(page);
  ASSERT_EQ(runs.size(), 2u);
  for (const json& run : runs) {
    const bool cuda = run["target"] == "cuda";
    EXPECT_EQ(run["error_type"], cuda ? "ValueError" : "") << run;  // stored as ""
    EXPECT_EQ(run["prepare_s"].is_null(), cuda) << run;
  }
}

// One worker thread fills each list's rows over its last list's (a cell may
// change from text to a number or null, rows come and go): every answer is
// the same whichever lists the thread answered before it.
TEST_F(ServerTest, RunListsAnswerTheSameWhateverTheThreadAnsweredBefore) {
  threads_ = 1;
  Start();
  const std::vector<std::string> paths = {
      "/api/search?limit=50",          "/api/model?model_id=hf:model7",
      "/api/search?limit=3",           "/api/search?target=cuda&limit=7",
      "/api/model?model_id=hf:model0", "/api/search?status=fail_to_run"};
  std::map<std::string, std::string> first;
  for (int pass = 0; pass < 3; ++pass) {
    // Each pass in another order: each list follows other lists.
    std::vector<std::string> order = paths;
    if (pass == 1) std::reverse(order.begin(), order.end());
    if (pass == 2) std::rotate(order.begin(), order.begin() + 2, order.end());
    for (const std::string& path : order) {
      httplib::Result r = client_->Get(path);
      ASSERT_TRUE(r && r->status == 200) << path;
      if (pass == 0) {
        first[path] = r->body;
      } else {
        EXPECT_EQ(r->body, first[path]) << path << " on pass " << pass;
      }
    }
  }
}

TEST_F(ServerTest, HealthCountsFollowNewRunsThroughItsKeptAnswer) {
  Start();
  auto [status, health] = Get("/api/health");
  ASSERT_EQ(status, 200);
  EXPECT_EQ(health["runs"], 58);
  EXPECT_EQ(health["models"], 29);
  EXPECT_EQ(Get("/api/health").second, health);  // the kept answer
  Insert(plan_.size() - 2);                      // a new model's first run
  health = Get("/api/health").second;
  EXPECT_EQ(health["runs"], 59);
  EXPECT_EQ(health["models"], 30);
  Insert(plan_.size() - 1);  // another run of that model
  health = Get("/api/health").second;
  EXPECT_EQ(health["runs"], 60);
  EXPECT_EQ(health["models"], 30);
  EXPECT_FALSE(health["fields"].empty());
  EXPECT_EQ(health["status"], "ok");
}

TEST_F(ServerTest, ReproRunsTheGeneratorWithTheRunOnItsInput) {
  // A stand-in interpreter: the script names the run_id it read on stdin.
  const fs::path python = temp_.path() / "python";
  std::ofstream(python) << "#!/bin/sh\n"
                           "id=$(sed -n 's/.*\"run_id\":\"\\([^\"]*\\)\".*/\\1/p')\n"
                           "echo \"# script of $id\"\n";
  fs::permissions(python, fs::perms::owner_all);
  Start(python.string());
  const std::string run_id = Runs(Get("/api/search?limit=1").second)[0]["run_id"];
  auto [status, repro] = Get("/api/repro?run_id=" + run_id);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(repro["script"], "# script of " + run_id + "\n");
}

TEST_F(ServerTest, NoGeneratorIs501AndMissingStoreIsNotCreated) {
  Start();
  const std::string run_id = Runs(Get("/api/search?limit=1").second)[0]["run_id"];
  EXPECT_EQ(Get("/api/repro?run_id=" + run_id).first, 501);
  ServerOptions options;
  options.db = temp_.path() / "missing.db";
  options.web_dir = web_;
  EXPECT_EQ(Server::Open(options).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(options.db));
}

TEST_F(ServerTest, MatrixPagesBoundsAndNewRuns) {
  Start();
  auto [status, page] = Get("/api/matrix?limit=10");
  ASSERT_EQ(status, 200) << page;
  EXPECT_EQ(page["total_rows"], 29);  // model29 has no run yet
  EXPECT_EQ(page["rows"].size(), 10u);
  EXPECT_EQ(page["has_more"], true);
  EXPECT_EQ(page["next_offset"], 10);
  ASSERT_EQ(page["columns"].size(), 2u);
  EXPECT_EQ(page["columns"][0]["target"], "cpu");
  EXPECT_EQ(page["stack"]["torch_release"], "2.13.0");
  const json& first = page["rows"][0];
  EXPECT_EQ(first["model_id"], "hf:model0");
  EXPECT_EQ(first["cells"][0]["verdict"], "pass");
  EXPECT_FALSE(first["cells"][0]["run_id"].get<std::string>().empty());
  auto [s2, seven] = Get("/api/matrix?model_id=hf:model7");
  ASSERT_EQ(s2, 200);
  EXPECT_EQ(seven["rows"][0]["cells"][1]["verdict"], "fail");
  EXPECT_EQ(seven["rows"][0]["cells"][1]["error_message"],
            "<img src=x onerror=alert(1)><script>alert(2)</script>");
  auto [s3, last] = Get("/api/matrix?offset=20&limit=10");
  EXPECT_EQ(last["rows"].size(), 9u);
  EXPECT_EQ(last["next_offset"], nullptr);
  for (const std::string path :
       {"/api/matrix?limit=0", "/api/matrix?limit=201", "/api/matrix?offset=-1",
        "/api/matrix?stack=cuda%3D1", "/api/matrix?status=great", "/api/matrix?cursor=1"}) {
    auto [code, body] = Get(path);
    EXPECT_EQ(code, 400) << path;
    EXPECT_TRUE(body.contains("error")) << path;
  }
  // A kept page is made again once runs are added.
  Insert(plan_.size() - 2);
  auto [s4, again] = Get("/api/matrix?limit=10");
  EXPECT_EQ(again["total_rows"], 30);
}

// /api/ops reads every op result and scans the runs: its answer is kept while the store is
// unchanged (an edit in place, which compatlab never makes, stays unseen: a second answer is
// the kept one, not a new read) and made again, after the refresh, once an op result or a
// run is stored.
TEST_F(ServerTest, OpsAnswersAreKeptUntilTheStoreChanges) {
  ASSERT_TRUE(writer_->CreateOpSweep(test::MakeOpSweep("o1")).ok());
  auto result = [](const std::string& op) {  // a pass whose one executed overload is op.Tensor
    OpResult r = test::MakeOpResult("o1", op, TestStatus::kPass);
    r.aten_ops = "[\"aten::" + op + ".Tensor\"]";
    r.fallback_ops = "{}";
    return r;
  };
  ASSERT_TRUE(writer_->InsertOpResults({result("add")}).ok());
  Start();
  auto body = [this] {
    httplib::Result r = client_->Get("/api/ops?target=ctest");
    EXPECT_TRUE(r && r->status == 200);
    return r ? r->body : std::string();
  };
  const std::string first = body();
  json page = json::parse(first);
  ASSERT_EQ(page["cases"].size(), 1u) << page;
  EXPECT_EQ(page["cases"][0]["status"], "pass");
  EXPECT_EQ(page["cases"][0]["models"], 0);

  auto db = sqlite::Database::Open(db_.string(), SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->Exec("UPDATE op_results SET status = 'fail_to_run'").ok());
  EXPECT_EQ(body(), first);  // the kept answer

  ASSERT_TRUE(writer_->InsertOpResults({result("mul")}).ok());
  page = json::parse(body());
  ASSERT_EQ(page["cases"].size(), 2u) << page;
  for (const json& c : page["cases"]) {
    EXPECT_EQ(c["status"], c["op"] == "add" ? "fail_to_run" : "pass") << c;  // read again
  }
  EXPECT_EQ(page["op_sweeps"][0]["recorded"], 2);

  RunRecord run = MakeRun("s1", plan_[plan_.size() - 2]);  // a run through add's fallback
  run.result.fallback_ops = R"({"aten::add.Tensor":2})";
  ASSERT_TRUE(writer_->InsertRun(run).ok());
  page = json::parse(body());
  for (const json& c : page["cases"]) EXPECT_EQ(c["models"], c["op"] == "add" ? 1 : 0) << c;
}

TEST_F(ServerTest, MatrixStacksSideBySideMarkTheCellsThatChanged) {
  // model0 and model1 on the cpu, on the named stacks default and t5: model0 newly fails on
  // t5, model1 passes on both with the same figures.
  for (const char* stack : {"default", "t5"}) {
    SweepInfo sweep;
    sweep.sweep_id = std::string("sweep-") + stack;  // one sweep per stack, as sweep --stacks
    sweep.created_at = "2026-11-30T03:00:00.000Z";
    ASSERT_TRUE(writer_->CreateSweep(sweep, plan_).ok());
    for (size_t i : {size_t{0}, size_t{2}}) {
      const bool fails = i == 0 && std::string(stack) == "t5";
      RunRecord run =
          MakeRun(sweep.sweep_id, plan_[i], fails ? TestStatus::kFailToRun : TestStatus::kPass);
      run.result.stack = stack;
      run.result.torch_version = "2.13.0";
      run.result.transformers_version = std::string(stack) == "t5" ? "5.18.0" : "5.23.0";
      if (fails) {
        run.result.error_type = "RuntimeError";
        run.result.error_message = "broken on t5";
      } else {
        run.result.prepare_s = 1.0;
        run.result.steady_median_s = 0.01;
      }
      absl::Status inserted = writer_->InsertRun(run);
      ASSERT_TRUE(inserted.ok()) << inserted;
    }
  }
  Start();
  auto [status, page] = Get("/api/matrix?stacks=default,t5&limit=1");
  ASSERT_EQ(status, 200) << page;
  EXPECT_EQ(page["total_rows"], 2);  // the runs without a stack name are left out
  EXPECT_EQ(page["has_more"], true);
  ASSERT_EQ(page["columns"].size(), 2u);
  EXPECT_EQ(page["columns"][0]["stack"], "default");
  EXPECT_EQ(page["columns"][1]["stack"], "t5");
  ASSERT_EQ(page["rows"].size(), 1u);
  const json& model0 = page["rows"][0];
  EXPECT_EQ(model0["model_id"], "hf:model0");
  EXPECT_EQ(model0["cells"][0]["changes"].size(), 0u);
  ASSERT_EQ(model0["cells"][1]["changes"].size(), 1u);
  EXPECT_EQ(model0["cells"][1]["changes"][0]["kind"], "newly failing");
  auto [s2, rest] = Get("/api/matrix?stacks=default,t5&offset=1");
  ASSERT_EQ(s2, 200) << rest;
  ASSERT_EQ(rest["rows"].size(), 1u);
  EXPECT_EQ(rest["rows"][0]["model_id"], "hf:model1");
  EXPECT_EQ(rest["rows"][0]["cells"][1]["verdict"], "pass");
  EXPECT_EQ(rest["rows"][0]["cells"][1]["changes"].size(), 0u);
  EXPECT_EQ(rest["next_offset"], nullptr);
  for (const std::string path :
       {"/api/matrix?stacks=default,t5&stack=all", "/api/matrix?stacks=Default",
        "/api/matrix?stacks=a,a", "/api/matrix?stacks=a,b,c,d,e,f,g,h,i"}) {
    auto [code, body] = Get(path);
    EXPECT_EQ(code, 400) << path;
    EXPECT_TRUE(body.contains("error")) << path;
  }
}

}  // namespace
}  // namespace compatlab
