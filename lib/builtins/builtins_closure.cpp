//===- builtins_closure.cpp - Closures and calls through values -----------===//
//
// vm.builtin.make_closure, invoke_closure and call_tir_dyn, and the closure
// object (vm::makeClosure).
//
//===----------------------------------------------------------------------===//

#include "builtins_internal.h"
#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/object_pool.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/vm/native_code.h"

#include <fmt/format.h>
#include <vector>

namespace vmjit::vm {
namespace {

/// See makeClosure.
class ClosureObj : public FunctionObj {
public:
  ClosureObj(Function Target, Array Captured)
      : FunctionObj(recycledObjectDeleter<ClosureObj>, &entry, Target.name(),
                    /*FreeEntry=*/false),
        Target(std::move(Target)), Captured(std::move(Captured)) {}

private:
  static int entry(void *Self, const VMJITAny *Args, int32_t NumArgs,
                   VMJITAny *Result) noexcept {
    auto *C = static_cast<ClosureObj *>(Self);
    size_t Total = static_cast<size_t>(NumArgs) + C->Captured.size();
    // The views as raw words, left uninitialized: an array of AnyView
    // would first be filled with None, 16 stores a call (a quarter of the
    // time of a closure call of two captured values, measured).
    constexpr size_t kInline = 16;
    VMJITAny Inline[kInline];
    std::vector<VMJITAny> Heap;
    VMJITAny *All = Inline;
    if (Total > kInline) {
      try {
        Heap.resize(Total);
      } catch (...) {
        return detail::raiseCurrentException();
      }
      All = Heap.data();
    }
    for (int32_t I = 0; I < NumArgs; ++I)
      detail::copyWords(All[I], Args[I]);
    for (size_t I = 0; I < C->Captured.size(); ++I)
      detail::copyWords(All[static_cast<size_t>(NumArgs) + I],
                        C->Captured[I].raw());
    int Rc = C->Target.get()->safeCall(reinterpret_cast<const AnyView *>(All),
                                       static_cast<int32_t>(Total),
                                       reinterpret_cast<Any *>(Result));
    if (Rc != 0 && !C->Captured.empty())
      C->explainArity(NumArgs, Total);
    return Rc;
  }

  /// The target's own "expected N arguments but got M" counts the captured
  /// values too: a frame line says how M came about. The message itself
  /// stays the target's.
  void explainArity(int32_t NumArgs, size_t Total) noexcept {
    Error E = takeRaisedError();
    try {
      const std::string &M = E.message();
      if (E.kind() == "TypeError" &&
          M.starts_with(Target.name() + ": expected ") &&
          M.ends_with(fmt::format(" but got {}", Total)))
        E.addFrame(fmt::format("in a closure of '{}' called with {} "
                               "argument{}, which adds {} captured value{}",
                               Target.name(), NumArgs, NumArgs == 1 ? "" : "s",
                               Captured.size(),
                               Captured.size() == 1 ? "" : "s"));
    } catch (...) {
      // Out of memory: the error as it was.
    }
    setRaisedError(E);
  }
  friend struct ClosureObjLayout;
  friend VMJITSafeCallType vm::closureEntry() noexcept;
  Function Target;
  Array Captured;
};

// Tier 2 reads the target and the captured values (native_code.h).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
struct ClosureObjLayout {
  static constexpr size_t TargetOffset = offsetof(ClosureObj, Target);
  static constexpr size_t CapturedOffset = offsetof(ClosureObj, Captured);
};
#pragma GCC diagnostic pop
static_assert(ClosureObjLayout::TargetOffset == kClosureTargetOffset);
static_assert(ClosureObjLayout::CapturedOffset == kClosureCapturedOffset);
static_assert(sizeof(Function) == sizeof(void *) &&
              sizeof(Array) == sizeof(void *));

} // namespace

VMJITSafeCallType closureEntry() noexcept { return &ClosureObj::entry; }

Function makeClosure(Function Target, std::vector<Any> Captured) {
  return Function(makeRecycledObject<ClosureObj>(std::move(Target),
                                                 Array(std::move(Captured))));
}

namespace builtin {
namespace {

/// make_closure(@F, captured...): calling the closure calls F with the
/// call's own arguments followed by the captured values. F may be any
/// function value (TVM requires a VM function or closure).
void makeClosureBuiltin(PackedArgs A, Any *Rv) {
  const char *Fn = "vm.builtin.make_closure";
  needArgs(Fn, A, 1, INT32_MAX);
  Function Target = arg<Function>(Fn, A, 0);
  // The captured values are a small array (no allocation for a few).
  Array Captured(std::span<const AnyView>(A.data() + 1,
                                          static_cast<size_t>(A.size() - 1)));
  *Rv = Function(
      makeRecycledObject<ClosureObj>(std::move(Target), std::move(Captured)));
}

/// invoke_closure(%vm, f, args...): f(args...); f is a closure, a VM
/// function or a packed function, as in TVM.
void invokeClosure(PackedArgs A, Any *Rv) {
  const char *Fn = "vm.builtin.invoke_closure";
  needArgs(Fn, A, 2, INT32_MAX);
  arg<VMContext>(Fn, A, 0);
  if (A[1].typeIndex() != kVMJITFunction)
    fail(Fn,
         fmt::format("argument 2 expected a closure or function but got {}",
                     A[1].typeName()),
         "TypeError");
  auto *Callee =
      static_cast<FunctionObj *>(Object::fromRaw(A[1].raw().v_obj));
  if (Callee->safeCall(A.data() + 2, A.size() - 2, Rv) != 0)
    throwRaisedError();
}

/// call_tir_dyn(f, args..., shape): f(args..., shape[0], shape[1], ...),
/// TVM's call of a kernel with symbolic dimensions unpacked as ints.
void callTirDyn(PackedArgs A, Any *Rv) {
  const char *Fn = "vm.builtin.call_tir_dyn";
  needArgs(Fn, A, 2, INT32_MAX);
  Function Callee = arg<Function>(Fn, A, 0);
  Shape Unpack = arg<Shape>(Fn, A, A.size() - 1);
  const size_t NumArgs = static_cast<size_t>(A.size() - 2);
  const size_t Total = NumArgs + Unpack.size();
  if (Total > static_cast<size_t>(INT32_MAX))
    fail(Fn, fmt::format("{} arguments are too many", Total));
  std::vector<AnyView> Args(Total);
  for (size_t I = 0; I < NumArgs; ++I)
    Args[I] = A[static_cast<int32_t>(I) + 1];
  for (size_t I = 0; I < Unpack.size(); ++I)
    Args[NumArgs + I] = AnyView(Unpack[I]);
  if (Callee.get()->safeCall(Args.data(), static_cast<int32_t>(Total), Rv) !=
      0)
    throwRaisedError();
}

} // namespace

void registerClosureBuiltins(GlobalDef &D) {
  D.defPacked("vm.builtin.make_closure", makeClosureBuiltin)
      .defPacked("vm.builtin.invoke_closure", invokeClosure)
      .defPacked("vm.builtin.call_tir_dyn", callTirDyn);
}

} // namespace builtin
} // namespace vmjit::vm
