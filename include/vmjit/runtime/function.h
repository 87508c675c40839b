//===- vmjit/runtime/function.h - Packed functions ---------------*- C++ -*-===//
//
// A Function (type 68) is an object whose payload starts with its safe-call
// entry: `int safe_call(void* self, const AnyView* args, int32_t n,
// Any* result)`, called with self = the object. It can wrap
//  - a free safe-call entry (a kernel-library export, a C function): the
//    entry ignores self, so JIT code may call it directly ("cpacked");
//  - a C++ callable taking (PackedArgs, Any* result);
//  - a C++ callable with typed parameters, whose arguments are checked and
//    converted ("tensor.add: argument 2 expected Tensor but got int");
//    trailing std::optional<T> parameters may be left out.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_FUNCTION_H
#define VMJIT_RUNTIME_FUNCTION_H

#include "vmjit/runtime/error.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace vmjit {

/// The arguments of a packed call: borrowed views.
class PackedArgs {
public:
  PackedArgs(const AnyView *Args, int32_t Num) noexcept
      : Args(Args), Num(Num) {}
  int32_t size() const noexcept { return Num; }
  const AnyView &operator[](int32_t I) const noexcept { return Args[I]; }
  const AnyView *data() const noexcept { return Args; }

private:
  const AnyView *Args;
  int32_t Num;
};

class FunctionObj : public Object {
public:
  static constexpr int32_t kTypeIndex = kVMJITFunction;

  /// Calls the function; the same contract as a safe call.
  int safeCall(const AnyView *Args, int32_t Num, Any *Result) noexcept {
    return Cell.safe_call(this, reinterpret_cast<const VMJITAny *>(Args), Num,
                          reinterpret_cast<VMJITAny *>(Result));
  }
  VMJITSafeCallType entry() const noexcept { return Cell.safe_call; }
  /// True when the entry ignores `self` and may be called directly.
  bool isFreeEntry() const noexcept { return FreeEntry; }
  const std::string &name() const noexcept { return Name; }

protected:
  FunctionObj(DeleterFn D, VMJITSafeCallType Entry, std::string Name,
              bool FreeEntry)
      : Object(kTypeIndex, D), Name(std::move(Name)), FreeEntry(FreeEntry) {
    Cell.safe_call = Entry;
  }

private:
  friend struct FunctionObjLayout;
  VMJITFunctionCell Cell;
  std::string Name;
  bool FreeEntry;
};

/// Where JIT code of every tier finds a Function's safe-call entry: right
/// after the 24-byte object header, as in the C ABI (VMJITFunctionCell).
inline constexpr size_t kFunctionEntryOffset = sizeof(VMJITObject);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
struct FunctionObjLayout {
  static constexpr size_t EntryOffset = offsetof(FunctionObj, Cell);
};
#pragma GCC diagnostic pop
static_assert(FunctionObjLayout::EntryOffset == kFunctionEntryOffset);

/// A Function wrapping a free safe-call entry, keeping `Keep` (e.g. the
/// kernel library that holds the code) alive.
class SafeCallFunctionObj : public FunctionObj {
public:
  SafeCallFunctionObj(VMJITSafeCallType Entry, std::string Name,
                      std::shared_ptr<void> Keep)
      : FunctionObj(objectDeleter<SafeCallFunctionObj>, Entry,
                    std::move(Name), /*FreeEntry=*/true),
        Keep(std::move(Keep)) {}

private:
  std::shared_ptr<void> Keep;
};

/// A Function wrapping a C++ callable `void(PackedArgs, Any*)`.
template <typename F> class PackedFunctionObj : public FunctionObj {
public:
  PackedFunctionObj(F Callable, std::string Name)
      : FunctionObj(objectDeleter<PackedFunctionObj>, &invoke, std::move(Name),
                    /*FreeEntry=*/false),
        Callable(std::move(Callable)) {}

private:
  static int invoke(void *Self, const VMJITAny *Args, int32_t Num,
                    VMJITAny *Result) noexcept {
    auto *P = static_cast<PackedFunctionObj *>(Self);
    return safeCallGuard([&] {
      P->Callable(PackedArgs(reinterpret_cast<const AnyView *>(Args), Num),
                  reinterpret_cast<Any *>(Result));
    });
  }
  F Callable;
};

namespace detail {
[[noreturn]] VMJIT_DLL void throwArityError(const std::string &Name,
                                            int32_t Expected, int32_t Got);
/// "NAME: expected Min to Max arguments but got Got".
[[noreturn]] VMJIT_DLL void throwArityError(const std::string &Name,
                                            int32_t Min, int32_t Max,
                                            int32_t Got);
[[noreturn]] VMJIT_DLL void throwArgTypeError(const std::string &Name,
                                              int32_t Index,
                                              std::string_view Expected,
                                              const AnyView &Got);

/// The parameter and return types of a callable.
template <typename F> struct Signature : Signature<decltype(&F::operator())> {};
template <typename R, typename... A> struct Signature<R (*)(A...)> {
  using Return = R;
  using Args = std::tuple<std::decay_t<A>...>;
  static constexpr size_t Arity = sizeof...(A);
};
template <typename R, typename... A>
struct Signature<R(A...)> : Signature<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...) const> : Signature<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...)> : Signature<R (*)(A...)> {};

/// std::optional<T> as a typed parameter: may be left out (when trailing)
/// or passed as None.
template <typename T> struct OptionalParam : std::false_type {};
template <typename T>
struct OptionalParam<std::optional<T>> : std::true_type {
  using Inner = T;
};

/// Parameters before the trailing std::optional ones: the fewest
/// arguments a call may pass.
template <typename Tuple, size_t... I>
constexpr size_t requiredArity(std::index_sequence<I...>) {
  size_t Required = 0;
  ((Required = OptionalParam<std::tuple_element_t<I, Tuple>>::value
                   ? Required
                   : I + 1),
   ...);
  return Required;
}
template <typename Tuple, size_t... I>
constexpr size_t optionalCount(std::index_sequence<I...>) {
  return (size_t(0) + ... +
          size_t(OptionalParam<std::tuple_element_t<I, Tuple>>::value));
}

template <typename T>
T unpackArg(const std::string &Name, const PackedArgs &Args, int32_t I) {
  if constexpr (OptionalParam<T>::value) {
    if (I >= Args.size() || Args[I].isNone())
      return std::nullopt;
    return unpackArg<typename OptionalParam<T>::Inner>(Name, Args, I);
  } else {
    if (auto V = TypeTraitsOf<T>::fromAny(&Args[I].raw()))
      return std::move(*V);
    throwArgTypeError(Name, I + 1, TypeTraitsOf<T>::typeName(), Args[I]);
  }
}

template <typename F, size_t... I>
void callTyped(const std::string &Name, F &Fn, const PackedArgs &Args,
               Any *Result, std::index_sequence<I...>) {
  using Sig = Signature<std::decay_t<F>>;
  using R = typename Sig::Return;
  // Braced initialization converts the arguments from the first to the
  // last, so an error names the first one that does not convert (function
  // call arguments have no evaluation order).
  [[maybe_unused]] typename Sig::Args Unpacked{
      unpackArg<std::tuple_element_t<I, typename Sig::Args>>(Name, Args,
                                                             I)...};
  if constexpr (std::is_void_v<R>) {
    Fn(std::get<I>(std::move(Unpacked))...);
    Result->reset();
  } else {
    *Result = Any(Fn(std::get<I>(std::move(Unpacked))...));
  }
}
} // namespace detail

/// A reference to a packed function.
class Function : public ObjectRef {
public:
  using ContainerType = FunctionObj;
  static constexpr const char *kTypeName = "Function";
  Function() = default;
  explicit Function(ObjectPtr<Object> P) : ObjectRef(std::move(P)) {}

  /// Wraps a free safe-call entry (it must ignore `self`). `Keep` is held
  /// for as long as the Function lives.
  static Function fromSafeCall(VMJITSafeCallType Entry, std::string Name = {},
                               std::shared_ptr<void> Keep = {}) {
    return Function(makeObject<SafeCallFunctionObj>(Entry, std::move(Name),
                                                    std::move(Keep)));
  }
  /// Wraps `void(PackedArgs, Any* Result)`.
  template <typename F>
  static Function fromPacked(std::string Name, F Callable) {
    return Function(makeObject<PackedFunctionObj<F>>(std::move(Callable),
                                                     std::move(Name)));
  }
  /// Wraps a callable with typed parameters. Calls with the wrong number
  /// of arguments or an argument that does not convert raise TypeError
  /// naming the function and the argument (counted from 1). Trailing
  /// std::optional<T> parameters may be left out; None passes nullopt.
  template <typename F> static Function fromTyped(std::string Name, F Fn) {
    using Params = typename detail::Signature<F>::Args;
    constexpr size_t Arity = detail::Signature<F>::Arity;
    constexpr size_t Required =
        detail::requiredArity<Params>(std::make_index_sequence<Arity>());
    static_assert(detail::optionalCount<Params>(
                      std::make_index_sequence<Arity>()) == Arity - Required,
                  "only trailing parameters may be std::optional");
    std::string N = Name;
    return fromPacked(std::move(Name), [Fn = std::move(Fn), N = std::move(N)](
                                           PackedArgs Args, Any *Result) mutable {
      if (Args.size() < static_cast<int32_t>(Required) ||
          Args.size() > static_cast<int32_t>(Arity)) {
        if constexpr (Required == Arity)
          detail::throwArityError(N, static_cast<int32_t>(Arity), Args.size());
        else
          detail::throwArityError(N, static_cast<int32_t>(Required),
                                  static_cast<int32_t>(Arity), Args.size());
      }
      detail::callTyped(N, Fn, Args, Result, std::make_index_sequence<Arity>());
    });
  }

  FunctionObj *get() const noexcept {
    return static_cast<FunctionObj *>(ObjectRef::get());
  }
  const std::string &name() const noexcept { return get()->name(); }

  /// Calls with packed arguments; throws the callee's Error on failure.
  Any callPacked(const AnyView *Args, int32_t Num) const {
    Any Result;
    if (get()->safeCall(Args, Num, &Result) != 0)
      throwRaisedError();
    return Result;
  }
  /// Calls with C++ arguments converted to views.
  template <typename... A> Any operator()(A &&...Args) const {
    std::array<AnyView, sizeof...(A) == 0 ? 1 : sizeof...(A)> Views{
        AnyView(Args)...};
    return callPacked(Views.data(), static_cast<int32_t>(sizeof...(A)));
  }
};

template <> struct TypeTraits<Function> : ObjectRefTypeTraits<Function> {};

} // namespace vmjit

#endif // VMJIT_RUNTIME_FUNCTION_H
