//===- vmjit/jit/lowering.h - Bytecode to LLVM IR -----------------*- C++ -*-===//
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
//   - Inline: vm.builtin.copy, read_if_cond, tuple_getitem and the scalar.*
//     arithmetic and comparisons become IR with a type guard that falls
//     back to the call (which raises the usual errors).
// The JIT binds packed callees Direct; ahead-of-time code (jit/aot.h),
// which cannot know their addresses, binds every callee Pool.
// If/Goto become branches; the entry block switches on %entry_pc to the
// function start or a loop header (on-stack replacement).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_LOWERING_H
#define VMJIT_JIT_LOWERING_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/kernels/scalar_ops.h"

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

/// Builtins the lowering can inline.
enum class InlineBuiltin {
  None,
  Copy,
  ReadIfCond,
  TupleGetItem,
  /// vm.builtin.null_value(): the destination set to None (its old value
  /// released), no call.
  NullValue,
  ScalarAdd,
  ScalarSub,
  ScalarMul,
  ScalarDiv,
  ScalarMod,
  ScalarMin,
  ScalarMax,
  ScalarLt,
  ScalarLe,
  ScalarGt,
  ScalarGe,
  ScalarEq,
  ScalarNe,
  ScalarNeg,
  ScalarNot,
  /// vm.builtin.check_tensor_info(x, ndim, [dtype or None,] text): a guard
  /// (a tensor, of that rank and dtype; the text a str or None) and the
  /// result x; anything else calls the builtin, which raises. Appended
  /// last: the numbers of the rows above are in object-cache keys.
  CheckTensorInfo,
  /// vm.builtin.match_shape(x, heap, n, (code, imm) x n, text) whose codes
  /// and values are immediates, every code 0 (assert) or 2 (no check): a
  /// guard (x a tensor of rank n with those dimensions, the heap None, the
  /// text a str) and None; anything else calls the builtin.
  MatchShape,
  /// vm.builtin.alloc_tensor / alloc_storage: the call made through the
  /// VM's cache of the call site (vmjit_jit_alloc_tensor,
  /// vmjit_jit_alloc_storage; vm/alloc_sites.h), which returns the site's
  /// last object when no one else holds it; an alloc_tensor whose
  /// arguments allocTensorHitInlinable accepts checks the site inline
  /// first (vm::reusedConstantView).
  AllocTensor,
  AllocStorage,
  /// vm.builtin.make_shape: the call made through the VM's cache of the
  /// call site (vmjit_jit_make_shape), which rewrites and returns the
  /// site's last shape when no one else holds it.
  MakeShape,
};

// The scalar.* rows of InlineBuiltin follow the table's order
// (include/vmjit/kernels/scalar_ops.h): one name, arity and kind per
// operation, for the kernels and both JIT tiers.
static_assert(static_cast<int>(InlineBuiltin::ScalarNot) -
                      static_cast<int>(InlineBuiltin::ScalarAdd) + 1 ==
                  kernels::scalar::kNumOps &&
              static_cast<int>(kernels::scalar::Op::Not) ==
                  kernels::scalar::kNumOps - 1);

/// The scalar operation an inlined builtin is, if it is one.
inline std::optional<kernels::scalar::Op> scalarOpOf(InlineBuiltin W) {
  int K = static_cast<int>(W) - static_cast<int>(InlineBuiltin::ScalarAdd);
  if (K < 0 || K >= kernels::scalar::kNumOps)
    return std::nullopt;
  return static_cast<kernels::scalar::Op>(K);
}

/// The builtin a standard function name stands for, if it can be inlined.
InlineBuiltin inlineBuiltinFor(std::string_view Name);

/// Whether a call of the standard alloc_tensor has the form both JIT tiers
/// check inline against its call site (vm::reusedConstantView): a result
/// register, the storage in a register, the byte offset an immediate and
/// the shape, dtype and scope constants, so that every run of it passes
/// the arguments the site's view was made from.
bool allocTensorHitInlinable(vm::InstrView I);

/// The native helper (vm/native_helpers.h) through which both JIT tiers
/// call a builtin with call-site caches (vm/alloc_sites.h): alloc_tensor,
/// alloc_storage, make_shape; null for the others.
const char *siteHelper(InlineBuiltin What);

/// How calls of one function-table entry are made.
struct CalleeBinding {
  enum Kind { Pool, Direct } How = Pool;
  /// Direct: the safe-call entry and the `self` it is called with.
  uint64_t Entry = 0;
  uint64_t Self = 0;
  /// Also inline this builtin, falling back to the call (the caller
  /// checks that the callee is the standard function of that name: for
  /// Pool, every VM the code runs in must resolve it so).
  InlineBuiltin Inline = InlineBuiltin::None;
  /// Direct: the callee is the registry's standard function of its name,
  /// not one registered in its place (what Inline and tier 2's direct
  /// closure calls, jit/closure_call.h, rely on).
  bool Standard = false;
  /// The code adds one to the VM's count of this function
  /// (NativeContext::CallCounts) before each call, inlined or not
  /// (vm::VirtualMachine::countsAtCall).
  bool CountAtCall = false;
};

/// Whether code bound with `B` runs callee `Name` inline without counting
/// its calls (a builtin vm::inlinedWithoutCount names, bound inline): the
/// one rule behind CountAtCall and TierController::countsEveryCall.
bool inlinesUncounted(const CalleeBinding &B, std::string_view Name);

/// What tier 2 assumes of one function (docs/jit.md#speculation-and-
/// deoptimization). Kinds are vm::kind bits; a guard is emitted for an
/// assumption of one scalar kind (None, Int, Bool, Float), 0 assumes
/// nothing. A failing guard deoptimizes: the registers are written back to
/// the frame and the call of the deoptimization helper
/// (runtime_helpers.h: kDeoptHelper, with the manager kDeoptManager) goes
/// on in tier 1 at that instruction.
struct FunctionSpeculation {
  /// Per parameter: its kind on entry (guarded at pc 0).
  std::vector<uint8_t> Params;
  /// Per instruction: for a call that is not inlined, the kind of its
  /// result (guarded after the call; tier 1 goes on at the next pc).
  std::vector<uint8_t> Results;
  /// Per parameter (empty: none): 0, or the rank and dtype
  /// (vm::feedback::tensorWord) of the tensor it holds on entry, guarded
  /// at pc 0. Tier 2 then drops the checks of check_tensor_info and
  /// match_shape that the guard answers (docs/jit.md#tensor-feedback).
  std::vector<uint64_t> ParamTensors;
  /// Per instruction (empty: none): 0, or for a call that is not inlined
  /// the rank and dtype of the tensor it returns, guarded after the call.
  std::vector<uint64_t> ResultTensors;
  /// Loop headers whose on-stack-replacement entry guards nothing (their
  /// guards failed too often); every other loop header guards the
  /// registers whose kind the inference knows there.
  std::vector<int64_t> GenericEntries;
};

struct LoweringOptions {
  /// Inline builtins (off: every call is a call).
  bool InlineBuiltins = true;
  /// Keep registers in SSA values while the function runs (loaded on
  /// entry, released on exit) when instructions x registers is at most
  /// PromoteLimit; otherwise every access goes to the register file.
  bool PromoteRegisters = true;
  int64_t PromoteLimit = 256;
  /// Checked every 256 instructions when set: once it is, lowering stops
  /// by throwing std::runtime_error(kCompileAbandoned) (engine.h).
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
  /// A description of everything the code depends on besides the words
  /// of the functions (callee names and bindings, embedded constants):
  /// part of the object-cache key.
  std::string KeyText;
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
};

/// Lowers bytecode functions `Funcs` of `Exe` into one module. `Callees`
/// has one entry per function-table entry.
LoweredModule lowerFunctions(const vm::Executable &Exe,
                             std::span<const int64_t> Funcs,
                             const std::vector<CalleeBinding> &Callees,
                             const LoweringOptions &Opts = {});

/// The textual IR of a module.
std::string moduleText(const llvm::Module &M);

} // namespace vmjit::jit

#endif // VMJIT_JIT_LOWERING_H
