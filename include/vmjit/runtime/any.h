//===- vmjit/runtime/any.h - Any and AnyView ---------------------*- C++ -*-===//
//
// Any and AnyView are the C++ faces of the 16-byte VMJITAny value. AnyView
// borrows (it is what arguments are), Any owns (it is what results and
// registers are). Both are exactly the C layout, so an array of Any is an
// array of VMJITAny that JIT code and C kernels read directly.
//
// Conversions to and from C++ types go through TypeTraits<T>; the traits of
// scalars live here, those of each object type in its own header.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_ANY_H
#define VMJIT_RUNTIME_ANY_H

#include "vmjit/runtime/object.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace vmjit {

class Any;
class AnyView;

/// Conversion rules between a C++ type and VMJITAny. A specialization sets
/// `enabled` and provides:
///  - `static std::string_view typeName()`: the name used in messages;
///  - `static void toView(const T&, VMJITAny*)`: a borrowed view;
///  - `static void toAny(T, VMJITAny*)`: an owned value (takes references);
///  - `static std::optional<T> fromAny(const VMJITAny*)`: the value if the
///    Any holds T or something T accepts (an int where a float is wanted,
///    a small string where a String is wanted, ...).
template <typename T, typename = void> struct TypeTraits {
  static constexpr bool enabled = false;
};

template <typename T>
using TypeTraitsOf = TypeTraits<std::remove_cv_t<std::remove_reference_t<T>>>;

template <typename T>
inline constexpr bool hasTypeTraits = TypeTraitsOf<T>::enabled;

namespace detail {
/// Throws the TypeError for a failed cast: "expected T but got U".
[[noreturn]] VMJIT_DLL void throwCastError(const VMJITAny &Value,
                                           std::string_view Expected);
/// Releases an owned object reference stored in a value.
inline void releaseValue(VMJITAny &V) noexcept {
  if (V.type_index >= kVMJITStaticObjectBegin)
    Object::fromRaw(V.v_obj)->decRef();
}
template <typename T>
struct HasTraits : std::bool_constant<TypeTraitsOf<T>::enabled> {};
/// True for the C++ types (other than Any and AnyView themselves) that
/// convert to a value. The checks short-circuit so that TypeTraits<Any> is
/// not instantiated while Any is still incomplete.
template <typename T>
inline constexpr bool isConvertible = std::conjunction_v<
    std::negation<std::is_same<std::decay_t<T>, Any>>,
    std::negation<std::is_same<std::decay_t<T>, AnyView>>, HasTraits<T>>;
/// Copies a value as two 8-byte words. A 16-byte (SSE) copy right after a
/// callee wrote the result field by field cannot take the stored data from
/// the store buffer and stalls for ~12 cycles; two 8-byte loads can.
inline void copyWords(VMJITAny &Dst, const VMJITAny &Src) noexcept {
  uint64_t W0, W1;
  std::memcpy(&W0, &Src, 8);
  std::memcpy(&W1, reinterpret_cast<const char *>(&Src) + 8, 8);
  asm("" : "+r"(W0), "+r"(W1)); // keep the two words apart
  std::memcpy(&Dst, &W0, 8);
  std::memcpy(reinterpret_cast<char *>(&Dst) + 8, &W1, 8);
}
/// Writes the first word (type index, zero padding) with one 8-byte store:
/// a later 8-byte load of it (copyWords) is then served by the store
/// buffer; two 4-byte stores would stall it for ~12 cycles.
inline void setTypeIndex(VMJITAny &V, int32_t TypeIndex) noexcept {
  const uint64_t W0 = static_cast<uint32_t>(TypeIndex);
  std::memcpy(&V, &W0, 8);
}
inline void setNone(VMJITAny &V) noexcept {
  setTypeIndex(V, kVMJITNone);
  V.v_int64 = 0;
}
} // namespace detail

/// Name of the type a value holds ("int", "Tensor", ...).
VMJIT_DLL std::string_view valueTypeName(const VMJITAny &V) noexcept;

/// A borrowed value: 16 bytes, no reference counting.
class AnyView {
public:
  AnyView() noexcept { detail::setNone(Data); }
  AnyView(std::nullptr_t) noexcept { detail::setNone(Data); }
  inline AnyView(const Any &A) noexcept;
  template <typename T, typename = std::enable_if_t<detail::isConvertible<T>>>
  AnyView(const T &V) noexcept {
    TypeTraitsOf<T>::toView(V, &Data);
  }

  static AnyView fromRaw(const VMJITAny &V) noexcept {
    AnyView R;
    R.Data = V;
    return R;
  }
  const VMJITAny &raw() const noexcept { return Data; }

  int32_t typeIndex() const noexcept { return Data.type_index; }
  bool isNone() const noexcept { return Data.type_index == kVMJITNone; }
  std::string_view typeName() const noexcept { return valueTypeName(Data); }

  /// The value as T, or nullopt if it does not hold (or convert to) T.
  template <typename T> std::optional<T> as() const {
    return TypeTraitsOf<T>::fromAny(&Data);
  }
  /// The value as T; throws TypeError "expected T but got U" otherwise.
  template <typename T> T cast() const {
    if (auto V = TypeTraitsOf<T>::fromAny(&Data))
      return std::move(*V);
    detail::throwCastError(Data, TypeTraitsOf<T>::typeName());
  }

protected:
  VMJITAny Data;
};

static_assert(sizeof(AnyView) == 16 && alignof(AnyView) == 8);

/// An owned value: holds a strong reference when it holds an object.
class Any {
public:
  Any() noexcept { detail::setNone(Data); }
  Any(std::nullptr_t) noexcept { detail::setNone(Data); }
  Any(const Any &O) noexcept : Data(O.Data) {
    if (Data.type_index >= kVMJITStaticObjectBegin)
      Object::fromRaw(Data.v_obj)->incRef();
  }
  Any(Any &&O) noexcept {
    detail::copyWords(Data, O.Data);
    detail::setNone(O.Data);
  }
  /// Copies a view into an owned value: objects get a new reference; raw
  /// strings and byte arrays are copied into String / Bytes values.
  VMJIT_DLL explicit Any(const AnyView &V);
  template <typename T, typename = std::enable_if_t<detail::isConvertible<T>>>
  Any(T &&V) {
    TypeTraitsOf<T>::toAny(std::forward<T>(V), &Data);
  }
  ~Any() { detail::releaseValue(Data); }

  Any &operator=(const Any &O) noexcept {
    Any(O).swap(*this);
    return *this;
  }
  Any &operator=(Any &&O) noexcept {
    if (this != &O) {
      VMJITAny Old;
      detail::copyWords(Old, Data);
      detail::copyWords(Data, O.Data);
      detail::setNone(O.Data);
      detail::releaseValue(Old);
    }
    return *this;
  }
  void swap(Any &O) noexcept { std::swap(Data, O.Data); }
  void reset() noexcept {
    detail::releaseValue(Data);
    detail::setNone(Data);
  }

  /// Adopts a raw owned value (e.g. a safe call's result).
  static Any fromRawOwned(const VMJITAny &V) noexcept {
    Any R;
    R.Data = V;
    return R;
  }
  /// Gives the raw value to the caller, who now owns it; this becomes None.
  VMJITAny releaseRaw() noexcept {
    VMJITAny R = Data;
    detail::setNone(Data);
    return R;
  }
  const VMJITAny &raw() const noexcept { return Data; }
  /// For passing as a safe call's result slot (must hold None).
  VMJITAny *rawResultSlot() noexcept { return &Data; }

  int32_t typeIndex() const noexcept { return Data.type_index; }
  bool isNone() const noexcept { return Data.type_index == kVMJITNone; }
  std::string_view typeName() const noexcept { return valueTypeName(Data); }

  template <typename T> std::optional<T> as() const {
    return TypeTraitsOf<T>::fromAny(&Data);
  }
  template <typename T> T cast() const {
    if (auto V = TypeTraitsOf<T>::fromAny(&Data))
      return std::move(*V);
    detail::throwCastError(Data, TypeTraitsOf<T>::typeName());
  }

private:
  VMJITAny Data;
};

static_assert(sizeof(Any) == 16 && alignof(Any) == 8);

inline AnyView::AnyView(const Any &A) noexcept {
  detail::copyWords(Data, A.raw());
}

//===----------------------------------------------------------------------===//
// Traits of scalars.
//===----------------------------------------------------------------------===//

/// Shared plumbing for types stored inline (no references to take).
template <typename T, typename Derived> struct InlineTypeTraitsBase {
  static constexpr bool enabled = true;
  static void toAny(const T &V, VMJITAny *Out) noexcept {
    Derived::toView(V, Out);
  }
};

template <typename IntT>
struct TypeTraits<IntT, std::enable_if_t<std::is_integral_v<IntT> &&
                                         !std::is_same_v<IntT, bool> &&
                                         !std::is_same_v<IntT, char>>>
    : InlineTypeTraitsBase<IntT, TypeTraits<IntT>> {
  static std::string_view typeName() noexcept { return "int"; }
  static void toView(IntT V, VMJITAny *Out) noexcept {
    detail::setTypeIndex(*Out, kVMJITInt);
    Out->v_int64 = static_cast<int64_t>(V);
  }
  static std::optional<IntT> fromAny(const VMJITAny *V) noexcept {
    if (V->type_index == kVMJITInt || V->type_index == kVMJITBool)
      return static_cast<IntT>(V->v_int64);
    return std::nullopt;
  }
};

template <>
struct TypeTraits<bool> : InlineTypeTraitsBase<bool, TypeTraits<bool>> {
  static std::string_view typeName() noexcept { return "bool"; }
  static void toView(bool V, VMJITAny *Out) noexcept {
    detail::setTypeIndex(*Out, kVMJITBool);
    Out->v_int64 = V ? 1 : 0;
  }
  static std::optional<bool> fromAny(const VMJITAny *V) noexcept {
    if (V->type_index == kVMJITBool || V->type_index == kVMJITInt)
      return V->v_int64 != 0;
    return std::nullopt;
  }
};

template <typename FloatT>
struct TypeTraits<FloatT, std::enable_if_t<std::is_floating_point_v<FloatT>>>
    : InlineTypeTraitsBase<FloatT, TypeTraits<FloatT>> {
  static std::string_view typeName() noexcept { return "float"; }
  static void toView(FloatT V, VMJITAny *Out) noexcept {
    detail::setTypeIndex(*Out, kVMJITFloat);
    Out->v_float64 = static_cast<double>(V);
  }
  static std::optional<FloatT> fromAny(const VMJITAny *V) noexcept {
    if (V->type_index == kVMJITFloat)
      return static_cast<FloatT>(V->v_float64);
    if (V->type_index == kVMJITInt || V->type_index == kVMJITBool)
      return static_cast<FloatT>(V->v_int64);
    return std::nullopt;
  }
};

template <>
struct TypeTraits<std::nullptr_t>
    : InlineTypeTraitsBase<std::nullptr_t, TypeTraits<std::nullptr_t>> {
  static std::string_view typeName() noexcept { return "None"; }
  static void toView(std::nullptr_t, VMJITAny *Out) noexcept {
    detail::setNone(*Out);
  }
  static std::optional<std::nullptr_t> fromAny(const VMJITAny *V) noexcept {
    if (V->type_index == kVMJITNone)
      return nullptr;
    return std::nullopt;
  }
};

/// Opaque pointers (None reads as a null pointer).
template <>
struct TypeTraits<void *> : InlineTypeTraitsBase<void *, TypeTraits<void *>> {
  static std::string_view typeName() noexcept { return "void*"; }
  static void toView(void *V, VMJITAny *Out) noexcept {
    if (!V) {
      detail::setNone(*Out);
      return;
    }
    detail::setTypeIndex(*Out, kVMJITOpaquePtr);
    Out->v_ptr = V;
  }
  static std::optional<void *> fromAny(const VMJITAny *V) noexcept {
    if (V->type_index == kVMJITOpaquePtr)
      return V->v_ptr;
    if (V->type_index == kVMJITNone)
      return static_cast<void *>(nullptr);
    return std::nullopt;
  }
};

template <>
struct TypeTraits<DLDataType>
    : InlineTypeTraitsBase<DLDataType, TypeTraits<DLDataType>> {
  static std::string_view typeName() noexcept { return "DataType"; }
  static void toView(DLDataType V, VMJITAny *Out) noexcept {
    detail::setTypeIndex(*Out, kVMJITDataType);
    Out->v_int64 = 0;
    Out->v_dtype = V;
  }
  /// A DataType value, or a str naming one ("float32"), parsed out of line.
  static std::optional<DLDataType> fromAny(const VMJITAny *V) {
    if (V->type_index == kVMJITDataType) [[likely]]
      return V->v_dtype;
    return fromString(V);
  }
  VMJIT_DLL static std::optional<DLDataType> fromString(const VMJITAny *V);
};

template <>
struct TypeTraits<DLDevice>
    : InlineTypeTraitsBase<DLDevice, TypeTraits<DLDevice>> {
  static std::string_view typeName() noexcept { return "Device"; }
  static void toView(DLDevice V, VMJITAny *Out) noexcept {
    detail::setTypeIndex(*Out, kVMJITDevice);
    Out->v_device = V;
  }
  static std::optional<DLDevice> fromAny(const VMJITAny *V) noexcept {
    if (V->type_index == kVMJITDevice)
      return V->v_device;
    return std::nullopt;
  }
};

/// Any and AnyView themselves convert to anything.
template <> struct TypeTraits<Any> {
  static constexpr bool enabled = true;
  static std::string_view typeName() noexcept { return "Any"; }
  static std::optional<Any> fromAny(const VMJITAny *V) {
    return Any(AnyView::fromRaw(*V));
  }
};
template <> struct TypeTraits<AnyView> {
  static constexpr bool enabled = true;
  static std::string_view typeName() noexcept { return "Any"; }
  static std::optional<AnyView> fromAny(const VMJITAny *V) noexcept {
    return AnyView::fromRaw(*V);
  }
};

/// Traits shared by every ObjectRef subclass R with R::ContainerType::
/// kTypeIndex and R::kTypeName: an object of exactly that type (a null
/// reference is None).
template <typename R> struct ObjectRefTypeTraits {
  static constexpr bool enabled = true;
  static std::string_view typeName() noexcept { return R::kTypeName; }
  static void toView(const R &V, VMJITAny *Out) noexcept {
    if (!V.defined()) {
      detail::setNone(*Out);
      return;
    }
    detail::setTypeIndex(*Out, V.get()->typeIndex());
    Out->v_obj = V.ptr().get()->raw();
  }
  static void toAny(R V, VMJITAny *Out) noexcept {
    toView(V, Out);
    V.ptr().release();
  }
  static std::optional<R> fromAny(const VMJITAny *V) noexcept {
    if (V->type_index == R::ContainerType::kTypeIndex)
      return R(ObjectPtr<Object>::share(Object::fromRaw(V->v_obj)));
    return std::nullopt;
  }
};

/// An untyped ObjectRef accepts any object.
template <> struct TypeTraits<ObjectRef> : ObjectRefTypeTraits<ObjectRef> {
  static std::string_view typeName() noexcept { return "Object"; }
  static std::optional<ObjectRef> fromAny(const VMJITAny *V) noexcept {
    if (V->type_index >= kVMJITStaticObjectBegin)
      return ObjectRef(ObjectPtr<Object>::share(Object::fromRaw(V->v_obj)));
    if (V->type_index == kVMJITNone)
      return ObjectRef();
    return std::nullopt;
  }
};

} // namespace vmjit

#endif // VMJIT_RUNTIME_ANY_H
