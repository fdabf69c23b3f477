// ctest: a PrivateUse1 backend for compatlab's tests (doc/test-device.md).
//
// One device (index 0) whose memory is host memory from an allocator of its
// own, real kernels for a short whitelist of ATen ops (kernels.cpp), and a
// boxed CPU fallback for every other op that counts what it handles
// (fallback.cpp). Python reaches the statistics through the custom ops of
// api.cpp (namespace compatlab_testdevice).
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/DeviceType.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace c10 {
struct StorageImpl;
}  // namespace c10

namespace compatlab_testdevice {

constexpr c10::DeviceType kDeviceType = c10::DeviceType::PrivateUse1;

// The device's allocator: host memory (c10::alloc_cpu), never the CPU
// allocator, with the statistics below. Lives for the whole process.
c10::Allocator* GetDeviceAllocator();

struct MemoryStats {
  int64_t allocated_bytes = 0;  // bytes held by live allocations now
  int64_t peak_bytes = 0;       // highest allocated_bytes since the last reset
  int64_t num_allocs = 0;       // allocations made (non-empty ones), ever
  int64_t num_frees = 0;        // allocations freed, ever
};

// Thread safe.
MemoryStats GetMemoryStats();
// Sets peak_bytes to the current allocated_bytes. Thread safe.
void ResetPeakMemoryStats();

// Grows or shrinks the bytes of a device storage, keeping its contents
// (up to the smaller size). REQUIRES: the storage is resizable.
void ResizeStorageBytes(c10::StorageImpl* storage, size_t new_bytes);

// The fallback counters: operator name ("aten::tanh", "aten::add.out") ->
// number of calls the CPU fallback handled. Thread safe (backward runs on
// the autograd engine's device thread).
void RecordFallback(const std::string& op_name);
std::vector<std::pair<std::string, int64_t>> FallbackCounts();  // sorted by name
void ResetFallbackCounts();

}  // namespace compatlab_testdevice
