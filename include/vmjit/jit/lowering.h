//===- vmjit/jit/lowering.h - Bytecode to LLVM IR ---------------*- C++ -*-===//
//
// Lowers verified bytecode functions to LLVM IR functions with the native
// signature of vm/native_code.h, working on the interpreter's own register
// file:
//
//   i32 @"vmjit_f<K>.<name>"(ptr %ctx, ptr %regs, ptr %consts, ptr %funcs,
//                             i64 %entry_pc)
//
// Each Call fills one argument stack (an alloca of 16-byte views shared by
// every call of the function) from registers (borrowed copies, no
// reference counting), immediates and constants; calls the callee; checks
// the return code (an unlikely branch to an error exit that records the
// pc); and moves the owned result into the destination register, releasing
// the old value only if it holds an object. Callees are bound as:
//   - Pool: bytecode functions, through the VM's function pool (so later
//     swaps are seen): load the entry, call its safe-call entry;
//   - Direct ("cpacked"): packed functions whose entry is known when the
//     code is made, called directly through external symbols bound to the
//     entry and its object at link time;
//   - Inline: the special builtins (vm/special_builtins.h: copy,
//     read_if_cond, tuple_getitem, the scalar.* arithmetic and comparisons,
//     the tensor checks and the allocation sites) become IR with a guard
//     that falls back to the call (which raises the usual errors).
// (jit/callee_binding.h: bindCallees.)
// The JIT binds packed callees Direct; ahead-of-time code (jit/aot.h),
// which cannot know their addresses, binds every callee Pool.
// If/Goto become branches; the entry block switches on %entry_pc to the
// function start or a loop header (on-stack replacement).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_LOWERING_H
#define VMJIT_JIT_LOWERING_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/jit/callee_binding.h"
#include "vmjit/jit/code_key.h"
#include "vmjit/jit/speculation.h"

#include "llvm/Support/Error.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace vmjit::jit {

struct LoweringOptions {
  /// Inline builtins (off: every call is a call).
  bool InlineBuiltins = true;
  /// Keep registers in SSA values while the function runs (loaded on
  /// entry, released on exit) when instructions x registers is at most
  /// PromoteLimit; otherwise every access goes to the register file.
  bool PromoteRegisters = true;
  int64_t PromoteLimit = 256;
  /// Checked every 256 instructions when set: once it is, lowering stops
  /// with a CompileAbandoned error (engine.h).
  const std::atomic<bool> *Cancel = nullptr;
  /// Functions lowered with speculation (promoted ones only: a flat
  /// function ignores its entry).
  std::map<int64_t, FunctionSpeculation> Speculate;
  /// Calls between functions of the unit go to the callee's direct entry
  /// while the pool holds the callee's code from this unit, calls of
  /// functions of other units to the direct entry their cell names while
  /// the pool holds the code it goes with (docs/jit.md#direct-calls); the
  /// module then needs the symbols LoweredModule::DirectCallees and
  /// CellCallees name bound, and exports LoweredModule::DirectEntries.
  bool DirectCalls = false;
  /// A register whose last use is as an argument of a call of a bytecode
  /// function goes as an object rvalue reference: the callee takes the
  /// reference (docs/jit.md#owned-arguments). Promoted functions only.
  bool OwnedArguments = false;
  /// The direct entry of a function of at most this many instructions
  /// holds a copy of the function's code (inlined) instead of calling it:
  /// one call, one prologue and the context's round trip through memory
  /// less per direct call, for compiling that code twice.
  int64_t DirectBodyLimit = 32;
  /// Storages and tensors no one but kernels sees live on the native
  /// stack (jit/stack_tensors.h; with InlineBuiltins), allocated on
  /// device indices below HostDevices (BoundCallees::HostDevices) or -1.
  bool StackTensors = true;
  int64_t HostDevices = 0;
};

/// Whether `F` is lowered flat (registers not promoted) under `Opts`.
bool lowersFlat(const vm::FunctionInfo &F, const LoweringOptions &Opts);

/// Whether the tier-2 code of function `Func` reads only the parameters
/// from the register file when a call enters it at pc 0: it is promoted
/// and no loop starts at pc 0, so the other registers are known None there
/// (and a deopt at the entry writes them). Its direct entry leaves them
/// unset.
bool entersWithParamsOnly(const vm::Executable &Exe, int64_t Func,
                          const LoweringOptions &Opts);

/// The result of lowering: the module, the external symbols it needs bound
/// (name -> address) and the symbol of each lowered function.
struct LoweredModule {
  std::unique_ptr<llvm::LLVMContext> Context;
  std::unique_ptr<llvm::Module> Module;
  std::map<std::string, uint64_t> Absolute;
  std::map<int64_t, std::string> Symbols;
  /// Every decision the code depends on besides the words of the
  /// functions (callee names and bindings, embedded constants, what is
  /// inlined and speculated): part of the object-cache key.
  CodeKey Key;
  /// Functions called through their direct entry: each needs the absolute
  /// symbol of its code slot bound (direct_call.h: codeSlotSymbol).
  std::set<int64_t> DirectCallees;
  /// Functions of other units called through their direct-entry cell:
  /// each needs its code slot and its cell bound (direct_call.h:
  /// codeSlotSymbol, directCellSymbol).
  std::set<int64_t> CellCallees;
  /// The direct entries the unit exports, by function, which the tier
  /// manager puts in the functions' cells once the code is installed.
  std::map<int64_t, std::string> DirectEntries;
  /// Per function of the executable: whether its tier-2 code exports a
  /// direct entry (direct_call.h: exportedDirectEntries).
  std::vector<bool> ExportsDirect;
  /// Kernels inlined (jit/kernel_inline.h): their IR (an InlineKernels,
  /// CalleeBinding::InlineKernel) -> the kernels' names; lowerFunctions
  /// links them into Module and binds what they need in Absolute.
  std::map<uint64_t, std::set<std::string>> InlinedKernels;
};

/// Lowers bytecode functions `Funcs` of `Exe` into one module. `Callees`
/// has one entry per function-table entry.
/// Errors: CompileAbandoned (Opts.Cancel), or code that cannot be made
/// (for code inside the JIT library, engine.h: outside it an llvm::Error
/// cannot be told apart or printed).
llvm::Expected<LoweredModule>
lowerFunctions(const vm::Executable &Exe, std::span<const int64_t> Funcs,
               const std::vector<CalleeBinding> &Callees,
               const LoweringOptions &Opts = {});

/// The object-cache key lowering `Funcs` records (LoweredModule::Key),
/// the module made and dropped inside the JIT library (a caller with LLVM
/// of its own must not destroy the library's modules); none when the
/// lowering fails.
std::optional<CodeKey> loweringKey(const vm::Executable &Exe,
                                   std::span<const int64_t> Funcs,
                                   const std::vector<CalleeBinding> &Callees,
                                   const LoweringOptions &Opts = {});

/// The textual IR of a module.
std::string moduleText(const llvm::Module &M);

} // namespace vmjit::jit

#endif // VMJIT_JIT_LOWERING_H
