#include "sweep/execute.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "gtest/gtest.h"
#include "runner/fake_launcher.h"
#include "sweep/resolve.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

ResolvedTest Harness(const std::string& kind, double timeout_s = 30, int rep = 0) {
  ResolvedTest t;
  t.spec.model_id = "none";
  t.spec.kind = kind;
  t.spec.kind_params["rep"] = std::to_string(rep);
  t.spec.timeout_s = timeout_s;
  t.execution = TestExecution{};
  t.execution->grace_s = 0.2;
  return t;
}

class ExecuteTest : public ::testing::Test {
 protected:
  // A calibration seed directory (one file, seed/probe) and its start-up
  // figure, as the sweep hands them to ExecutePlan; returns the directory.
  fs::path SeedWithStartUp(double startup_s) {
    const fs::path seed = dir_ / "seed";
    fs::create_directories(seed / "seed");
    std::ofstream(seed / "seed" / "probe") << "isa";
    options_.compile_seed_dir = seed.string();
    options_.compiler_startup_s = startup_s;
    return seed;
  }

  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("execute-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto limiter = MakeMemoryLimiter("");
    ASSERT_TRUE(limiter.ok()) << limiter.status();
    limiter_ = std::move(*limiter);
    auto store = Store::Open(dir_ / "store.db", OpenMode::kReadWriteCreate);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    options_.sweep_id = "s1";
    options_.compile_cache_root = (dir_ / "cache").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Plan(const std::vector<ResolvedTest>& tests) {
    SweepInfo info;
    info.sweep_id = "s1";
    ASSERT_TRUE(store_->CreateResolvedSweep(info, tests).ok());
  }

  absl::Status Execute(const std::vector<ResolvedTest>& tests) {
    return ExecutePlan(tests, options_, &launcher_, limiter_.get(), nullptr, store_.get(),
                       callbacks_);
  }

  // Plans and executes `plan` until its first load row of `scenario` is recorded, stops
  // there as SIGINT does, and resumes the tests still pending. Returns that row's run_id and
  // the resume's launches.
  std::pair<std::string, std::vector<LaunchRequest>> StopAfterLoadRowAndResume(
      const std::vector<ResolvedTest>& plan, const std::string& scenario) {
    Plan(plan);
    std::string run_id;
    callbacks_.on_finish = [&](const RunRecord& r) {
      if (!run_id.empty() || r.spec.kind_params.at("scenario") != scenario) return;
      run_id = r.run_id;
      kill(getpid(), SIGINT);
    };
    EXPECT_TRUE(absl::IsCancelled(Execute(plan)));
    callbacks_.on_finish = nullptr;
    auto pending = store_->Plan("s1", /*pending_only=*/true);
    if (!pending.ok()) {
      ADD_FAILURE() << pending.status();
      return {run_id, {}};
    }
    const size_t before = launcher_.requests().size();
    EXPECT_TRUE(Execute(*pending).ok());
    return {run_id, {launcher_.requests().begin() + before, launcher_.requests().end()}};
  }

  // Plans and executes `plan`, two tests at once, with kind_params fake_fail `scenario`: the
  // fake load child fails that scenario's row. Returns the stored records of the sweep.
  std::vector<RunRecord> ExecuteFailingLoadRow(std::vector<ResolvedTest> plan,
                                               const std::string& scenario) {
    for (ResolvedTest& t : plan) t.spec.kind_params["fake_fail"] = scenario;
    Plan(plan);
    options_.jobs = 2;
    EXPECT_TRUE(Execute(plan).ok());
    absl::StatusOr<std::vector<RunRecord>> stored = store_->QueryRuns(RunFilter{.sweep_id = "s1"});
    EXPECT_TRUE(stored.ok()) << stored.status();
    return stored.ok() ? *std::move(stored) : std::vector<RunRecord>{};
  }

  // The stored records of the sweep, by spec kind and seq_len ("noop/32").
  std::map<std::string, RunRecord> Records() {
    RunFilter filter;
    filter.sweep_id = "s1";
    auto records = store_->QueryRuns(filter);
    EXPECT_TRUE(records.ok());
    std::map<std::string, RunRecord> out;
    for (RunRecord& r : *records) {
      std::string key = r.spec.kind + "/" + r.spec.mode + "/" + std::to_string(r.spec.seq_len);
      if (auto rep = r.spec.kind_params.find("rep"); rep != r.spec.kind_params.end()) {
        key += "#" + rep->second;
      }
      out[key] = std::move(r);
    }
    return out;
  }

  fs::path dir_;
  FakeLauncher launcher_;
  std::unique_ptr<MemoryLimiter> limiter_;
  std::unique_ptr<Store> store_;
  ExecuteOptions options_;
  ExecuteCallbacks callbacks_;
};

// A two-shape compile plan on a profile given as a file whose compile
// options leave "dynamic" unset, plus an eager test of each shape.
std::vector<ResolvedTest> FileProfilePlan(const fs::path& profile_path, bool warm,
                                          const std::string& backend = "aot_eager",
                                          const std::string& device = "cpu") {
  std::ofstream(profile_path) << R"({"name":"filedev","device":")" << device << R"(",)"
                              << R"("compile":{"backend":")" << backend
                              << R"(","options":{"fullgraph":false}}})";
  std::vector<std::string> targets = {profile_path.string()};
  auto profiles = LoadTargetProfiles(&targets, profile_path.parent_path());
  EXPECT_TRUE(profiles.ok()) << profiles.status();
  Suite suite;
  suite.name = "t";
  suite.models = {"llama"};
  suite.targets = targets;
  suite.modes = {"compile"};
  suite.seq_lens = {16, 32};
  ModelCatalog catalog;
  catalog.models["llama"] = {"LlamaConfig", "LlamaForCausalLM", "causal_lm", "text", {}};
  TestExecution base;
  base.warm = warm;
  auto plan = ResolvePlan(suite, {}, base, &catalog, *profiles);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan->tests;
}

TEST_F(ExecuteTest, AKilledRunResumesFromTheStoredPlanAfterTheProfileFileIsGone) {
  const fs::path profile = dir_ / "filedev.json";
  std::vector<ResolvedTest> plan = FileProfilePlan(profile, /*warm=*/false);
  Plan(plan);
  callbacks_.on_finish = [](const RunRecord&) { kill(getpid(), SIGINT); };  // after row 1
  absl::Status first = Execute(plan);
  EXPECT_TRUE(absl::IsCancelled(first)) << first;
  EXPECT_EQ(first.message(), "interrupted by SIGINT");
  EXPECT_EQ(Records().size(), 1u);
  fs::remove(profile);

  callbacks_.on_finish = nullptr;
  auto pending = store_->Plan("s1", /*pending_only=*/true);
  ASSERT_TRUE(pending.ok());
  ASSERT_EQ(pending->size(), 1u);
  ASSERT_TRUE(Execute(*pending).ok());
  std::map<std::string, RunRecord> records = Records();
  ASSERT_EQ(records.size(), 2u);
  for (const auto& [key, r] : records) {
    SCOPED_TRACE(key);
    EXPECT_EQ(r.result.status, TestStatus::kPass);
    EXPECT_EQ(r.result.compile_options, R"({"dynamic":false,"fullgraph":false})");
  }
  // Every launch, before and after the kill, got the same profile content.
  std::set<std::string> profiles;
  for (const LaunchRequest& r : launcher_.requests()) profiles.insert(r.target_profile_json);
  EXPECT_EQ(profiles.size(), 1u);
  EXPECT_NE(profiles.begin()->find("filedev"), std::string::npos);
}

TEST_F(ExecuteTest, WarmRerunSharesTheColdCacheDirectoryAndIsFoldedIntoOneResult) {
  std::vector<ResolvedTest> plan = FileProfilePlan(dir_ / "filedev.json", /*warm=*/true);
  plan.push_back(Harness("noop"));
  Plan(plan);
  options_.jobs = 2;
  ASSERT_TRUE(Execute(plan).ok());
  std::map<std::string, RunRecord> records = Records();
  ASSERT_EQ(records.size(), 3u);
  for (const char* key : {"forward/compile/16", "forward/compile/32"}) {
    SCOPED_TRACE(key);
    const RunResult& r = records.at(key).result;
    EXPECT_EQ(r.status, TestStatus::kPass);
    EXPECT_DOUBLE_EQ(r.prepare_s.value_or(-1), 5.0);  // the cold run's
    EXPECT_EQ(r.cache_hits.value_or(-1), 0);
    EXPECT_DOUBLE_EQ(r.warm_prepare_s.value_or(-1), 1.0);
    EXPECT_EQ(r.warm_cache_hits.value_or(-1), 2);
    EXPECT_EQ(r.warm_state, "warm");
  }
  EXPECT_EQ(records.at("noop/eager/32#0").result.warm_state, "");  // no warm rerun
  EXPECT_EQ(launcher_.launches(), 5);
  EXPECT_FALSE(fs::exists(options_.compile_cache_root));
}

TEST_F(ExecuteTest, WithoutWarmACompiledTestRunsOnceOnItsOwnCacheDirectory) {
  std::vector<ResolvedTest> plan = FileProfilePlan(dir_ / "filedev.json", /*warm=*/false);
  Plan(plan);
  ASSERT_TRUE(Execute(plan).ok());
  for (const auto& [key, r] : Records()) {
    EXPECT_EQ(r.result.status, TestStatus::kPass) << key;  // it had a cache directory
    EXPECT_EQ(r.result.warm_state, "") << key;
  }
  ASSERT_EQ(launcher_.requests().size(), 2u);
  EXPECT_NE(launcher_.requests()[0].compile_cache_dir, launcher_.requests()[1].compile_cache_dir);
  EXPECT_EQ(launcher_.requests()[0].cache_phase, "cold");
}

TEST_F(ExecuteTest, ColdDirectoriesStartAsTheSeedAndInductorRecordsCarryTheStartUp) {
  std::vector<ResolvedTest> plan =
      FileProfilePlan(dir_ / "filedev.json", /*warm=*/true, "inductor");
  plan.push_back(Harness("noop"));
  Plan(plan);
  const fs::path seed = SeedWithStartUp(7.5);
  ASSERT_TRUE(Execute(plan).ok());
  std::map<std::string, RunRecord> records = Records();
  for (const char* key : {"forward/compile/16", "forward/compile/32"}) {
    SCOPED_TRACE(key);
    const RunResult& r = records.at(key).result;
    EXPECT_EQ(r.status_detail, "seeded");
    EXPECT_EQ(r.warm_state, "warm");  // the warm rerun is not seeded again: it hits
    EXPECT_DOUBLE_EQ(r.compiler_startup_s.value_or(-1), 7.5);
  }
  EXPECT_FALSE(records.at("noop/eager/32#0").result.compiler_startup_s.has_value());
  EXPECT_TRUE(fs::exists(seed / "seed" / "probe"));  // copied, never moved
}

TEST_F(ExecuteTest, InductorOnAGpuTargetTakesNeitherTheSeedNorTheStartUp) {
  std::vector<ResolvedTest> plan =
      FileProfilePlan(dir_ / "filedev.json", /*warm=*/false, "inductor", "cuda");
  Plan(plan);
  SeedWithStartUp(7.5);
  ASSERT_TRUE(Execute(plan).ok());
  for (const auto& [key, r] : Records()) {
    EXPECT_FALSE(r.result.compiler_startup_s.has_value()) << key;
    EXPECT_EQ(r.result.status_detail, "") << key;  // not seeded: an empty directory
  }
}

TEST(TakesCalibrationTest, OnlyInductorCompilesOnTheCpu) {
  TestSpec spec;
  spec.mode = kModeCompile;
  spec.backend = "inductor";
  spec.target = "t";
  const std::string compile = R"("compile":{"backend":"inductor","options":{}}})";
  const std::string cpu = R"({"name":"t","device":"cpu",)" + compile;
  const std::string gpu = R"({"name":"t","device":"cuda",)" + compile;
  EXPECT_TRUE(TakesCalibration(spec, cpu));
  EXPECT_TRUE(TakesCalibration(spec, ""));  // the probe's built-in cpu profile
  EXPECT_FALSE(TakesCalibration(spec, gpu));
  EXPECT_FALSE(TakesCalibration(spec, "{not json"));
  spec.backend = "aot_eager";
  EXPECT_FALSE(TakesCalibration(spec, cpu));
  spec.backend = "inductor";
  spec.mode = kModeEager;
  EXPECT_FALSE(TakesCalibration(spec, cpu));
}

TEST_F(ExecuteTest, NonInductorRecordsHaveNoStartUpFigure) {
  std::vector<ResolvedTest> plan = FileProfilePlan(dir_ / "filedev.json", /*warm=*/false);
  Plan(plan);
  options_.compiler_startup_s = 7.5;
  ASSERT_TRUE(Execute(plan).ok());
  for (const auto& [key, r] : Records()) {
    EXPECT_FALSE(r.result.compiler_startup_s.has_value()) << key;
    EXPECT_EQ(r.result.status_detail, "") << key;  // no seed: an empty directory
  }
}

// Kind load in eager mode on llama: a group per sequence length (16, 32), each
// single_stream, offline and a server row per rate of `rates`.
std::vector<ResolvedTest> LoadPlanOf(const std::vector<std::string>& rates,
                                     std::vector<int64_t> seq_lens = {16, 32}) {
  Suite suite;
  suite.name = "t";
  suite.models = {"llama"};
  suite.targets = {"cpu"};
  suite.modes = {"eager"};
  suite.seq_lens = std::move(seq_lens);
  PlanOverrides o;
  o.kinds = {"load"};
  o.load_rates = rates;
  ModelCatalog catalog;
  catalog.models["llama"] = {
      "LlamaConfig", "LlamaForCausalLM", "causal_lm", "text", {"LlamaForCausalLM"}};
  std::map<std::string, TargetProfile> profiles;
  profiles["cpu"].name = "cpu";
  TestExecution base;
  base.grace_s = 0.2;
  auto plan = ResolvePlan(suite, o, base, &catalog, profiles);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan->tests;
}

// The launches of server rows, by sequence length and rate ("16@0.5x").
std::map<std::string, LaunchRequest> ServerLaunches(const FakeLauncher& launcher) {
  std::map<std::string, LaunchRequest> out;
  for (const LaunchRequest& r : launcher.requests()) {
    if (auto rate = r.spec.kind_params.find("rate"); rate != r.spec.kind_params.end()) {
      out[std::to_string(r.spec.seq_len) + "@" + rate->second] = r;
    }
  }
  return out;
}

TEST_F(ExecuteTest, EveryServerRowOfALoadGroupGetsItsOfflineRowsThroughputAsBase) {
  std::vector<ResolvedTest> plan = LoadPlanOf({"0.5x", "0.9x", "1.5x"});
  Plan(plan);
  options_.jobs = 3;  // the server rows must still wait for their offline row
  std::vector<std::string> order;
  callbacks_.on_start = [&](const std::string&, const TestSpec& spec) {
    order.push_back(std::to_string(spec.seq_len) + spec.kind_params.at("scenario"));
  };
  std::map<std::string, std::string> offline_run;  // seq_len -> run_id
  callbacks_.on_finish = [&](const RunRecord& r) {
    if (r.spec.kind_params.at("scenario") == "offline") {
      offline_run[std::to_string(r.spec.seq_len)] = r.run_id;
    }
  };
  ASSERT_TRUE(Execute(plan).ok());
  ASSERT_EQ(order.size(), 10u);
  std::map<std::string, LaunchRequest> servers = ServerLaunches(launcher_);
  ASSERT_EQ(servers.size(), 6u);
  for (const auto& [key, request] : servers) {
    SCOPED_TRACE(key);
    const std::string seq = key.substr(0, 2);
    ASSERT_TRUE(request.load_base.has_value());
    EXPECT_DOUBLE_EQ(request.load_base->offline_requests_per_s, std::stod(seq) / 8);
    EXPECT_EQ(request.load_base->run_id, offline_run.at(seq));
  }
  // Stored: every server row's base is its offline row's figure, and names it.
  absl::StatusOr<std::vector<RunRecord>> stored = store_->QueryRuns(RunFilter{.sweep_id = "s1"});
  ASSERT_TRUE(stored.ok());
  for (const RunRecord& r : *stored) {
    if (r.spec.kind_params.at("scenario") != "server") continue;
    EXPECT_DOUBLE_EQ(r.result.load_offline_requests_per_s.value_or(-1),
                     static_cast<double>(r.spec.seq_len) / 8);
    EXPECT_EQ(r.result.load_base_run_id, offline_run.at(std::to_string(r.spec.seq_len)));
  }
}

TEST_F(ExecuteTest, AResumedServerRowTakesTheBaseOfTheStoredOfflineRow) {
  const auto [offline_run, resumed] =
      StopAfterLoadRowAndResume(LoadPlanOf({"0.5x", "1.5x"}, {16}), "offline");
  ASSERT_FALSE(offline_run.empty());
  ASSERT_EQ(resumed.size(), 2u);  // the two server rows
  for (const LaunchRequest& r : resumed) {
    ASSERT_TRUE(r.load_base.has_value()) << r.spec.kind_params.at("rate");
    EXPECT_DOUBLE_EQ(r.load_base->offline_requests_per_s, 2.0);
    EXPECT_EQ(r.load_base->run_id, offline_run);
  }
}

TEST_F(ExecuteTest, ServerRowsOfAFailedOfflineRowCarryNoBase) {
  const std::vector<RunRecord> stored =
      ExecuteFailingLoadRow(LoadPlanOf({"0.5x", "1.5x"}, {16}), "offline");
  std::map<std::string, LaunchRequest> servers = ServerLaunches(launcher_);
  ASSERT_EQ(servers.size(), 2u);
  for (const auto& [key, request] : servers) EXPECT_FALSE(request.load_base.has_value()) << key;
  for (const RunRecord& r : stored) {
    if (r.spec.kind_params.at("scenario") == "server") {
      EXPECT_EQ(r.result.load_base_source, "this_child");
    }
  }
}

// The launches of offline and server rows, by sequence length and scenario or rate
// ("16@offline", "16@0.5x").
std::map<std::string, LaunchRequest> JudgedLaunches(const FakeLauncher& launcher) {
  std::map<std::string, LaunchRequest> out;
  for (const LaunchRequest& r : launcher.requests()) {
    const std::map<std::string, std::string>& p = r.spec.kind_params;
    if (p.at("scenario") == "single_stream") continue;
    out[std::to_string(r.spec.seq_len) + "@" + (p.count("rate") ? p.at("rate") : "offline")] = r;
  }
  return out;
}

TEST_F(ExecuteTest, EveryOtherRowOfALoadGroupIsJudgedByItsSingleStreamRowsObjective) {
  std::vector<ResolvedTest> plan = LoadPlanOf({"0.5x", "1.5x"});
  Plan(plan);
  options_.jobs = 3;  // the other rows must still wait for their single_stream row
  std::map<std::string, std::string> single_run;  // seq_len -> run_id
  std::map<std::string, std::string> single_finished_at;
  std::vector<std::string> started_after_single;
  callbacks_.on_start = [&](const std::string&, const TestSpec& spec) {
    if (spec.kind_params.at("scenario") == "single_stream") return;
    const std::string seq = std::to_string(spec.seq_len);
    if (single_run.count(seq)) started_after_single.push_back(seq);
  };
  callbacks_.on_finish = [&](const RunRecord& r) {
    if (r.spec.kind_params.at("scenario") == "single_stream") {
      single_run[std::to_string(r.spec.seq_len)] = r.run_id;
    }
  };
  ASSERT_TRUE(Execute(plan).ok());
  EXPECT_EQ(started_after_single.size(), 6u);  // offline + 2 rates, two groups
  std::map<std::string, LaunchRequest> judged = JudgedLaunches(launcher_);
  ASSERT_EQ(judged.size(), 6u);
  for (const auto& [key, request] : judged) {
    SCOPED_TRACE(key);
    const std::string seq = key.substr(0, 2);
    ASSERT_TRUE(request.load_slo.has_value());
    EXPECT_DOUBLE_EQ(request.load_slo->ttft_s, std::stod(seq) / 100);
    EXPECT_DOUBLE_EQ(request.load_slo->itl_s, std::stod(seq) / 1000);
    EXPECT_EQ(request.load_slo->run_id, single_run.at(seq));
    EXPECT_EQ(request.load_base.has_value(), key.find('x') != std::string::npos);
  }
  // Stored: every row of a group has the single_stream row's objective, and names it.
  absl::StatusOr<std::vector<RunRecord>> stored = store_->QueryRuns(RunFilter{.sweep_id = "s1"});
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 8u);
  for (const RunRecord& r : *stored) {
    SCOPED_TRACE(KindParamsToJson(r.spec.kind_params));
    EXPECT_DOUBLE_EQ(r.result.load_slo_ttft_s.value_or(-1),
                     static_cast<double>(r.spec.seq_len) / 100);
    if (r.spec.kind_params.at("scenario") == "single_stream") continue;
    EXPECT_EQ(r.result.load_slo_source, "single_stream_row");
    EXPECT_EQ(r.result.load_slo_run_id, single_run.at(std::to_string(r.spec.seq_len)));
  }
}

TEST_F(ExecuteTest, AResumedLoadRowTakesTheObjectiveOfTheStoredSingleStreamRow) {
  const auto [single_run, resumed] =
      StopAfterLoadRowAndResume(LoadPlanOf({"0.5x"}, {16}), "single_stream");
  ASSERT_FALSE(single_run.empty());
  ASSERT_EQ(resumed.size(), 2u);  // offline and the server row
  for (const LaunchRequest& r : resumed) {
    SCOPED_TRACE(r.spec.kind_params.at("scenario"));
    ASSERT_TRUE(r.load_slo.has_value());
    EXPECT_EQ(*r.load_slo, (LoadSlo{0.16, 0.016, single_run}));
  }
}

TEST_F(ExecuteTest, RowsOfAFailedSingleStreamRowCarryNoObjectiveButStillTheirBase) {
  const std::vector<RunRecord> stored =
      ExecuteFailingLoadRow(LoadPlanOf({"0.5x", "1.5x"}, {16}), "single_stream");
  std::map<std::string, LaunchRequest> judged = JudgedLaunches(launcher_);
  ASSERT_EQ(judged.size(), 3u);
  for (const auto& [key, request] : judged) {
    EXPECT_FALSE(request.load_slo.has_value()) << key;
    EXPECT_EQ(request.load_base.has_value(), key != "16@offline") << key;
  }
  ASSERT_EQ(stored.size(), 4u);
  for (const RunRecord& r : stored) {
    if (r.spec.kind_params.at("scenario") == "single_stream") continue;
    EXPECT_EQ(r.result.load_slo_source, "single_stream_p50x3");
    EXPECT_EQ(r.result.load_slo_run_id, "");
  }
}

TEST_F(ExecuteTest, LoadRowsWithAGivenObjectiveNeitherWaitForNorCarryTheSingleStreamRows) {
  std::vector<ResolvedTest> plan = LoadPlanOf({"0.5x"}, {16});
  for (ResolvedTest& t : plan) t.spec.kind_params["slo"] = "ttft=1,itl=0.05";
  Plan(plan);
  options_.jobs = 2;
  bool single_finished = false;
  std::optional<bool> offline_started_after_single;
  callbacks_.on_start = [&](const std::string&, const TestSpec& spec) {
    if (spec.kind_params.at("scenario") == "offline")
      offline_started_after_single = single_finished;
  };
  callbacks_.on_finish = [&](const RunRecord& r) {
    single_finished |= r.spec.kind_params.at("scenario") == "single_stream";
  };
  ASSERT_TRUE(Execute(plan).ok());
  // The offline row starts beside the single_stream row: it waits for nothing.
  EXPECT_EQ(offline_started_after_single, false);
  for (const auto& [key, request] : JudgedLaunches(launcher_)) {
    EXPECT_FALSE(request.load_slo.has_value()) << key;
  }
}

// One eager forward test of a reduced hf: model standing in as fake_reduction `how`.
ResolvedTest ReducedModel(const std::string& how) {
  ResolvedTest t;
  t.spec.model_id = "hf:bert";
  t.spec.model_type = "bert";
  t.spec.kind = "forward";
  t.spec.mode = "eager";
  t.spec.kind_params["fake_reduction"] = how;
  t.spec.timeout_s = 30;
  t.execution = TestExecution{};
  t.execution->grace_s = 0.2;
  return t;
}

RunRecord OnlyRecord(Store* store) {
  absl::StatusOr<std::vector<RunRecord>> stored = store->QueryRuns(RunFilter{.sweep_id = "s1"});
  EXPECT_TRUE(stored.ok() && stored->size() == 1u);
  return stored.ok() && !stored->empty() ? (*stored)[0] : RunRecord{};
}

TEST_F(ExecuteTest, AFailureOnlyWhenReducedIsRerunAtFullSizeAndBlamedOnTheReduction) {
  std::vector<ResolvedTest> plan = {ReducedModel("reduced-only")};
  Plan(plan);
  ASSERT_TRUE(Execute(plan).ok());
  ASSERT_EQ(launcher_.requests().size(), 2u);  // the test, then its rerun
  const LaunchRequest& rerun = launcher_.requests()[1];
  EXPECT_EQ(rerun.spec.kind_params.at("size"), "full");
  EXPECT_GT(std::stoll(rerun.spec.kind_params.at("fit_bytes")), 0);
  const RunRecord r = OnlyRecord(store_.get());
  EXPECT_EQ(r.result.status, TestStatus::kFailToRun);  // what the reduced test did, kept
  EXPECT_EQ(r.result.error_signature, "RuntimeError: hidden size N too small");
  EXPECT_EQ(r.spec.kind_params.count("size"), 0u);  // the row is the planned test's
  EXPECT_EQ(r.result.rerun_status, "pass");
  EXPECT_EQ(r.result.rerun_error_signature, "");
  EXPECT_EQ(r.result.rerun_size, "full");
  EXPECT_EQ(r.result.rerun_reduction, "full size");
  EXPECT_EQ(r.result.blame, "reduction");
}

TEST_F(ExecuteTest, AFailureAtEverySizeIsTheModels) {
  std::vector<ResolvedTest> plan = {ReducedModel("always")};
  Plan(plan);
  ASSERT_TRUE(Execute(plan).ok());
  EXPECT_EQ(launcher_.requests().size(), 2u);
  const RunRecord r = OnlyRecord(store_.get());
  EXPECT_EQ(r.result.rerun_status, "fail_to_run");
  EXPECT_EQ(r.result.rerun_error_signature, r.result.error_signature);  // the same signature
  EXPECT_EQ(r.result.blame, "model");
}

TEST_F(ExecuteTest, ARerunThatDoesNotFitAtFullSizeRunsAtTheMilderReduction) {
  std::vector<ResolvedTest> plan = {ReducedModel("reduced-only")};
  plan[0].spec.kind_params["fake_full_bytes"] = "1000000000000000";  // more than any budget
  Plan(plan);
  ASSERT_TRUE(Execute(plan).ok());
  const RunRecord r = OnlyRecord(store_.get());
  EXPECT_EQ(r.result.rerun_status, "pass");
  EXPECT_EQ(r.result.rerun_size, "milder");
  EXPECT_EQ(r.result.rerun_reduction, "milder reduction");
  EXPECT_EQ(r.result.blame, "reduction");
}

TEST_F(ExecuteTest, NoRerunWhenReductionRerunsAreOffOrTheTestPassed) {
  std::vector<ResolvedTest> plan = {ReducedModel("reduced-only")};
  Plan(plan);
  options_.rerun_reduced = false;
  ASSERT_TRUE(Execute(plan).ok());
  EXPECT_EQ(launcher_.requests().size(), 1u);
  const RunRecord r = OnlyRecord(store_.get());
  EXPECT_EQ(r.result.rerun_status, "");
  EXPECT_EQ(r.result.blame, "model");
}

// Issue 46, part 3: noisy tests measured again at the end of the sweep.
ResolvedTest NoisyModel(const std::string& model_type, const std::string& how) {
  ResolvedTest t = ReducedModel("unused");
  t.spec.model_id = "hf:" + model_type;
  t.spec.model_type = model_type;
  t.spec.kind_params = {{"fake_noisy", how}};
  return t;
}

// Issue 46, part 5: a reduced model is timed with one intra-op thread and compiled on the
// sweep's share of the cores; a full-size one takes the share for both.
TEST_F(ExecuteTest, AReducedModelIsTimedOnOneThreadAndCompiledOnTheSweepsShare) {
  ResolvedTest reduced = NoisyModel("bert", "never");
  ResolvedTest full = NoisyModel("gpt2", "never");
  full.spec.kind_params["size"] = "full";
  std::vector<ResolvedTest> plan = {reduced, full};
  Plan(plan);
  options_.torch_num_threads = 4;
  ASSERT_TRUE(Execute(plan).ok());
  ASSERT_EQ(launcher_.requests().size(), 2u);
  EXPECT_EQ(launcher_.requests()[0].torch_num_threads, 1);
  EXPECT_EQ(launcher_.requests()[0].compile_threads, 4);
  EXPECT_EQ(launcher_.requests()[1].torch_num_threads, 4);
  EXPECT_EQ(launcher_.requests()[1].compile_threads, 4);
  absl::StatusOr<std::vector<RunRecord>> stored = store_->QueryRuns(RunFilter{.sweep_id = "s1"});
  ASSERT_TRUE(stored.ok() && stored->size() == 2u);
  for (const RunRecord& r : *stored) {
    EXPECT_EQ(r.result.torch_num_threads, r.spec.model_type == "bert" ? 1 : 4) << r.spec.model_type;
  }
}

TEST_F(ExecuteTest, ANoisyTestIsMeasuredAgainOnceQuietAndTheQuietMeasurementIsTheRows) {
  std::vector<ResolvedTest> plan = {NoisyModel("bert", "once"), NoisyModel("gpt2", "always"),
                                    NoisyModel("t5", "always")};
  Plan(plan);
  options_.remeasure_noisy = 2;  // t5 is past the limit: stored as measured
  int polls = 0;
  options_.machine_quiet = [&polls] { return ++polls >= 3; };  // quiet at the third poll
  std::vector<std::string> notes, finished, remeasured;
  double waited = -1;
  callbacks_.on_note = [&](const std::string& line) { notes.push_back(line); };
  callbacks_.on_quiet_wait = [&](double s) { waited = s; };
  callbacks_.on_finish = [&](const RunRecord& r) { finished.push_back(r.spec.model_type); };
  callbacks_.on_remeasured = [&](const RunRecord& r) { remeasured.push_back(r.spec.model_type); };
  ASSERT_TRUE(Execute(plan).ok());
  EXPECT_EQ(launcher_.requests().size(), 5u);  // three, then bert and gpt2 again
  EXPECT_EQ(finished, (std::vector<std::string>{"bert", "gpt2", "t5"}));
  EXPECT_EQ(remeasured, (std::vector<std::string>{"bert", "gpt2"}));
  EXPECT_EQ(polls, 3);
  EXPECT_GE(waited, 0.9);  // two polls half a second apart before the quiet one
  ASSERT_EQ(notes.size(), 4u);
  EXPECT_EQ(
      notes[0].rfind("compatlab: 2 noisy tests to measure again once the machine is quiet", 0), 0u);
  EXPECT_EQ(notes[2],
            "compatlab: measuring again: bert forward eager cpu float32 1x32 fake_noisy=once\n");
  absl::StatusOr<std::vector<RunRecord>> stored = store_->QueryRuns(RunFilter{.sweep_id = "s1"});
  ASSERT_TRUE(stored.ok() && stored->size() == 3u);
  std::map<std::string, RunResult> by_type;
  for (const RunRecord& r : *stored) by_type[r.spec.model_type] = r.result;
  // bert: quiet the second time: its figures are the row's, the first's kept beside them.
  EXPECT_EQ(by_type["bert"].remeasure_state, "quiet");
  EXPECT_EQ(by_type["bert"].noisy, 0);
  EXPECT_DOUBLE_EQ(*by_type["bert"].steady_median_s, 0.004);
  EXPECT_DOUBLE_EQ(*by_type["bert"].remeasure_other_steady_median_s, 0.008);
  EXPECT_EQ(by_type["bert"].remeasure_other_noisy_reason, "fake load");
  // gpt2: noisy again and no faster: the first stays, still marked.
  EXPECT_EQ(by_type["gpt2"].remeasure_state, "still_noisy");
  EXPECT_EQ(by_type["gpt2"].noisy, 1);
  EXPECT_DOUBLE_EQ(*by_type["gpt2"].remeasure_other_steady_median_s, 0.008);
  EXPECT_EQ(by_type["t5"].remeasure_state, "");
  EXPECT_EQ(by_type["t5"].noisy, 1);
}

TEST_F(ExecuteTest, WhenTheMachineStaysBusyTheNoisyTestsAreStoredAsMeasuredAndSaidSo) {
  std::vector<ResolvedTest> plan = {NoisyModel("bert", "once")};
  Plan(plan);
  options_.remeasure_noisy = 3;
  options_.remeasure_wait_s = 0;
  options_.machine_quiet = [] { return false; };
  std::vector<std::string> notes;
  callbacks_.on_note = [&](const std::string& line) { notes.push_back(line); };
  ASSERT_TRUE(Execute(plan).ok());
  EXPECT_EQ(launcher_.requests().size(), 1u);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[1].rfind(
                "compatlab: the machine stayed busy for 0 s: 1 test keeps its noisy figures", 0),
            0u)
      << notes[1];
  const RunRecord r = OnlyRecord(store_.get());
  EXPECT_EQ(r.result.remeasure_state, "machine_busy");
  EXPECT_EQ(r.result.noisy, 1);
  // Off (0): stored at once, never waited for.
  options_.remeasure_noisy = 0;
  options_.sweep_id = "s2";
  SweepInfo info;
  info.sweep_id = "s2";
  ASSERT_TRUE(store_->CreateResolvedSweep(info, plan).ok());
  notes.clear();
  ASSERT_TRUE(Execute(plan).ok());
  EXPECT_TRUE(notes.empty());
}

TEST(MergeRemeasureResultTest, AFailedSecondMeasurementLeavesTheFirst) {
  RunResult first;
  first.status = TestStatus::kPass;
  first.steady_median_s = 0.01;
  first.noisy = 1;
  RunResult again;
  again.status = TestStatus::kTimeout;
  MergeRemeasureResult(again, &first);
  EXPECT_EQ(first.remeasure_state, "failed: timeout");
  EXPECT_DOUBLE_EQ(*first.steady_median_s, 0.01);
  // Noisy again but faster: the faster one is the row's, still marked.
  RunResult faster;
  faster.status = TestStatus::kPass;
  faster.steady_median_s = 0.005;
  faster.noisy = 1;
  faster.noisy_reason = "load";
  RunResult row = first;
  row.warm_state = "warm";
  MergeRemeasureResult(faster, &row);
  EXPECT_EQ(row.remeasure_state, "still_noisy");
  EXPECT_DOUBLE_EQ(*row.steady_median_s, 0.005);
  EXPECT_DOUBLE_EQ(*row.remeasure_other_steady_median_s, 0.01);
  EXPECT_EQ(row.warm_state, "warm");  // the first's warm rerun stays with the row
}

TEST(MergeRemeasureResultTest, TheFirstMeasurementsProfileAndTraceStayWithTheRow) {
  RunResult first;
  first.status = TestStatus::kPass;
  first.steady_median_s = 0.01;
  first.noisy = 1;
  first.profile = "steady";
  first.profile_calls = 5;
  first.profile_top_ops = R"([{"name":"aten::mm"}])";
  first.profile_trace_sha256 = std::string(64, 'b');
  first.profile_trace_bytes = 1234;
  RunResult quiet;  // a second measurement is not profiled
  quiet.status = TestStatus::kPass;
  quiet.steady_median_s = 0.004;
  MergeRemeasureResult(quiet, &first);
  EXPECT_EQ(first.remeasure_state, "quiet");
  EXPECT_DOUBLE_EQ(*first.steady_median_s, 0.004);
  EXPECT_EQ(first.profile, "steady");
  EXPECT_EQ(first.profile_calls, 5);
  EXPECT_EQ(first.profile_top_ops, R"([{"name":"aten::mm"}])");
  EXPECT_EQ(first.profile_trace_sha256, std::string(64, 'b'));
  EXPECT_EQ(first.profile_trace_bytes, 1234);
}

TEST(ReductionRerunBudgetTest, IsTheMemoryLimitOrTheFreeMemoryPerJobWhenSmaller) {
  EXPECT_EQ(ReductionRerunBudget(int64_t{8} << 30, int64_t{32} << 30, 2), int64_t{8} << 30);
  EXPECT_EQ(ReductionRerunBudget(int64_t{8} << 30, int64_t{8} << 30, 4), int64_t{2} << 30);
  EXPECT_EQ(ReductionRerunBudget(int64_t{8} << 30, -1, 4), int64_t{8} << 30);
}

TEST(MergeWarmResultTest, NamesWarmRunsWithoutHitsAndFailedOnes) {
  RunResult cold;
  RunResult warm;
  warm.status = TestStatus::kPass;
  warm.prepare_s = 3;
  warm.cache_hits = 0;
  MergeWarmResult(warm, &cold);
  EXPECT_EQ(cold.warm_state, "no_cache_hits");
  EXPECT_DOUBLE_EQ(*cold.warm_prepare_s, 3);
  warm.status = TestStatus::kFailToCompile;
  warm.error_message = "backend refused";
  MergeWarmResult(warm, &cold);
  EXPECT_EQ(cold.warm_state, "failed: fail_to_compile (backend refused)");
}

TEST_F(ExecuteTest, OverridesApplyToTheTestsRunNowAndAreStoredWithThem) {
  std::vector<ResolvedTest> plan = {Harness("hang", 60), Harness("noop", 60)};
  Plan(plan);
  options_.timeout_s = 0.3;
  options_.mem_limit_bytes = int64_t{512} << 20;
  ASSERT_TRUE(Execute(plan).ok());
  std::map<std::string, RunRecord> records = Records();
  const RunRecord& hang = records.at("hang/eager/32#0");
  EXPECT_EQ(hang.result.status, TestStatus::kTimeout);
  EXPECT_DOUBLE_EQ(hang.spec.timeout_s, 0.3);
  EXPECT_EQ(hang.result.mem_limit_bytes, int64_t{512} << 20);
  EXPECT_EQ(records.at("noop/eager/32#0").result.status, TestStatus::kPass);
}

TEST_F(ExecuteTest, RunsUpToJobsTestsAtOnce) {
  std::vector<ResolvedTest> plan;
  for (int i = 0; i < 7; ++i) plan.push_back(Harness("hang", 0.2, i));
  Plan(plan);
  options_.jobs = 3;
  int active = 0, peak = 0, done = 0;
  callbacks_.on_start = [&](const std::string&, const TestSpec&) {
    peak = std::max(peak, ++active);
  };
  callbacks_.on_finish = [&](const RunRecord&) {
    --active;
    ++done;
  };
  ASSERT_TRUE(Execute(plan).ok());
  EXPECT_EQ(done, 7);
  EXPECT_EQ(peak, 3);
  EXPECT_EQ(Records().size(), 7u);
}

TEST_F(ExecuteTest, StoreFailureStopsTheRunAndKillsRunningTests) {
  // Nothing is planned in sweep s1: the first insert fails.
  SweepInfo info;
  info.sweep_id = "s1";
  ASSERT_TRUE(store_->CreateResolvedSweep(info, {Harness("other")}).ok());
  std::vector<ResolvedTest> plan = {Harness("noop"), Harness("hang", 60), Harness("noop", 30, 1),
                                    Harness("noop", 30, 2)};
  options_.jobs = 2;
  absl::Status s = Execute(plan);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_LE(launcher_.launches(), 3);
  EXPECT_TRUE(Records().empty());
}

}  // namespace
}  // namespace compatlab
