#include "core/error_signature.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

TEST(ErrorSignatureTest, RemovesNumbersAddressesAndPaths) {
  EXPECT_EQ(NormalizeErrorMessage("size mismatch at /tmp/x.py:12, got 0x7ffd1234 and 64 (float32)"),
            "size mismatch at <path>, got <hex> and N (float32)");
  EXPECT_EQ(NormalizeErrorMessage("Expected all tensors on one device, cuda:0 and cpu!"),
            "Expected all tensors on one device, cuda:N and cpu!");
  EXPECT_EQ(NormalizeErrorMessage("shape '[2, -1, 64]' is invalid for input of size 4096"),
            "shape '[N, -N, N]' is invalid for input of size N");
  EXPECT_EQ(NormalizeErrorMessage("tolerance 1e-05 exceeded by 0.25"), "tolerance N exceeded by N");
  EXPECT_EQ(NormalizeErrorMessage("<object at 0x7F3A2B1C9D00> in \"./model/x.py\""),
            "<object at <hex>> in \"<path>\"");
  EXPECT_EQ(NormalizeErrorMessage("cache key 3f2a9c0d1b7e4a5f6c8d not found in ~/cache/k"),
            "cache key <hex> not found in <path>");
}

TEST(ErrorSignatureTest, KeepsIdentifiersAndWords) {
  EXPECT_EQ(NormalizeErrorMessage("aten::_foo.int not implemented for float16 on layer_12"),
            "aten::_foo.int not implemented for float16 on layer_12");
  EXPECT_EQ(NormalizeErrorMessage("and/or x / y"), "and/or x / y");
  EXPECT_EQ(NormalizeErrorMessage("deadbeef"), "deadbeef");  // a short word, not an address
  EXPECT_EQ(NormalizeErrorMessage("123456789012345 params"), "N params");
}

TEST(ErrorSignatureTest, FirstNonBlankLineWithWhitespaceCollapsed) {
  EXPECT_EQ(NormalizeErrorMessage("\n  \n  Unsupported:\tcall_function   x \nfrom user code:\n"),
            "Unsupported: call_function x");
  EXPECT_EQ(NormalizeErrorMessage(""), "");
  EXPECT_EQ(NormalizeErrorMessage(" \n\t"), "");
}

TEST(ErrorSignatureTest, SameFailureSameSignature) {
  EXPECT_EQ(ErrorSignature("RuntimeError", "out of memory at 0x1234, tried 2048 bytes"),
            ErrorSignature("RuntimeError", "out of memory at 0xbeef, tried 4096 bytes"));
  EXPECT_NE(ErrorSignature("RuntimeError", "x"), ErrorSignature("ValueError", "x"));
  EXPECT_EQ(ErrorSignature("RuntimeError", ""), "RuntimeError");
  EXPECT_EQ(ErrorSignature("", "boom 3"), "boom N");
  EXPECT_EQ(ErrorSignature("", ""), "");
}

TEST(ErrorSignatureTest, FailureSignatureOfFailuresOnlyElseStatusDetail) {
  RunResult r;
  r.status = TestStatus::kFailToRun;
  r.error_type = "RuntimeError";
  r.error_message = "boom 3";
  EXPECT_EQ(FailureSignature(r), "RuntimeError: boom N");
  r.status = TestStatus::kPass;
  EXPECT_EQ(FailureSignature(r), "");
  r.status = TestStatus::kSkipped;
  EXPECT_EQ(FailureSignature(r), "");
  RunResult crash;
  crash.status = TestStatus::kCrash;
  crash.status_detail = "SIGSEGV";
  EXPECT_EQ(FailureSignature(crash), "SIGSEGV");
}

TEST(ErrorSignatureTest, FillMissingErrorSignatureKeepsAStoredOne) {
  RunResult r;
  r.status = TestStatus::kTimeout;
  r.status_detail = "deadline 30 s";
  FillMissingErrorSignature(&r);
  EXPECT_EQ(r.error_signature, "deadline N s");
  r.error_signature = "stored";
  FillMissingErrorSignature(&r);
  EXPECT_EQ(r.error_signature, "stored");
}

}  // namespace
}  // namespace compatlab
