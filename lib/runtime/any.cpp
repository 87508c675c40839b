//===- any.cpp - Any conversions that are not worth inlining ---------------===//

#include "vmjit/runtime/any.h"
#include "vmjit/runtime/type_error_hint.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/string.h"

#include <fmt/format.h>

namespace vmjit {

std::string_view valueTypeName(const VMJITAny &V) noexcept {
  int32_t Index = V.type_index;
  if (Index >= kVMJITStaticObjectBegin && V.v_obj)
    Index = V.v_obj->type_index;
  return typeIndexName(Index);
}

Any::Any(const AnyView &View) {
  const VMJITAny &V = View.raw();
  switch (V.type_index) {
  case kVMJITRawStr:
    detail::makeStringValue(V.v_c_str ? std::string_view(V.v_c_str)
                                      : std::string_view(),
                            &Data);
    return;
  case kVMJITByteArrayPtr: {
    const auto *B = static_cast<const VMJITByteArray *>(V.v_ptr);
    detail::makeBytesValue(B ? std::string_view(B->data, B->size)
                             : std::string_view(),
                           &Data);
    return;
  }
  case kVMJITObjectRValueRef: {
    // A view of an rvalue reference: the callee may take the object; as a
    // copy we take a new reference instead.
    auto **Slot = static_cast<VMJITObject **>(V.v_ptr);
    Object *O = Slot ? Object::fromRaw(*Slot) : nullptr;
    if (!O) {
      detail::setNone(Data);
      return;
    }
    O->incRef();
    detail::setTypeIndex(Data, O->typeIndex());
    Data.v_obj = O->raw();
    return;
  }
  default:
    Data = V;
    if (Data.type_index >= kVMJITStaticObjectBegin)
      Object::fromRaw(Data.v_obj)->incRef();
    return;
  }
}

namespace detail {
void throwCastError(const VMJITAny &Value, std::string_view Expected) {
  const std::string_view Got = valueTypeName(Value);
  throwError("TypeError", fmt::format("expected {} but got {}{}", Expected, Got,
                                      typeErrorHint(Expected, Got)));
}
} // namespace detail

std::optional<DLDataType>
TypeTraits<DLDataType>::fromString(const VMJITAny *V) {
  if (auto S = detail::stringView(*V))
    return parseDType(*S);
  return std::nullopt;
}

} // namespace vmjit
