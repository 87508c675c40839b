//===- baseline_compiler.h - Tier 1: copy-and-patch ----------------*- C++ -*-===//
//
// Compiles one bytecode function to native code without LLVM: each
// instruction becomes a few stencils (stencils.cpp), copied one after
// another and patched (register offsets, immediates, callee addresses,
// jump targets, pcs) in one pass over the function after one pass that
// sizes it. The code has the native signature of vm/native_code.h and
// works on the interpreter's register file, so a frame can enter it at
// any instruction (a table lookup) and errors name the same pc as the
// interpreter.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_BASELINE_BASELINE_COMPILER_H
#define VMJIT_JIT_BASELINE_BASELINE_COMPILER_H

#include "executable_memory.h"
#include "stencil_abi.h"
#include "vmjit/bytecode/executable.h"
#include "vmjit/jit/callee_binding.h"
#include "vmjit/vm/native_code.h"

#include <memory>
#include <vector>

namespace vmjit::jit::baseline {

/// True when this build has stencils for the host (x86-64).
bool available() noexcept;

struct BaselineOptions {
  /// Count entries and backward jumps toward tier 2 on `Site`, and move a
  /// looping frame into tier 2 once it exists (tiered mode).
  TierUpSite *Site = nullptr;
  /// Inline the int paths of scalar.* builtins, and vm.builtin.null_value
  /// (a register clear), bound for inlining.
  bool InlineBuiltins = true;
  /// Name the code in /tmp/perf-PID.map.
  bool PerfMap = false;
  /// The function's type feedback (TierController::feedback: a slot per
  /// parameter, then per instruction): the entry at pc 0 records the
  /// parameters and every call tier 2 does not inline its result, as the
  /// interpreter does (vm/feedback.h). Null: nothing recorded.
  vm::FeedbackSlot *Feedback = nullptr;
};

/// One function's baseline code; destroying it unmaps the code.
class BaselineCode {
public:
  vm::NativeFn entry() const noexcept { return Entry; }
  /// Bytes of code, and of its hot part: the entry and the instructions'
  /// fast paths (the error exit and the slow paths follow them).
  size_t codeBytes() const noexcept { return CodeBytes; }
  size_t hotBytes() const noexcept { return HotBytes; }

private:
  friend std::unique_ptr<BaselineCode>
  compileBaseline(const vm::Executable &, int64_t,
                  const std::vector<CalleeBinding> &, const BaselineOptions &);
  explicit BaselineCode(size_t Bytes) : Memory(Bytes) {}
  CodeBlock Memory;
  vm::NativeFn Entry = nullptr;
  size_t CodeBytes = 0;
  size_t HotBytes = 0;
};

/// Compiles bytecode function `Func` of `Exe`; `Callees` has one binding
/// per function-table entry (as for tier 2). Throws Error("JITError") when
/// the function cannot be compiled at this tier (no stencils for the host,
/// a call with too many arguments).
std::unique_ptr<BaselineCode>
compileBaseline(const vm::Executable &Exe, int64_t Func,
                const std::vector<CalleeBinding> &Callees,
                const BaselineOptions &Opts);

} // namespace vmjit::jit::baseline

#endif // VMJIT_JIT_BASELINE_BASELINE_COMPILER_H
