#include "plan/axes.h"

#include "absl/strings/str_cat.h"
#include "core/fields.h"
#include "gtest/gtest.h"
#include "plan/testing.h"

namespace compatlab {
namespace {

// Holds what a PlanInput refers to.
struct AxesFixture {
  Suite suite;
  PlanOverrides overrides;
  std::map<std::string, TargetProfile> profiles = PlanTestProfiles();
  PlanInput In() const { return {suite, overrides, nullptr, profiles}; }
};

// The tests `step` makes of one partial test `partial`, or the step's error.
absl::StatusOr<std::vector<TestSpec>> Along(AxisStep step, const AxesFixture& f,
                                            const TestSpec& partial = {}) {
  absl::StatusOr<Axis> axis = step(f.In());
  if (!axis.ok()) return axis.status();
  return (*axis)(partial);
}

TEST(AxisTest, TargetsOverrideTheSuitesAndEachNeedsAProfile) {
  AxesFixture f;
  f.overrides.targets = {"dev", "cpu"};
  absl::StatusOr<std::vector<TestSpec>> tests = Along(TargetAxis, f);
  ASSERT_TRUE(tests.ok()) << tests.status();
  ASSERT_EQ(tests->size(), 2u);
  EXPECT_EQ((*tests)[0].target, "dev");
  EXPECT_EQ((*tests)[1].target, "cpu");
  f.overrides.targets = {"tpu"};
  EXPECT_EQ(Along(TargetAxis, f).status().message(), "no profile for target tpu");
}

TEST(AxisTest, CompileModeTakesTheBackendOfTheTargetsProfileOrOfTheFlag) {
  AxesFixture f;
  f.overrides.modes = {"eager", "compile"};
  TestSpec partial;
  partial.target = "dev";
  absl::StatusOr<std::vector<TestSpec>> tests = Along(ModeAxis, f, partial);
  ASSERT_TRUE(tests.ok()) << tests.status();
  ASSERT_EQ(tests->size(), 2u);
  EXPECT_EQ((*tests)[0].mode + "/" + (*tests)[0].backend, "eager/");
  EXPECT_EQ((*tests)[1].mode + "/" + (*tests)[1].backend, "compile/dev-backend");
  f.overrides.backend = "aot_eager";
  EXPECT_EQ((*Along(ModeAxis, f, partial))[1].backend, "aot_eager");
  f.overrides.modes = {"jit"};
  EXPECT_EQ(Along(ModeAxis, f).status().message(), "unknown mode 'jit' (eager, compile, export)");
}

TEST(AxisTest, KindsDtypesAndShapesAreCheckedValues) {
  AxesFixture f;
  f.overrides.kinds = {"train", "forward"};
  f.overrides.dtypes = {"bfloat16"};
  f.overrides.batch_sizes = {2, 1};
  f.suite.seq_lens = {16};
  EXPECT_EQ((*Along(KindAxis, f))[0].kind, "train");
  EXPECT_EQ((*Along(DtypeAxis, f))[0].dtype, "bfloat16");
  EXPECT_EQ((*Along(BatchSizeAxis, f))[1].batch_size, 1);
  EXPECT_EQ((*Along(SeqLenAxis, f))[0].seq_len, 16);
  f.overrides.kinds = {"noop"};
  EXPECT_EQ(Along(KindAxis, f).status().message(),
            "'noop' is not a model kind (forward, generate, train, load)");
  f.overrides.dtypes = {"int8"};
  EXPECT_EQ(Along(DtypeAxis, f).status().message(),
            "unknown dtype 'int8' (float32, bfloat16, float16, float64)");
  f.overrides.batch_sizes = {0};
  f.overrides.seq_lens = {(int64_t{1} << 20) + 1};
  EXPECT_EQ(Along(BatchSizeAxis, f).status().message(),
            "batch sizes and sequence lengths must be from 1 to 1048576, not 0");
  EXPECT_EQ(Along(SeqLenAxis, f).status().message(),
            "batch sizes and sequence lengths must be from 1 to 1048576, not 1048577");
}

TEST(AxisTest, KindParametersFollowTheKindAndKeepTheModelsBuildSettings) {
  AxesFixture f;
  f.overrides.kinds = {"generate", "load"};
  f.overrides.load_rates = {"2x"};
  TestSpec partial;
  partial.kind = "generate";
  partial.kind_params["size"] = "full";
  absl::StatusOr<std::vector<TestSpec>> tests = Along(KindParamAxis, f, partial);
  ASSERT_TRUE(tests.ok()) << tests.status();
  ASSERT_EQ(tests->size(), 1u);
  EXPECT_EQ(KindParamsToJson((*tests)[0].kind_params), R"({"new_tokens":"16","size":"full"})");
  partial.kind = "load";
  tests = Along(KindParamAxis, f, partial);
  ASSERT_EQ(tests->size(), 3u);
  EXPECT_EQ(KindParamsToJson((*tests)[2].kind_params),
            R"({"new_tokens":"16","rate":"2x","requests":"32","scenario":"server","size":"full"})");
  f.overrides.load_rates = {"2"};
  EXPECT_NE(Along(KindParamAxis, f).status().message().find("--rates"), std::string::npos);
  f.overrides.kinds = {"forward"};  // the load flags are load's alone
  EXPECT_TRUE(Along(KindParamAxis, f).ok());
}

TEST(AxisTest, RanksAreCheckedAndATrainTestOverRanksTakesItsSplit) {
  AxesFixture f;
  f.suite.ranks = {1, 2};
  TestSpec partial;
  partial.kind = "train";
  absl::StatusOr<std::vector<TestSpec>> tests = Along(RanksAxis, f, partial);
  ASSERT_TRUE(tests.ok()) << tests.status();
  ASSERT_EQ(tests->size(), 2u);
  EXPECT_EQ((*tests)[0].ranks, 1);
  EXPECT_TRUE((*tests)[0].kind_params.empty());
  EXPECT_EQ((*tests)[1].ranks, 2);
  EXPECT_EQ(KindParamsToJson((*tests)[1].kind_params), R"({"parallel":"tp"})");
  f.overrides.ranks = {2};
  f.overrides.parallel = "dp";
  EXPECT_EQ(KindParamsToJson((*Along(RanksAxis, f, partial))[0].kind_params),
            R"({"parallel":"dp"})");
  partial.kind = "forward";  // forward over ranks is tensor parallel: no parameter
  EXPECT_TRUE((*Along(RanksAxis, f, partial))[0].kind_params.empty());
  f.overrides.ranks = {1};  // --parallel with one rank: a process group of one
  EXPECT_EQ(KindParamsToJson((*Along(RanksAxis, f, partial))[0].kind_params),
            R"({"parallel":"dp"})");
  f.overrides.parallel = "pp";
  EXPECT_EQ(Along(RanksAxis, f).status().message(), "unknown --parallel 'pp' (tp, dp)");
  f.overrides.ranks = {65};
  EXPECT_EQ(Along(RanksAxis, f).status().message(), "ranks must be from 1 to 64, not 65");
}

TEST(AxisProductTest, ThePartialsVarySlowestThenEachAxisInOrder) {
  AxesFixture f;
  f.overrides.targets = {"cpu", "dev"};
  f.overrides.modes = {"eager", "compile"};
  f.overrides.kinds = {"forward", "train"};
  f.overrides.seq_lens = {8, 16};
  absl::StatusOr<std::vector<Axis>> axes = PlanAxes(f.In());
  ASSERT_TRUE(axes.ok()) << axes.status();
  std::vector<TestSpec> partials(2);
  partials[0].model_id = "a";
  partials[1].model_id = "b";
  std::vector<std::string> got;
  for (const TestSpec& s : AxisProduct(partials, *axes)) {
    got.push_back(absl::StrCat(s.model_id, s.target, s.mode, s.kind, s.seq_len));
  }
  std::vector<std::string> nested;  // the same loops written out, slowest first
  for (const char* model : {"a", "b"}) {
    for (const char* target : {"cpu", "dev"}) {
      for (const char* mode : {"eager", "compile"}) {
        for (const char* kind : {"forward", "train"}) {
          for (int seq : {8, 16}) nested.push_back(absl::StrCat(model, target, mode, kind, seq));
        }
      }
    }
  }
  EXPECT_EQ(got, nested);
  EXPECT_TRUE(AxisProduct({}, *axes).empty());
  EXPECT_EQ(AxisProduct(partials, {}).size(), 2u);
}

TEST(AxisProductTest, PlanAxesStopsAtTheFirstBadAxisInOrder) {
  AxesFixture f;
  f.overrides.modes = {"jit"};
  f.overrides.dtypes = {"int8"};
  EXPECT_EQ(PlanAxes(f.In()).status().message(), "unknown mode 'jit' (eager, compile, export)");
}

TEST(KindParamVariantsTest, GenerateTrainAndLoadTakeTheirParameters) {
  PlanOverrides o;
  o.new_tokens = 4;
  o.train_steps = 2;
  EXPECT_EQ(KindParamsToJson((*KindParamVariants("generate", o))[0]), R"({"new_tokens":"4"})");
  EXPECT_EQ(KindParamsToJson((*KindParamVariants("train", o))[0]), R"({"steps":"2"})");
  EXPECT_EQ(KindParamVariants("forward", o)->size(), 1u);
  EXPECT_TRUE((*KindParamVariants("forward", o))[0].empty());
  EXPECT_EQ(KindParamVariants("load", o)->size(), 5u);
  o.load_requests = 4097;
  EXPECT_EQ(KindParamVariants("load", o).status().message(),
            "--load-requests must be from 1 to 4096");
}

}  // namespace
}  // namespace compatlab
