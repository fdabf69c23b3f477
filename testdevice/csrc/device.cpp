// The ctest device itself: its allocator and statistics, its device guard
// and its PrivateUse1 hooks. Kernels live in kernels.cpp.
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "testdevice.h"

namespace compatlab_testdevice {
namespace {

// Sizes of live allocations and the statistics derived from them. A map
// (rather than a header in front of each block) keeps data == context in
// every DataPtr, so raw_deleter() works.
class MemoryTracker {
 public:
  void OnAlloc(void* ptr, size_t nbytes) {
    std::lock_guard<std::mutex> lock(mu_);
    sizes_[ptr] = nbytes;
    stats_.allocated_bytes += static_cast<int64_t>(nbytes);
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.allocated_bytes);
    ++stats_.num_allocs;
  }

  void OnFree(void* ptr) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sizes_.find(ptr);
    TORCH_INTERNAL_ASSERT(it != sizes_.end(), "ctest: freeing memory it did not allocate");
    stats_.allocated_bytes -= static_cast<int64_t>(it->second);
    ++stats_.num_frees;
    sizes_.erase(it);
  }

  MemoryStats Get() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  void ResetPeak() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_bytes = stats_.allocated_bytes;
  }

 private:
  std::mutex mu_;
  std::unordered_map<void*, size_t> sizes_;
  MemoryStats stats_;
};

MemoryTracker& Tracker() {
  static auto* tracker = new MemoryTracker();  // never destroyed: frees may come at exit
  return *tracker;
}

void DeleteDeviceMemory(void* ptr) {
  if (ptr == nullptr) return;
  Tracker().OnFree(ptr);
  c10::free_cpu(ptr);
}

class DeviceAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    void* data = nullptr;
    if (nbytes > 0) {
      data = c10::alloc_cpu(nbytes);
      Tracker().OnAlloc(data, nbytes);
    }
    return {data, data, &DeleteDeviceMemory, c10::Device(kDeviceType, 0)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &DeleteDeviceMemory; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

DeviceAllocator g_allocator;
REGISTER_ALLOCATOR(kDeviceType, &g_allocator)

void CheckIndex(c10::DeviceIndex index) {
  TORCH_CHECK(index == -1 || index == 0, "ctest has one device (index 0); got index ",
              static_cast<int>(index));
}

// One device, one stream, and every operation complete when it returns:
// streams and events are trivial.
class GuardImpl final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override { return kDeviceType; }

  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kDeviceType, "ctest guard got a ", d.type(), " device");
    CheckIndex(d.index());
    return c10::Device(kDeviceType, 0);
  }
  c10::Device getDevice() const override { return c10::Device(kDeviceType, 0); }
  void setDevice(c10::Device d) const override { exchangeDevice(d); }
  void uncheckedSetDevice(c10::Device) const noexcept override {}

  c10::Stream getStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kDeviceType, 0));
  }
  c10::Stream getDefaultStream(c10::Device d) const override { return getStream(d); }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool) const override { return getStream(d); }
  c10::Stream getNewStream(c10::Device d, int) const override { return getStream(d); }
  c10::Stream exchangeStream(c10::Stream s) const override { return getStream(s.device()); }

  c10::DeviceIndex deviceCount() const noexcept override { return 1; }

  void record(void**, const c10::Stream&, const c10::DeviceIndex,
              const c10::EventFlag) const override {}
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
  void synchronizeEvent(void*) const override {}
  void synchronizeDevice(const c10::DeviceIndex) const override {}
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

class Hooks final : public at::PrivateUse1HooksInterface {
 public:
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  void init() const override {}
  c10::DeviceIndex deviceCount() const override { return 1; }
  void setCurrentDevice(c10::DeviceIndex index) const override { CheckIndex(index); }
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex index) const override {
    CheckIndex(index);
    return 0;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex index) const override {
    return exchangeDevice(index);
  }
  at::Device getDeviceFromPtr(void*) const override { return c10::Device(kDeviceType, 0); }
  bool isPinnedPtr(const void*) const override { return false; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override {
    TORCH_CHECK(false,
                "ctest has no random number generator of its own: random ops run through the "
                "CPU fallback and draw from the CPU generator");
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override {
    ResizeStorageBytes(storage.unsafeGetStorageImpl(), new_bytes);
  }
};

struct RegisterHooks {
  RegisterHooks() { at::RegisterPrivateUse1HooksInterface(new Hooks()); }
} g_register_hooks;

}  // namespace

c10::Allocator* GetDeviceAllocator() { return &g_allocator; }

MemoryStats GetMemoryStats() { return Tracker().Get(); }

void ResetPeakMemoryStats() { Tracker().ResetPeak(); }

void ResizeStorageBytes(c10::StorageImpl* storage, size_t new_bytes) {
  TORCH_CHECK(storage->resizable(), "Trying to resize storage that is not resizable");
  c10::Allocator* allocator = storage->allocator() ? storage->allocator() : &g_allocator;
  c10::DataPtr data = allocator->allocate(new_bytes);
  const size_t keep = std::min(new_bytes, storage->nbytes());
  if (keep > 0) std::memcpy(data.get(), storage->data(), keep);
  storage->set_data_ptr_noswap(std::move(data));
  storage->set_nbytes(new_bytes);
}

}  // namespace compatlab_testdevice
