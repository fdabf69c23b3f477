#include "sweep/progress.h"

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace compatlab {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TestSpec Spec(const std::string& kind) {
  TestSpec spec;
  spec.model_id = "hf:llama";
  spec.model_type = "llama";
  spec.kind = kind;
  return spec;
}

// What a Progress wrote to its FILE, read back.
class Captured {
 public:
  Captured() : file_(std::tmpfile()) {}
  ~Captured() { std::fclose(file_); }
  FILE* file() { return file_; }
  std::string Text() {
    std::fflush(file_);
    std::rewind(file_);
    std::string text;
    char buf[512];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0) text.append(buf, n);
    return text;
  }

 private:
  FILE* file_;
};

TEST(ProgressTest, AFailedLineNamesTheReductionRerunThatDecidedItsBlame) {
  Captured out;
  Progress progress(out.file(), /*live=*/false, 1, 0, [] { return 0.0; });
  progress.Started("r1", Spec("forward"));
  RunResult result;
  result.status = TestStatus::kFailToRun;
  result.error_message = "size mismatch";
  result.rerun_status = "pass";
  result.rerun_size = "full";
  result.blame = "reduction";
  progress.Finished("r1", Spec("forward"), result);
  EXPECT_THAT(out.Text(),
              HasSubstr("size mismatch  [rerun at full size: pass; blame reduction]\n"));
}

TEST(ProgressTest, PipedOutputNamesATestStillRunningAfterTheLongTestTimeOnce) {
  Captured out;
  double now = 100.0;
  Progress progress(out.file(), /*live=*/false, 2, 0, [&now] { return now; });
  progress.Started("r1", Spec("train"));
  now += kLongTestS - 1;
  progress.Tick();
  EXPECT_EQ(out.Text(), "");
  now += 2;
  progress.Tick();
  progress.Tick();
  const std::string text = out.Text();
  EXPECT_THAT(text, HasSubstr("running       llama train eager cpu float32 1x32  31 s so far"));
  EXPECT_EQ(text.find("running"), text.rfind("running"));  // once
  RunResult pass;
  pass.status = TestStatus::kPass;
  progress.Finished("r1", Spec("train"), pass);
  EXPECT_THAT(out.Text(), HasSubstr("[1/2] pass"));
}

// Issue 46, part 2: one line when the machine turns busy, once per busy spell (the rows'
// own noisy verdicts), naming the tests timed noisy so far; a quiet test ends the spell, a
// test without a verdict does not.
TEST(ProgressTest, SaysOncePerBusySpellThatTheMachineTurnedBusy) {
  Captured out;
  Progress progress(out.file(), /*live=*/false, 6, 0, [] { return 0.0; });
  RunResult quiet;
  quiet.status = TestStatus::kPass;
  quiet.noisy = 0;
  quiet.prepare_noisy = 0;
  RunResult noisy = quiet;
  noisy.noisy = 1;
  noisy.noisy_reason = "load average 3.10 > 2 cores";
  RunResult unmeasured;
  unmeasured.status = TestStatus::kFailToLoad;
  auto finish = [&](const std::string& id, const std::string& kind, const RunResult& r) {
    progress.Started(id, Spec(kind));
    progress.Finished(id, Spec(kind), r);
  };
  finish("r1", "forward", quiet);
  EXPECT_THAT(out.Text(), Not(HasSubstr("turned busy")));
  finish("r2", "generate", noisy);
  finish("r3", "train", noisy);      // the same spell: no second line
  finish("r4", "load", unmeasured);  // no verdict: the spell goes on
  finish("r5", "context", noisy);
  std::string text = out.Text();
  EXPECT_THAT(text, HasSubstr("[2/6] pass          llama generate eager cpu float32 1x32  0.00 s\n"
                              "compatlab: warning: the machine turned busy during the sweep "
                              "(steady: load average 3.10 > 2 cores): 1 test timed noisy so far "
                              "(llama generate eager cpu float32 1x32); their figures are marked "
                              "~\n[3/6]"));
  EXPECT_EQ(text.find("turned busy"), text.rfind("turned busy"));
  finish("r6", "forward", quiet);  // quiet again: the spell ends
  finish("r7", "forward", noisy);  // a second spell, with every noisy test so far
  text = out.Text();
  EXPECT_THAT(text, HasSubstr("): 4 tests timed noisy so far (llama generate eager cpu float32 "
                              "1x32, llama train eager cpu float32 1x32, llama context eager cpu "
                              "float32 1x32, llama forward eager cpu float32 1x32);"));
  EXPECT_EQ(progress.noisy_tests().size(), 4u);
  // Busy before the sweep started (its own warning said so): the first spell is announced.
  Captured started_busy;
  Progress busy(started_busy.file(), /*live=*/false, 1, 0, [] { return 0.0; });
  busy.StartBusy();
  busy.Started("r1", Spec("forward"));
  busy.Finished("r1", Spec("forward"), noisy);
  EXPECT_THAT(started_busy.Text(), Not(HasSubstr("turned busy")));
}

TEST(ProgressTest, LabelsShowTheBackendAndEveryKindParameter) {
  TestSpec spec = Spec("generate");
  spec.mode = "compile";
  spec.backend = "aot_eager";
  spec.kind_params = {{"new_tokens", "64"}};
  EXPECT_EQ(TestLabel(spec), "llama generate compile:aot_eager cpu float32 1x32 new_tokens=64");
  TestSpec train = Spec("train");
  train.dtype = "bfloat16";
  train.batch_size = 2;
  train.seq_len = 128;
  train.kind_params = {{"steps", "50"}};
  EXPECT_EQ(TestLabel(train), "llama train eager cpu bfloat16 2x128 steps=50");
  EXPECT_THAT(TestLabel(Spec("forward")), Not(HasSubstr("=")));
}

TEST(ProgressTest, ACodeModelIsLabelledByItsIdNotItsBaselinesType) {
  TestSpec spec = Spec("forward");
  spec.model_id = "code:attn.build@0123456789abcdef";
  EXPECT_EQ(TestLabel(spec), "code:attn.build@0123456789abcdef forward eager cpu float32 1x32");
}

}  // namespace
}  // namespace compatlab
