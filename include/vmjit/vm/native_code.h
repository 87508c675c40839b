//===- vmjit/vm/native_code.h - Native code for bytecode functions -*- C++ -*-===//
//
// The contract between the interpreter and the JIT tier. JIT code for a
// bytecode function works on the interpreter's own register file:
//
//   int fn(NativeContext *Ctx, Any *Regs, const Any *Consts,
//          std::atomic<FunctionObj *> *Funcs, int64_t EntryPC);
//
// Regs is the frame's register file (parameters in %0..%k-1), Consts the
// executable's constant pool, Funcs the VM's function pool (loaded at every
// call of a bytecode function, so later swaps are seen), EntryPC the
// instruction to start at: 0 for a call, a loop header for on-stack
// replacement. It returns 0 with the result moved into *Ctx->Result, or -1
// with an error raised and Ctx->ErrorPC set to the failing instruction.
// Either way it leaves the register file all None (it releases every
// value itself), so the frame is popped without another pass over it.
//
// At every backward jump it takes, the code counts a step on
// *Ctx->Control exactly as the interpreter does (decrement Fuel, test the
// interrupt flag) and calls vmjit_jit_step when either says so; entries
// of bytecode functions are counted by the VM's call path in every tier.
//
// A TierController (implemented by the JIT, jit/tier_manager.h) tells the
// interpreter which functions have native code and hears which are hot.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_NATIVE_CODE_H
#define VMJIT_VM_NATIVE_CODE_H

#include "vmjit/runtime/function.h"

#include <atomic>
#include <cstdint>

namespace vmjit::vm {

class VirtualMachine;

struct StepControl;

/// Field offsets are part of the JIT's contract (jit/lowering.cpp).
struct NativeContext {
  VirtualMachine *VM;
  Any *Result;
  int64_t ErrorPC;
  StepControl *Control;
};

using NativeFn = int (*)(NativeContext *Ctx, Any *Regs, const Any *Consts,
                         std::atomic<FunctionObj *> *Funcs, int64_t EntryPC);

/// The TypeError of an `if` whose condition is not an int or a bool: one
/// message for every tier.
Error ifConditionError(const VMJITAny &Cond);

class TierController {
public:
  virtual ~TierController() = default;
  /// Native code for bytecode function `Func`, or null. Lock-free.
  virtual NativeFn nativeCode(int64_t Func) const noexcept = 0;
  /// Calls of a function, or backward jumps taken inside it, before the
  /// interpreter reports it hot. 0 disables tier-up.
  virtual int64_t threshold() const noexcept = 0;
  /// `Func` became hot in `VM`. Must not block: compiling happens
  /// elsewhere; the interpreter keeps running.
  virtual void requestCompile(VirtualMachine &VM, int64_t Func) = 0;
};

} // namespace vmjit::vm

#endif // VMJIT_VM_NATIVE_CODE_H
