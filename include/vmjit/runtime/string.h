//===- vmjit/runtime/string.h - String and Bytes values ----------*- C++ -*-===//
//
// Strings and byte arrays. Up to 7 bytes live inline in the Any (type 11,
// small string, or 12, small bytes, length in small_str_len, NUL-terminated);
// longer ones are String (65) / Bytes (66) objects whose payload is
// {const char* data, size_t size} right after the header, as in tvm-ffi.
// Arguments may also be borrowed C strings (type 8) or byte-array pointers
// (type 9); every form converts to std::string, String and Bytes.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_STRING_H
#define VMJIT_RUNTIME_STRING_H

#include "vmjit/runtime/any.h"

#include <string>
#include <string_view>

namespace vmjit {

/// Longest string stored inline in an Any (the 8th byte is the NUL).
inline constexpr size_t kSmallStrMaxLen = 7;

/// Payload shared by String and Bytes objects.
class BytesObjBase : public Object {
public:
  std::string_view view() const noexcept { return {Cell.data, Cell.size}; }
  const char *data() const noexcept { return Cell.data; }
  size_t size() const noexcept { return Cell.size; }

protected:
  BytesObjBase(int32_t TypeIndex, DeleterFn D, std::string S)
      : Object(TypeIndex, D), Storage(std::move(S)) {
    Cell.data = Storage.c_str();
    Cell.size = Storage.size();
  }
  VMJITByteArray Cell;
  std::string Storage;
};

class StringObj : public BytesObjBase {
public:
  static constexpr int32_t kTypeIndex = kVMJITStr;
  explicit StringObj(std::string S)
      : BytesObjBase(kTypeIndex, objectDeleter<StringObj>, std::move(S)) {}
};

class BytesObj : public BytesObjBase {
public:
  static constexpr int32_t kTypeIndex = kVMJITBytes;
  explicit BytesObj(std::string S)
      : BytesObjBase(kTypeIndex, objectDeleter<BytesObj>, std::move(S)) {}
};

/// A reference to an immutable string object.
class String : public ObjectRef {
public:
  using ContainerType = StringObj;
  static constexpr const char *kTypeName = "str";
  String() = default;
  explicit String(ObjectPtr<Object> P) : ObjectRef(std::move(P)) {}
  String(std::string S) : ObjectRef(makeObject<StringObj>(std::move(S))) {}
  String(const char *S) : String(std::string(S)) {}

  const StringObj *get() const noexcept {
    return static_cast<const StringObj *>(ObjectRef::get());
  }
  std::string_view view() const noexcept {
    return defined() ? get()->view() : std::string_view();
  }
  const char *c_str() const noexcept { return defined() ? get()->data() : ""; }
  size_t size() const noexcept { return view().size(); }
  bool operator==(std::string_view O) const noexcept { return view() == O; }
};

/// A reference to an immutable byte array object.
class Bytes : public ObjectRef {
public:
  using ContainerType = BytesObj;
  static constexpr const char *kTypeName = "bytes";
  Bytes() = default;
  explicit Bytes(ObjectPtr<Object> P) : ObjectRef(std::move(P)) {}
  explicit Bytes(std::string S)
      : ObjectRef(makeObject<BytesObj>(std::move(S))) {}

  const BytesObj *get() const noexcept {
    return static_cast<const BytesObj *>(ObjectRef::get());
  }
  std::string_view view() const noexcept {
    return defined() ? get()->view() : std::string_view();
  }
  size_t size() const noexcept { return view().size(); }
};

namespace detail {
/// The characters of a string-like value (small, raw, or object), or
/// nullopt. The view borrows from `V` (and from the object it holds).
VMJIT_DLL std::optional<std::string_view> stringView(const VMJITAny &V);
/// Likewise for byte-like values (small bytes, byte array, Bytes).
VMJIT_DLL std::optional<std::string_view> bytesView(const VMJITAny &V);
/// Stores an owned string (inline when short) into Out.
VMJIT_DLL void makeStringValue(std::string_view S, VMJITAny *Out);
/// Stores owned bytes (inline when short) into Out.
VMJIT_DLL void makeBytesValue(std::string_view S, VMJITAny *Out);
} // namespace detail

template <> struct TypeTraits<String> : ObjectRefTypeTraits<String> {
  /// Any string-like value converts (a short one gets an object).
  static std::optional<String> fromAny(const VMJITAny *V) {
    if (V->type_index == kVMJITStr)
      return String(ObjectPtr<Object>::share(Object::fromRaw(V->v_obj)));
    if (auto S = detail::stringView(*V))
      return String(std::string(*S));
    return std::nullopt;
  }
};

template <> struct TypeTraits<Bytes> : ObjectRefTypeTraits<Bytes> {
  static std::optional<Bytes> fromAny(const VMJITAny *V) {
    if (V->type_index == kVMJITBytes)
      return Bytes(ObjectPtr<Object>::share(Object::fromRaw(V->v_obj)));
    if (auto S = detail::bytesView(*V))
      return Bytes(std::string(*S));
    return std::nullopt;
  }
};

/// std::string: a view borrows the characters (type 8); an owned value is
/// a small string or a String object.
template <> struct TypeTraits<std::string> {
  static constexpr bool enabled = true;
  static std::string_view typeName() noexcept { return "str"; }
  static void toView(const std::string &S, VMJITAny *Out) noexcept {
    detail::setTypeIndex(*Out, kVMJITRawStr);
    Out->v_c_str = S.c_str();
  }
  static void toAny(const std::string &S, VMJITAny *Out) {
    detail::makeStringValue(S, Out);
  }
  static std::optional<std::string> fromAny(const VMJITAny *V) {
    if (auto S = detail::stringView(*V))
      return std::string(*S);
    return std::nullopt;
  }
};

/// std::string_view as a parameter: the characters of a str argument,
/// borrowed for the duration of the call (no copy). Not for values that
/// outlive the call.
template <> struct TypeTraits<std::string_view> {
  static constexpr bool enabled = true;
  static std::string_view typeName() noexcept { return "str"; }
  static std::optional<std::string_view> fromAny(const VMJITAny *V) {
    return detail::stringView(*V);
  }
};

template <> struct TypeTraits<const char *> {
  static constexpr bool enabled = true;
  static std::string_view typeName() noexcept { return "str"; }
  static void toView(const char *S, VMJITAny *Out) noexcept {
    detail::setTypeIndex(*Out, kVMJITRawStr);
    Out->v_c_str = S;
  }
  static void toAny(const char *S, VMJITAny *Out) {
    detail::makeStringValue(S, Out);
  }
};
template <> struct TypeTraits<char *> : TypeTraits<const char *> {};
template <size_t N> struct TypeTraits<char[N]> : TypeTraits<const char *> {};

} // namespace vmjit

#endif // VMJIT_RUNTIME_STRING_H
