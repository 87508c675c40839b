//===- builtins_internal.h - What the vm.builtin.* files share --*- C++ -*-===//
//
// Private to lib/builtins. The builtins live in one file per family
// (builtins_values.cpp, builtins_closure.cpp, builtins_shape.cpp,
// builtins_check.cpp, builtins_storage.cpp, builtins_tensor.cpp, and TVM's
// other CPU functions: builtins_kv_cache.cpp, builtins_paged_kv_cache.cpp,
// builtins_sampling.cpp, builtins_sort.cpp, builtins_view.cpp,
// builtins_debug.cpp); each ends with its register*Builtins function, one
// GlobalDef line per builtin. This header holds what they share: the %vm
// parameter type, the argument helpers of the packed (variadic) builtins with
// the same messages as typed ones, the shape heap, and the error-context text.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_LIB_BUILTINS_BUILTINS_INTERNAL_H
#define VMJIT_LIB_BUILTINS_BUILTINS_INTERNAL_H

#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/function.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/tensor.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace vmjit::vm {
class VirtualMachine;

namespace builtin {

/// The `%vm` argument: the calling VM, passed as an opaque pointer. As a
/// typed parameter: "argument 1 expected the VM (%vm) but got int".
struct VMContext {
  VirtualMachine *VM;
  VirtualMachine &operator*() const noexcept { return *VM; }
  VirtualMachine *operator->() const noexcept { return VM; }
};

/// TypeTraits for an ObjectRef R whose object type is registered at run
/// time (R::ContainerType::typeIndex(), registerDynamicType): an object of
/// exactly that type, as ObjectRefTypeTraits checks a fixed index.
template <typename R>
struct DynamicObjectRefTypeTraits : ObjectRefTypeTraits<R> {
  static std::optional<R> fromAny(const VMJITAny *V) {
    if (V->type_index == R::ContainerType::typeIndex())
      return R(ObjectPtr<Object>::share(Object::fromRaw(V->v_obj)));
    return std::nullopt;
  }
};

/// Throws `Kind` with "FN: MSG".
[[noreturn]] void fail(const char *Fn, std::string_view Msg,
                       const char *Kind = "ValueError");

/// TypeError unless Min <= A.size() <= Max (INT32_MAX: no upper bound),
/// worded like the typed functions' arity errors.
[[noreturn]] void throwArgCountError(const char *Fn, const PackedArgs &A,
                                     int32_t Min, int32_t Max);
inline void needArgs(const char *Fn, const PackedArgs &A, int32_t Min,
                     int32_t Max) {
  if (A.size() >= Min && A.size() <= Max) [[likely]]
    return;
  throwArgCountError(Fn, A, Min, Max);
}

/// Argument I as T, or the typed functions' TypeError ("argument 2
/// expected Shape but got int").
/// Inlined: a builtin's success path makes no call to read an argument.
template <typename T>
[[gnu::always_inline]] inline T arg(const char *Fn, const PackedArgs &A,
                                    int32_t I) {
  if (auto V = A[I].as<T>())
    return std::move(*V);
  detail::throwArgTypeError(Fn, I + 1, TypeTraitsOf<T>::typeName(), A[I]);
}

/// The error-context text of a check (TVM's err_ctx, str or None), borrowed
/// from the call's arguments. Its prefix ("TEXT: " before a message, nothing
/// for None or "") is built only when a check fails.
struct ErrorContext {
  std::string_view Text;
  ErrorContext(std::string_view T) : Text(T) {}
  ErrorContext(std::optional<std::string_view> T) : Text(T.value_or("")) {}
  std::string prefix() const;
};

/// The int64 slots of a shape heap (vm.builtin.alloc_shape_heap). The
/// heap may be None, as in TVM, when only immediate codes are used; a slot
/// is then an error, not a null dereference.
struct ShapeHeap {
  int64_t *Data = nullptr;
  int64_t Size = 0;
  /// heap[Index]: IndexError when out of range, ValueError when the heap
  /// is None.
  int64_t &slot(const char *Fn, int64_t Index) const;
};
/// `V` as a shape heap: None (no slots), or a rank-1 int64 compact CPU
/// tensor; nullopt for anything else. No error is raised (the allocation
/// call sites read heaps on their hit path).
std::optional<ShapeHeap> asShapeHeap(const AnyView &V) noexcept;
/// Argument I as a shape heap (asShapeHeap), or the builtin's TypeError.
ShapeHeap heapArg(const char *Fn, const AnyView &V, int32_t I);

/// The dimensions of a Tensor, a DLTensor pointer or a Shape (what TVM's
/// match_shape takes); nullopt for anything else. The span stays valid
/// while `V` does.
std::optional<std::span<const int64_t>> dimsOf(const AnyView &V);

/// ValueError unless `T` is on the CPU (its memory is read or written).
void needCpu(const char *Fn, const Tensor &T, std::string_view What);

// One per file, called once by registerVMBuiltins.
void registerValueBuiltins(GlobalDef &D);   // builtins_values.cpp
void registerClosureBuiltins(GlobalDef &D); // builtins_closure.cpp
void registerShapeBuiltins(GlobalDef &D);   // builtins_shape.cpp
void registerCheckBuiltins(GlobalDef &D);   // builtins_check.cpp
void registerStorageBuiltins(GlobalDef &D); // builtins_storage.cpp
void registerTensorBuiltins(GlobalDef &D);  // builtins_tensor.cpp
void registerKVCacheBuiltins(GlobalDef &D); // builtins_kv_cache.cpp
void registerPagedKVCacheBuiltins(GlobalDef &D); // builtins_paged_kv_cache.cpp
void registerSamplerBuiltins(GlobalDef &D); // builtins_sampling.cpp
void registerSortBuiltins(GlobalDef &D);    // builtins_sort.cpp
void registerViewBuiltins(GlobalDef &D);    // builtins_view.cpp
void registerDebugBuiltins(GlobalDef &D);   // builtins_debug.cpp

/// TVM's variants (setTvmAbiVariant) of the check builtins whose results
/// differ from TVM's, for the standard functions in `Standard`
/// (builtins_check.cpp; called once with the global registration).
void registerCheckTvmAbiVariants(const Registry &Standard);

} // namespace builtin
} // namespace vmjit::vm

namespace vmjit {
template <> struct TypeTraits<vm::builtin::VMContext> {
  static constexpr bool enabled = true;
  static std::string_view typeName() noexcept { return "the VM (%vm)"; }
  static std::optional<vm::builtin::VMContext>
  fromAny(const VMJITAny *V) noexcept {
    if (V->type_index == kVMJITOpaquePtr && V->v_ptr)
      return vm::builtin::VMContext{
          static_cast<vm::VirtualMachine *>(V->v_ptr)};
    return std::nullopt;
  }
};
} // namespace vmjit

#endif // VMJIT_LIB_BUILTINS_BUILTINS_INTERNAL_H
