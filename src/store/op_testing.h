// Op coverage records for tests of the store's op tables and of what reads them. Test-only.
#ifndef COMPATLAB_STORE_OP_TESTING_H_
#define COMPATLAB_STORE_OP_TESTING_H_

#include <string>

#include "core/op_records.h"
#include "core/records.h"

namespace compatlab::test {

// An op sweep `id` on target ctest, mode eager, float32 and torch `torch`, 2 cases planned.
inline OpSweepInfo MakeOpSweep(const std::string& id, const std::string& torch = "2.13.0+cpu") {
  OpSweepInfo s;
  s.op_sweep_id = id;
  s.created_at = "2026-12-05T20:00:00.000Z";
  s.target = "ctest";
  s.mode = "eager";
  s.dtypes = "float32";
  s.max_samples = 4;
  s.torch_version = torch;
  s.planned = 2;
  return s;
}

// The float32 case of `op` in op sweep `sweep` with `status`: 3 samples (one failed unless
// it passed), figures, aten::tanh executed and through the fallback, an xfail skip.
inline OpResult MakeOpResult(const std::string& sweep, const std::string& op, TestStatus status) {
  OpResult r;
  r.op_sweep_id = sweep;
  r.op = op;
  r.dtype = "float32";
  r.status = status;
  r.samples = 3;
  r.passed = status == TestStatus::kPass ? 3 : 2;
  r.failed = status == TestStatus::kPass ? 0 : 1;
  r.max_abs_err = 0.5;
  r.fallback_ops = R"({"aten::tanh":1})";
  r.aten_ops = R"(["aten::tanh"])";
  r.skip_source = "pytorch";
  r.skip_kind = "xfail";
  r.skip_reason = "expectedFailure";
  r.wall_s = 0.25;
  return r;
}

}  // namespace compatlab::test

#endif  // COMPATLAB_STORE_OP_TESTING_H_
