//===- stack_tensors.h - Tensors tier 2 keeps on its stack ------*- C++ -*-===//
//
// Private to jit/: which storages and tensors of one bytecode function
// tier 2 keeps on its native stack instead of allocating them. A TVM
// driver allocates a storage (alloc_storage), views of it (alloc_tensor)
// and hands the views to kernels; where none of them is seen by anything
// but kernels that touch only their arguments' memory
// (CalleeBinding::StackTensorArgs), the storage is a 64-byte aligned
// buffer of the frame, each view a DLTensor beside it, and the kernel gets
// the DLTensor's address (kVMJITDLTensorPtr): nothing is allocated,
// counted or released. docs/jit.md#tensors-on-the-stack.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_STACK_TENSORS_H
#define VMJIT_JIT_STACK_TENSORS_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/jit/callee_binding.h"
#include "vmjit/runtime/c_api.h"

#include <cstdint>
#include <string>
#include <vector>

namespace vmjit::jit {

/// The storages and tensors of one function that live on the stack.
struct StackTensorPlan {
  /// A storage: `Bytes` bytes, made by the alloc_storage at `DefPC`.
  struct Storage {
    int64_t Reg = -1;
    int64_t DefPC = -1;
    int64_t Bytes = 0;
  };
  /// A view of storage `Storage` (an index into Storages) at byte
  /// `Offset`, made by the alloc_tensor at `DefPC`.
  struct Tensor {
    int64_t Reg = -1;
    int64_t DefPC = -1;
    size_t Storage = 0;
    int64_t Offset = 0;
    std::vector<int64_t> Shape;
    DLDataType DType{};
  };
  std::vector<Storage> Storages;
  std::vector<Tensor> Tensors;
  /// Per register: the index of its tensor in Tensors, or -1.
  std::vector<int64_t> TensorOfReg;
  /// Per register: the index of its storage in Storages, or -1.
  std::vector<int64_t> StorageOfReg;

  bool empty() const { return Storages.empty(); }
  bool isStackTensor(int64_t R) const {
    return R >= 0 && static_cast<size_t>(R) < TensorOfReg.size() &&
           TensorOfReg[static_cast<size_t>(R)] >= 0;
  }
  bool isStackStorage(int64_t R) const {
    return R >= 0 && static_cast<size_t>(R) < StorageOfReg.size() &&
           StorageOfReg[static_cast<size_t>(R)] >= 0;
  }
  /// The plan as text (part of the code's cache key).
  std::string describe() const;
};

/// What limits the plan.
struct StackTensorLimits {
  /// Storage the code allocates on a device index below this (or -1, the
  /// host) is on the host CPU (BoundCallees::HostDevices).
  int64_t HostDevices = 0;
  /// The most bytes of one storage, and of all of a frame's.
  int64_t MaxStorageBytes = 4096;
  int64_t MaxFrameBytes = 16384;
};

/// The plan for bytecode function `Func` whose calls are bound `Callees`
/// with builtins inlined. A register joins when:
/// - a storage: written only by one alloc_storage of constant arguments
///   that cannot fail (the VM register, a size [n] within the limits, a
///   host device, a dtype constant, no scope or "global") and by
///   null_value; read only by the alloc_tensor of tensors that join;
/// - a tensor: written only by one alloc_tensor of a joining storage with
///   constant arguments that cannot fail (offset, shape, dtype as
///   alloc_tensor checks them) and by null_value; read only as an
///   argument of a call whose binding's StackTensorArgs has that position;
/// - either: every read is reached by that alloc only (never by None or by
///   another value), and it is not live where native code may be entered
///   or left for the interpreter with its registers: a loop header
///   (`LoopHeads`: on-stack replacement) or after a call whose result the
///   code guards (`GuardedCalls`).
StackTensorPlan planStackTensors(const vm::Executable &Exe, int64_t Func,
                                 const std::vector<CalleeBinding> &Callees,
                                 const std::vector<int64_t> &LoopHeads,
                                 const std::vector<int64_t> &GuardedCalls,
                                 const StackTensorLimits &Limits);

/// The loop headers of bytecode function `Func`: the targets of its
/// backward jumps (where on-stack replacement enters).
std::vector<int64_t> loopHeads(const vm::Executable &Exe, int64_t Func);

/// Whether the plan for `Func` (with its loop headers and no guarded call)
/// keeps anything on the stack: then tier 2 saves allocations that tier 1
/// makes, whatever the function's size.
bool keepsTensorsOnStack(const vm::Executable &Exe, int64_t Func,
                         const std::vector<CalleeBinding> &Callees,
                         int64_t HostDevices);

} // namespace vmjit::jit

#endif // VMJIT_JIT_STACK_TENSORS_H
