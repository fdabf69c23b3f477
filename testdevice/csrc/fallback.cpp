// The boxed CPU fallback for every op without a ctest kernel, and its
// counters. This is how an out-of-tree backend runs what it does not
// implement: operands are copied to the CPU, the CPU kernel runs, results
// (and mutated inputs) are copied back. The copies use the whitelisted
// copy kernels, so they are never counted here.
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <map>
#include <mutex>

#include "testdevice.h"

namespace compatlab_testdevice {
namespace {

std::mutex g_counts_mu;
std::map<std::string, int64_t>& Counts() {
  static auto* counts = new std::map<std::string, int64_t>();
  return *counts;
}

void CountingCpuFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  RecordFallback(c10::toString(op.schema().operator_name()));
  at::native::cpu_fallback(op, stack);
}

}  // namespace

void RecordFallback(const std::string& op_name) {
  std::lock_guard<std::mutex> lock(g_counts_mu);
  ++Counts()[op_name];
}

std::vector<std::pair<std::string, int64_t>> FallbackCounts() {
  std::lock_guard<std::mutex> lock(g_counts_mu);
  return {Counts().begin(), Counts().end()};
}

void ResetFallbackCounts() {
  std::lock_guard<std::mutex> lock(g_counts_mu);
  Counts().clear();
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&CountingCpuFallback>());
}

}  // namespace compatlab_testdevice
