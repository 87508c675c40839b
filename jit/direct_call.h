//===- direct_call.h - Direct calls between tier-2 functions ----*- C++ -*-===//
//
// Private to jit/. A tier-2 function calling a bytecode function of its
// own unit calls that function's direct entry instead of its pool entry
// when the pool still holds that very code (docs/jit.md#direct-calls):
//
//   i32 @"vmjit_f<G>.<name>.direct"(ptr %root, ptr %consts, ptr %funcs,
//                                    ptr %args, ptr %result, i64 %depth)
//
// %root is a context whose fields shared by every frame of a native call
// chain (VM, control, call counts, stack limit, call state) the callee
// reads; %depth is the caller's call depth. The entry does what the pool
// entry and VirtualMachine::enterFrame do, inline: the depth,
// machine-stack, observer and register-limit checks (any of them failing
// returns 1: the caller takes the pool instead, which raises or
// interprets exactly as before), the step, the callee's registers on the
// machine stack (counted as register-stack registers), the call count, a
// context for the callee; then the callee's code, and on an error the
// callee's frame line (vmjit_jit_callee_frame). 0, or -1 with the error
// raised.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_DIRECT_CALL_H
#define VMJIT_JIT_DIRECT_CALL_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/jit/callee_binding.h"
#include "vmjit/vm/native_code.h"

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

namespace llvm {
class Error;
class Function;
class FunctionType;
class LLVMContext;
class Module;
} // namespace llvm

namespace vmjit::jit {

/// The direct entry's symbol for the function of symbol `Symbol`.
std::string directEntrySymbol(const std::string &Symbol);

/// The direct entry of the function of symbol `Symbol` in `M`, declared
/// (internal) if it is not yet.
llvm::Function *directEntryDecl(llvm::Module &M, const std::string &Symbol);

/// Whether calls of bytecode function `G` may go to its direct entry: it
/// makes no call through an allocation site (its context's sites stay
/// null on a direct call).
bool directCallable(const vm::Executable &Exe, int64_t G,
                    const std::vector<CalleeBinding> &Callees);

/// Defines G's direct entry in `M`, where `Symbol` is G's lowered function
/// (defined already); `ParamsOnly` (entersWithParamsOnly): it sets only
/// the parameters of the register file, not the other registers to None.
/// `Exported`: with external linkage, for the tier manager to look up.
/// `WithCode`: the entry holds a copy of the function's code (inlined,
/// entered at pc 0) rather than calling it.
/// An error where the copy cannot be made.
llvm::Error emitDirectEntry(llvm::Module &M, const vm::Executable &Exe,
                            int64_t G, const std::string &Symbol,
                            bool ParamsOnly, bool Exported, bool WithCode);

/// The absolute symbol bound to the address of G's code slot (the tier
/// manager's), which a direct call compares the pool entry's slot with.
std::string codeSlotSymbol(int64_t G);

/// The absolute symbol bound to vm::nativeFunctionEntry().
inline constexpr const char *kNativeEntrySymbol =
    "__vmjit_native_function_entry";

/// A direct entry as native code sees it.
using DirectEntryFn = int (*)(const vm::NativeContext *Root, const Any *Consts,
                              std::atomic<FunctionObj *> *Funcs,
                              const VMJITAny *Args, VMJITAny *Result,
                              int64_t CallerDepth);

/// The LLVM type of a direct entry (DirectEntryFn).
llvm::FunctionType *directEntryType(llvm::LLVMContext &C);

/// Marks a call of a direct entry, whose first argument is the caller's
/// context as the callee's root: a copy of code in a direct entry passes
/// its own root there instead (only the shared fields are read).
inline constexpr const char *kDirectCallMetadata = "vmjit.direct.call";

/// Calls between units: the tier manager keeps a cell per function that
/// points to the pair of its current tier-2 code and that code's direct
/// entry, a new pair at every install. A caller in another unit calls
/// Entry only while the function's code slot holds Code
/// (docs/jit.md#direct-calls).
struct DirectTarget {
  vm::NativeFn Code;
  DirectEntryFn Entry;
};
static_assert(offsetof(DirectTarget, Code) == 0 &&
              offsetof(DirectTarget, Entry) == 8);

/// The absolute symbol bound to the address of G's cell
/// (std::atomic<const DirectTarget *>).
std::string directCellSymbol(int64_t G);

/// Per function of `Exe`: whether its tier-2 code exports a direct entry,
/// for callers in other units: a bytecode function that directCallable
/// admits and that some instruction calls or names (make_closure).
std::vector<bool>
exportedDirectEntries(const vm::Executable &Exe,
                      const std::vector<CalleeBinding> &Callees);

/// Marks the stores that leave a frame's registers None as a function
/// returns (their values released before). The copy of a function's code
/// in its direct entry drops them: that register file is the entry's own
/// stack memory, which no one reads after the return.
inline constexpr const char *kFrameClearMetadata = "vmjit.frame.clear";

/// The absolute symbol bound to vm::closureEntry() (closure_call.h).
inline constexpr const char *kClosureEntrySymbol = "__vmjit_closure_entry";

} // namespace vmjit::jit

#endif // VMJIT_JIT_DIRECT_CALL_H
