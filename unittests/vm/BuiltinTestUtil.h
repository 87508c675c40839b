//===- BuiltinTestUtil.h - What the vm.builtin.* tests share -----*- C++ -*-===//
//
// Calling a builtin by name from the global registry, the error a call
// raised, a VM to pass as %vm, and tensors made from values or with a
// byte offset or strides (as a DLPack import can give).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_UNITTESTS_VM_BUILTINTESTUTIL_H
#define VMJIT_UNITTESTS_VM_BUILTINTESTUTIL_H

#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <cstring>
#include <functional>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

namespace vmjit::vm::test {

/// The registered builtin `Name` (vm.builtin.* are registered first).
inline Function builtin(const std::string &Name) {
  registerVMBuiltins();
  auto F = Registry::global().find(Name);
  if (!F)
    throw std::runtime_error("no function named " + Name);
  return *F;
}

/// The Error `F` raises; an Error of kind "NoError" when it raises none.
inline Error errorOf(const std::function<void()> &F) {
  try {
    F();
  } catch (const Error &E) {
    return E;
  }
  return Error("NoError", "no error was raised");
}

/// "Kind: message" of the error `F` raises.
inline std::string errorText(const std::function<void()> &F) {
  Error E = errorOf(F);
  return E.kind() + ": " + E.message();
}

/// A VM over a one-function program, for the builtins that take %vm.
inline std::unique_ptr<VirtualMachine> makeVM(std::string_view Text = R"(
.func main()
  %n = call vm.builtin.null_value()
  ret %n
.end
)") {
  return VirtualMachine::create(assemble(Text, "test.vmasm"));
}

/// The %vm argument: an opaque pointer to the VM.
inline void *vmArg(VirtualMachine &VM) { return static_cast<void *>(&VM); }

/// A compact CPU tensor holding `Values` converted to T.
template <typename T>
Tensor tensorOf(std::vector<int64_t> Shape, std::vector<T> Values,
                DLDataType DType) {
  Tensor X = Tensor::empty(Shape, DType);
  EXPECT_EQ(X.nbytes(), Values.size() * sizeof(T));
  if (!Values.empty())
    std::memcpy(X.data(), Values.data(), Values.size() * sizeof(T));
  return X;
}

/// A tensor imported through DLPack that views `Owner`'s memory with the
/// given byte offset, shape and (optional) strides in elements.
inline Tensor importedView(Tensor Owner, uint64_t ByteOffset,
                           std::vector<int64_t> Shape,
                           std::vector<int64_t> Strides = {}) {
  struct Ctx {
    Tensor Owner;
    std::vector<int64_t> Shape, Strides;
  };
  auto *C = new Ctx{Owner, std::move(Shape), std::move(Strides)};
  auto *M = new DLManagedTensor{};
  M->dl_tensor.data = Owner.data();
  M->dl_tensor.device = Owner.device();
  M->dl_tensor.ndim = static_cast<int32_t>(C->Shape.size());
  M->dl_tensor.dtype = Owner.dtype();
  M->dl_tensor.shape = C->Shape.data();
  M->dl_tensor.strides = C->Strides.empty() ? nullptr : C->Strides.data();
  M->dl_tensor.byte_offset = ByteOffset;
  M->manager_ctx = C;
  M->deleter = [](DLManagedTensor *Self) {
    delete static_cast<Ctx *>(Self->manager_ctx);
    delete Self;
  };
  return Tensor::fromDLPack(M);
}

/// A tensor's elements as T, row-major (compact tensors only).
template <typename T> std::vector<T> valuesOf(const Tensor &X) {
  std::vector<T> Out(static_cast<size_t>(X.numel()));
  if (!Out.empty())
    std::memcpy(Out.data(), X.data(), Out.size() * sizeof(T));
  return Out;
}

/// A shape's dimensions as a vector (for EXPECT_EQ).
inline std::vector<int64_t> dimsOf(const Any &V) {
  Shape S = V.cast<Shape>();
  return {S.begin(), S.end()};
}

} // namespace vmjit::vm::test

#endif // VMJIT_UNITTESTS_VM_BUILTINTESTUTIL_H
