// The whitelist: the ops ctest runs with kernels of its own. Each kernel
// views the device memory of its operands as CPU tensors (no copy) and
// calls the CPU kernel on them; what matters for compatlab is that these
// ops dispatch to PrivateUse1 kernels, not how they compute. Every other op
// reaches the counting CPU fallback (fallback.cpp), and the Python side
// reads this list back from the dispatcher, never from a copy of it.
#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_local_scalar_dense.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/add.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/copy.h>
#include <ATen/ops/fill.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/zero.h>
#include <c10/core/StorageImpl.h>
#include <torch/library.h>

#include "testdevice.h"

namespace compatlab_testdevice {
namespace {

const c10::DispatchKeySet kDeviceKeys(c10::DispatchKey::PrivateUse1);

bool OnDevice(const at::Tensor& t) { return t.device().type() == kDeviceType; }

// A CPU tensor over the same memory as `t` (a ctest tensor), or `t` itself
// when it is already on the CPU. Valid while `t`'s storage lives.
at::Tensor AsCpu(const at::Tensor& t) {
  if (!t.defined() || t.is_cpu()) return t;
  TORCH_CHECK(OnDevice(t), "ctest: cannot use a tensor on ", t.device(), " here");
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU));
}

// Compute kernels accept ctest tensors and CPU scalars (0-dim), as CUDA does.
void CheckOperands(const char* op, std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors) {
    if (!t->defined() || OnDevice(*t) || (t->is_cpu() && t->dim() == 0)) continue;
    TORCH_CHECK(false, "Expected all tensors to be on the same device, but found ", t->device(),
                " and ctest:0 (when checking arguments for ", op, ")");
  }
}

void CheckFactoryArgs(std::optional<at::Layout> layout, std::optional<at::Device> device,
                      std::optional<bool> pin_memory) {
  TORCH_CHECK(c10::layout_or_default(layout) == at::Layout::Strided,
              "ctest supports strided tensors only");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "ctest memory cannot be pinned");
  if (device.has_value()) {
    TORCH_CHECK(device->type() == kDeviceType, "ctest factory got device ", *device);
    TORCH_CHECK(device->index() <= 0, "ctest has one device (index 0); got ", *device);
  }
}

at::Tensor NewDeviceTensor(at::IntArrayRef size, at::IntArrayRef stride, at::ScalarType dtype) {
  return at::detail::empty_strided_generic(size, stride, GetDeviceAllocator(), kDeviceKeys, dtype);
}

// A ctest tensor with the values, sizes and strides of a CPU result.
at::Tensor FromCpuResult(const at::Tensor& cpu) {
  at::Tensor out = NewDeviceTensor(cpu.sizes(), cpu.strides(), cpu.scalar_type());
  AsCpu(out).copy_(cpu);
  return out;
}

// --- memory -----------------------------------------------------------------

at::Tensor EmptyMemoryFormat(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                             std::optional<at::Layout> layout, std::optional<at::Device> device,
                             std::optional<bool> pin_memory,
                             std::optional<at::MemoryFormat> memory_format) {
  CheckFactoryArgs(layout, device, pin_memory);
  return at::detail::empty_generic(size, GetDeviceAllocator(), kDeviceKeys,
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor EmptyStrided(at::IntArrayRef size, at::IntArrayRef stride,
                        std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                        std::optional<at::Device> device, std::optional<bool> pin_memory) {
  CheckFactoryArgs(layout, device, pin_memory);
  return NewDeviceTensor(size, stride, c10::dtype_or_default(dtype));
}

const at::Tensor& Resize(const at::Tensor& self, at::IntArrayRef size,
                         std::optional<at::MemoryFormat> memory_format) {
  // The storage keeps its allocator (ours), so growing it allocates on ctest.
  return at::native::resize_(self, size, memory_format);
}

at::Tensor& SetStorageOffset(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                             at::IntArrayRef size, at::IntArrayRef stride) {
  return at::native::set_storage_cpu_(self, std::move(source), storage_offset, size, stride);
}

at::Tensor& SetStorage(at::Tensor& self, c10::Storage source) {
  return at::native::set_(self, std::move(source));
}

at::Tensor& SetTensor(at::Tensor& self, const at::Tensor& source) {
  return at::native::set_tensor_(self, source);
}

at::Tensor& SetEmpty(at::Tensor& self) {
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, GetDeviceAllocator(),
                     /*resizable=*/true);
  return at::native::set_storage_cpu_(self, std::move(empty), 0, {0}, {});
}

// --- copies -----------------------------------------------------------------

void CheckCopyDevice(const at::Tensor& t) {
  TORCH_CHECK(t.is_cpu() || OnDevice(t), "ctest copies to and from the CPU only, not ", t.device());
}

at::Tensor& Copy(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  CheckCopyDevice(self);
  CheckCopyDevice(src);
  AsCpu(self).copy_(AsCpu(src), non_blocking);
  return self;
}

at::Tensor CopyFrom(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  at::Tensor out = dst;
  Copy(out, self, non_blocking);
  return dst;
}

at::Tensor CopyFromAndResize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return CopyFrom(self, dst, false);
}

at::Scalar LocalScalarDense(const at::Tensor& self) { return at::_local_scalar_dense(AsCpu(self)); }

// --- views (metadata only; the generic native implementations work on any
// strided tensor and keep the result aliased to the input) -------------------

at::Tensor View(const at::Tensor& self, at::IntArrayRef size) {
  return at::native::view(self, size);
}

at::Tensor AsStrided(const at::Tensor& self, at::IntArrayRef size, at::IntArrayRef stride,
                     std::optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor ReshapeAlias(const at::Tensor& self, at::IntArrayRef size, at::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

at::Tensor Unfold(const at::Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  return at::native::unfold(self, dimension, size, step);
}

at::Tensor ViewAsReal(const at::Tensor& self) { return at::native::view_as_real(self); }

at::Tensor ViewAsComplex(const at::Tensor& self) { return at::native::view_as_complex(self); }

// --- compute ----------------------------------------------------------------

at::Tensor& Fill(at::Tensor& self, const at::Scalar& value) {
  AsCpu(self).fill_(value);
  return self;
}

at::Tensor& Zero(at::Tensor& self) {
  AsCpu(self).zero_();
  return self;
}

at::Tensor Add(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  CheckOperands("add", {&self, &other});
  return FromCpuResult(at::add(AsCpu(self), AsCpu(other), alpha));
}

at::Tensor Mul(const at::Tensor& self, const at::Tensor& other) {
  CheckOperands("mul", {&self, &other});
  return FromCpuResult(at::mul(AsCpu(self), AsCpu(other)));
}

at::Tensor Relu(const at::Tensor& self) {
  CheckOperands("relu", {&self});
  return FromCpuResult(at::relu(AsCpu(self)));
}

// mm and addmm write straight into device memory: their result is always
// a contiguous [n, p] matrix of mat1's dtype.
at::Tensor Mm(const at::Tensor& self, const at::Tensor& mat2) {
  CheckOperands("mm", {&self, &mat2});
  TORCH_CHECK(self.dim() == 2 && mat2.dim() == 2, "mm: expected 2-D tensors, got ", self.dim(),
              "-D and ", mat2.dim(), "-D");
  at::Tensor out = EmptyMemoryFormat({self.size(0), mat2.size(1)}, self.scalar_type(), std::nullopt,
                                     std::nullopt, std::nullopt, std::nullopt);
  at::Tensor out_cpu = AsCpu(out);
  at::mm_out(out_cpu, AsCpu(self), AsCpu(mat2));
  return out;
}

at::Tensor Addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                 const at::Scalar& beta, const at::Scalar& alpha) {
  CheckOperands("addmm", {&self, &mat1, &mat2});
  TORCH_CHECK(mat1.dim() == 2 && mat2.dim() == 2, "addmm: expected 2-D matrices, got ", mat1.dim(),
              "-D and ", mat2.dim(), "-D");
  at::Tensor out = EmptyMemoryFormat({mat1.size(0), mat2.size(1)}, mat1.scalar_type(), std::nullopt,
                                     std::nullopt, std::nullopt, std::nullopt);
  at::Tensor out_cpu = AsCpu(out);
  at::addmm_out(out_cpu, AsCpu(self), AsCpu(mat1), AsCpu(mat2), beta, alpha);
  return out;
}

}  // namespace

// The whitelist. Keep doc/test-device.md in step with it.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // memory
  m.impl("empty.memory_format", EmptyMemoryFormat);
  m.impl("empty_strided", EmptyStrided);
  m.impl("resize_", Resize);
  m.impl("set_.source_Storage_storage_offset", SetStorageOffset);
  m.impl("set_.source_Storage", SetStorage);
  m.impl("set_.source_Tensor", SetTensor);
  m.impl("set_", SetEmpty);
  // copies
  m.impl("copy_", Copy);
  m.impl("_copy_from", CopyFrom);
  m.impl("_copy_from_and_resize", CopyFromAndResize);
  m.impl("_local_scalar_dense", LocalScalarDense);
  // views
  m.impl("view", View);
  m.impl("as_strided", AsStrided);
  m.impl("_reshape_alias", ReshapeAlias);
  m.impl("unfold", Unfold);
  m.impl("view_as_real", ViewAsReal);
  m.impl("view_as_complex", ViewAsComplex);
  // compute
  m.impl("fill_.Scalar", Fill);
  m.impl("zero_", Zero);
  m.impl("add.Tensor", Add);
  m.impl("mul.Tensor", Mul);
  m.impl("mm", Mm);
  m.impl("addmm", Addmm);
  m.impl("relu", Relu);
}

}  // namespace compatlab_testdevice
