#include "query/error_kb.h"

#include <cstdlib>
#include <set>

#include "core/error_signature.h"
#include "gtest/gtest.h"

namespace compatlab {
namespace {

constexpr const char* kTwoEntries = R"kb({
  "_doc": "comments are keys starting with _",
  "entries": [
    {"id": "matmul-shapes", "pattern": "^fail_to_run RuntimeError: mat1 and mat2 shapes",
     "explanation": "E1", "cause": "C1", "workaround": "W1",
     "observed": [{"model_type": "lilt", "status": "fail_to_run",
                   "signature": "RuntimeError: mat1 and mat2 shapes cannot be multiplied (NxN and NxN)",
                   "torch_version": "2.13.0+cpu", "transformers_version": "5.23.0"}]},
    {"id": "any-runtime-error", "pattern": "^fail_to_run RuntimeError: ",
     "explanation": "E2", "cause": "C2", "workaround": "W2", "_note": "a comment",
     "observed": [{"model_type": "sam", "status": "fail_to_run", "signature": "RuntimeError: boom",
                   "torch_version": "2.13.0+cpu", "transformers_version": "5.23.0",
                   "source": "hf-all"}]}
  ]})kb";

TEST(ErrorKbTest, FirstMatchingEntryWins) {
  auto kb = ErrorKnowledgeBase::Parse(kTwoEntries, "kb.json");
  ASSERT_TRUE(kb.ok()) << kb.status();
  ASSERT_EQ(kb->entries().size(), 2u);
  const KnownError* e = kb->Match("fail_to_run", "RuntimeError: mat1 and mat2 shapes cannot be");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->id, "matmul-shapes");
  e = kb->Match("fail_to_run", "RuntimeError: other");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->id, "any-runtime-error");
  EXPECT_EQ(kb->Match("fail_to_load", "RuntimeError: other"), nullptr);
  EXPECT_EQ(kb->entries()[1].observed[0].source, "hf-all");
  EXPECT_TRUE(kb->CheckObservedExamples().ok());
}

TEST(ErrorKbTest, MatchesStoredResultsBySignature) {
  auto kb = ErrorKnowledgeBase::Parse(kTwoEntries, "kb.json");
  ASSERT_TRUE(kb.ok()) << kb.status();
  RunResult r;
  r.status = TestStatus::kFailToRun;
  r.error_type = "RuntimeError";
  r.error_message = "mat1 and mat2 shapes cannot be multiplied (1x32 and 64x64)\nmore lines";
  // Numbers glued to a letter stay (error_signature.h): 1x32 -> Nx32.
  EXPECT_EQ(FailureSignature(r),
            "RuntimeError: mat1 and mat2 shapes cannot be multiplied (Nx32 and Nx64)");
  EXPECT_EQ(kb->MatchResult(r), nullptr);  // matches the stored signature, set when recorded
  r.error_signature = FailureSignature(r);
  ASSERT_NE(kb->MatchResult(r), nullptr);
  EXPECT_EQ(kb->MatchResult(r)->id, "matmul-shapes");
  RunResult crash;
  crash.status = TestStatus::kCrash;
  crash.status_detail = "SIGSEGV";
  EXPECT_EQ(FailureSignature(crash), "SIGSEGV");
  EXPECT_EQ(MatchSubject("crash", "SIGSEGV"), "crash SIGSEGV");
  EXPECT_EQ(MatchSubject("timeout", ""), "timeout");
  EXPECT_EQ(MatchSubject("fail_to_run", std::string(5000, 'x')).size(), kMaxSubjectBytes);
}

TEST(ErrorKbTest, ReportsObservedExamplesShadowedByAnEarlierEntry) {
  // Swap the order: the general entry now matches the specific one's example first.
  auto kb = ErrorKnowledgeBase::Parse(R"({"entries": [
    {"id": "general", "pattern": "RuntimeError", "explanation": "E", "cause": "C", "workaround": "W",
     "observed": [{"model_type": "a", "status": "fail_to_run", "signature": "RuntimeError: x",
                   "torch_version": "t", "transformers_version": "v"}]},
    {"id": "specific", "pattern": "RuntimeError: mat1", "explanation": "E", "cause": "C",
     "workaround": "W",
     "observed": [{"model_type": "b", "status": "fail_to_run", "signature": "RuntimeError: mat1",
                   "torch_version": "t", "transformers_version": "v"}]},
    {"id": "never", "pattern": "^crash SIGBUS", "explanation": "E", "cause": "C", "workaround": "W",
     "observed": [{"model_type": "c", "status": "crash", "signature": "SIGSEGV",
                   "torch_version": "t", "transformers_version": "v"}]}]})",
                                      "kb.json");
  ASSERT_TRUE(kb.ok()) << kb.status();
  absl::Status s = kb->CheckObservedExamples();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("entry \"specific\": its observed \"fail_to_run RuntimeError: mat1\" "
                             "is matched first by \"general\""),
            std::string::npos)
      << s;
  EXPECT_NE(
      s.message().find("entry \"never\": its observed \"crash SIGSEGV\" is matched by no entry"),
      std::string::npos)
      << s;
}

TEST(ErrorKbTest, RefusesMalformedFiles) {
  const std::string entry_head =
      R"({"entries": [{"id": "x", "explanation": "E", "cause": "C", "workaround": "W", )";
  const std::string observed =
      R"("observed": [{"model_type": "m", "status": "fail_to_run", "signature": "S",
                       "torch_version": "t", "transformers_version": "v"}])";
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {"[", "kb.json: not valid JSON"},
      {"[]", "kb.json: not a JSON object"},
      {R"({"entries": {}})", "no \"entries\" array"},
      {R"({"entries": [], "extra": 1})", "unknown key \"extra\""},
      {entry_head + R"("pattern": "(unclosed", )" + observed + "}]}",
       "entry \"x\": the pattern does not compile"},
      {entry_head + R"("pattern": "p", "typo": "", )" + observed + "}]}",
       "entry \"x\": unknown key \"typo\""},
      {entry_head + R"("pattern": "")" + ", " + observed + "}]}",
       "entry \"x\": \"pattern\" is empty"},
      {entry_head + R"("pattern": "p"}]})", "entry \"x\": \"observed\" must be a non-empty array"},
      {entry_head + R"("pattern": "p", "observed": [{"model_type": "m", "status": "pass",
        "signature": "S", "torch_version": "t", "transformers_version": "v"}]}]})",
       "observed 0: \"pass\" is not a failure status"},
      {entry_head + R"("pattern": "p", "observed": [{"model_type": "m", "status": "fail_to_run",
        "signature": "S", "torch_version": "t"}]}]})",
       "observed 0: missing \"transformers_version\""},
      {R"({"entries": [{"id": "Bad Id", "pattern": "p", "explanation": "E", "cause": "C",
        "workaround": "W", )" +
           observed + "}]}",
       "the id must be lower-case letters, digits and '-'"},
  };
  for (const Case& c : cases) {
    auto kb = ErrorKnowledgeBase::Parse(c.text, "kb.json");
    ASSERT_FALSE(kb.ok()) << c.text;
    EXPECT_EQ(kb.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(kb.status().message().find(c.message), std::string::npos)
        << kb.status() << "\nexpected: " << c.message;
  }
  const std::string one = entry_head + R"("pattern": "p", )" + observed + "}";
  auto dup = ErrorKnowledgeBase::Parse(
      R"({"entries": [)" + one.substr(13) + ", " + one.substr(13) + "]}", "kb.json");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("duplicate id"), std::string::npos) << dup.status();
}

// The curated file of the repository (knowledge/errors.json, doc/errors-kb.md).
TEST(ErrorKbTest, RepositoryKnowledgeFileIsValid) {
  const char* source_dir = std::getenv("COMPATLAB_SOURCE_DIR");
  ASSERT_NE(source_dir, nullptr) << "ctest sets COMPATLAB_SOURCE_DIR";
  auto kb =
      ErrorKnowledgeBase::Load(std::filesystem::path(source_dir) / "knowledge" / "errors.json");
  ASSERT_TRUE(kb.ok()) << kb.status();  // parses, every pattern compiles
  EXPECT_GE(kb->entries().size(), 10u);
  // Each entry's observed failures are matched by that entry, not by an earlier one.
  EXPECT_TRUE(kb->CheckObservedExamples().ok()) << kb->CheckObservedExamples();
  std::set<std::string> model_types;
  for (const KnownError& e : kb->entries()) {
    for (const ObservedFailure& o : e.observed) {
      // Recorded as the normaliser gives it (so it is what `errors` shows).
      const size_t colon = o.signature.find(": ");
      if (colon != std::string::npos) {
        EXPECT_EQ(ErrorSignature(o.signature.substr(0, colon), o.signature.substr(colon + 2)),
                  o.signature)
            << e.id;
      }
      model_types.insert(o.model_type);
    }
  }
  EXPECT_GE(model_types.size(), 10u) << "backed by failures of at least ten architectures";
}

}  // namespace
}  // namespace compatlab
