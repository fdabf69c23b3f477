#include "plan/stored_code.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "util/hash.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

// This installation: one shipped profile, "dev", with its compile options.
OwnCode Own() {
  OwnCode own;
  own.python = "/home/lab/.venv/bin/python";
  own.probe_dir = "/home/lab/probe";
  TargetProfile dev;
  dev.name = "dev";
  dev.backend = "aot_eager";
  dev.compile_options_json = R"({"fullgraph":false})";
  dev.json = R"({"compile":{"backend":"aot_eager"},"name":"dev"})";
  own.profiles.push_back(dev);
  return own;
}

// A compiled model test planned by this installation on "dev".
ResolvedTest OwnTest() {
  ResolvedTest t;
  t.spec.model_id = "hf:gpt2";
  t.spec.model_type = "gpt2";
  t.spec.target = "dev";
  t.spec.mode = "compile";
  t.spec.backend = "aot_eager";
  TestExecution e;
  e.python = "/home/lab/.venv/bin/python";
  e.probe_dir = "/home/lab/probe";
  e.target_profile_json = R"({"compile":{"backend":"aot_eager"},"name":"dev"})";
  e.compile_options_json = R"({"fullgraph":false})";
  t.execution = e;
  return t;
}

void ExpectRefused(const ResolvedTest& t, const OwnCode& own, const std::string& field) {
  absl::Status s = CheckStoredCode({OwnTest(), t}, own);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find(absl::StrCat("its stored ", field, " '")), std::string::npos) << s;
  EXPECT_NE(s.message().find(t.spec.TestId()), std::string::npos) << s;
  EXPECT_NE(s.message().find("--allow-stored-code"), std::string::npos) << s;
}

TEST(StoredCodeTest, AnInstallationsOwnPlanRuns) {
  ResolvedTest harness;
  harness.spec.model_id = "none";
  harness.spec.kind = "noop";
  harness.execution = OwnTest().execution;
  harness.execution->target_profile_json = "";
  harness.execution->compile_options_json = "";
  ResolvedTest static_shapes = OwnTest();
  static_shapes.execution->compile_options_json = WithStaticShapes(R"({"fullgraph":false})");
  EXPECT_TRUE(CheckStoredCode({OwnTest(), harness, static_shapes}, Own()).ok());
}

TEST(StoredCodeTest, AnotherInterpreterOrProbeIsRefusedByField) {
  ResolvedTest python = OwnTest();
  python.execution->python = "/tmp/evil/python";
  ExpectRefused(python, Own(), "interpreter");
  ResolvedTest probe = OwnTest();
  probe.execution->probe_dir = "/tmp/evil";
  ExpectRefused(probe, Own(), "probe directory");
}

TEST(StoredCodeTest, AProfileOrCompileOptionsNotDerivedFromAnOwnProfileAreRefused) {
  ResolvedTest profile = OwnTest();
  profile.execution->target_profile_json =
      R"({"compile":{"backend":"aot_eager"},"name":"dev","setup":"evil:run"})";
  ExpectRefused(profile, Own(), "target profile");
  ResolvedTest options = OwnTest();
  options.execution->compile_options_json = R"({"options":{"cpp.cxx":["/some/program"]}})";
  ExpectRefused(options, Own(), "compile options");
  ResolvedTest harness_options = OwnTest();
  harness_options.execution->target_profile_json = "";
  ExpectRefused(harness_options, Own(), "compile options");
}

TEST(StoredCodeTest, ModuleBackendsCodeModelsAndCheckpointCodeNeedTheirFlag) {
  ResolvedTest backend = OwnTest();
  backend.spec.backend = "evil_pkg.backends:steal";
  ExpectRefused(backend, Own(), "backend");
  OwnCode given = Own();
  given.backend = "evil_pkg.backends:steal";
  EXPECT_TRUE(CheckStoredCode({backend}, given).ok());

  ResolvedTest code = OwnTest();
  code.spec.model_id = "code:mine@0123456789ab";
  code.spec.model_path = "/tmp/mine.py:build";
  ExpectRefused(code, Own(), "code model");
  given.model_code = true;
  EXPECT_TRUE(CheckStoredCode({code}, given).ok());

  ResolvedTest remote = OwnTest();
  remote.spec.kind_params["trust_remote_code"] = "true";
  ExpectRefused(remote, Own(), "checkpoint code (trust_remote_code)");
  given.trust_remote_code = true;
  EXPECT_TRUE(CheckStoredCode({remote}, given).ok());
}

TEST(StoredCodeTest, AShippedSuitesCodeModelIsOwnAndAStoredDotDotDoesNotClimbOut) {
  OwnCode own = Own();
  own.suites_dir = "/home/lab/suites";
  ResolvedTest shipped = OwnTest();
  shipped.spec.model_id = "code:flex.causal_d64@0123456789abcdef";
  shipped.spec.model_path = "/home/lab/suites/flex-attention/flex.py:causal_d64";
  EXPECT_TRUE(CheckStoredCode({shipped}, own).ok());
  for (const char* path : {"/home/lab/suites/../evil.py:build", "/home/lab/suites_evil/x.py:build",
                           "suites/flex-attention/flex.py:causal_d64", "/tmp/mine.py:build"}) {
    ResolvedTest other = shipped;
    other.spec.model_path = path;
    ExpectRefused(other, own, "code model");
  }
  own.suites_dir.clear();  // repro and callers that vouch for no suites
  ExpectRefused(shipped, own, "code model");
}

TEST(StoredCodeTest, ALocalCheckpointsOwnCodeNeedsItsPathGivenAgain) {
  ResolvedTest ckpt = OwnTest();
  ckpt.spec.model_id = "ckpt:mine";
  ckpt.spec.model_path = "/srv/checkpoints/mine";
  ckpt.spec.kind_params["trust_remote_code"] = "true";
  OwnCode given = Own();
  given.trust_remote_code = true;
  ExpectRefused(ckpt, given, "checkpoint code (trust_remote_code)");
  given.model_path = "/home/lab/other";
  ExpectRefused(ckpt, given, "checkpoint code (trust_remote_code)");
  given.model_path = "/srv/checkpoints/mine";
  EXPECT_TRUE(CheckStoredCode({ckpt}, given).ok());
}

TEST(StoredCodeTest, OwnCodeHoldsTheShippedProfilesAndTheGivenFiles) {
  const fs::path dir = fs::temp_directory_path() / ("stored-trust-" + RandomHex(6));
  fs::create_directories(dir / "targets");
  const std::string profile =
      R"({"name": "NAME", "description": "d", "verified": true, "device": "cpu", "modes": ["eager"]})";
  auto write = [&](const fs::path& path, const std::string& name) {
    std::string text = profile;
    text.replace(text.find("NAME"), 4, name);
    std::ofstream(path) << text;
  };
  write(dir / "targets" / "dev.json", "dev");
  write(dir / "mine.json", "mine");
  absl::StatusOr<OwnCode> own =
      LoadOwnCode("py", "probe", dir / "targets", {"dev", (dir / "mine.json").string()});
  ASSERT_TRUE(own.ok()) << own.status();
  ASSERT_EQ(own->profiles.size(), 2u);
  EXPECT_EQ(own->profiles[0].name, "dev");
  EXPECT_EQ(own->profiles[1].name, "mine");
  EXPECT_FALSE(LoadOwnCode("py", "probe", dir / "targets", {(dir / "gone.json").string()}).ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace compatlab
