//===- string.cpp - String and Bytes values --------------------------------===//

#include "vmjit/runtime/string.h"

#include <cstring>

namespace vmjit {
namespace detail {

std::optional<std::string_view> stringView(const VMJITAny &V) {
  switch (V.type_index) {
  case kVMJITSmallStr:
    return std::string_view(V.v_bytes, V.small_str_len);
  case kVMJITRawStr:
    return V.v_c_str ? std::string_view(V.v_c_str) : std::string_view();
  case kVMJITStr:
    return reinterpret_cast<const StringObj *>(V.v_obj)->view();
  default:
    return std::nullopt;
  }
}

std::optional<std::string_view> bytesView(const VMJITAny &V) {
  switch (V.type_index) {
  case kVMJITSmallBytes:
    return std::string_view(V.v_bytes, V.small_str_len);
  case kVMJITByteArrayPtr: {
    const auto *B = static_cast<const VMJITByteArray *>(V.v_ptr);
    return B ? std::string_view(B->data, B->size) : std::string_view();
  }
  case kVMJITBytes:
    return reinterpret_cast<const BytesObj *>(V.v_obj)->view();
  default:
    return std::nullopt;
  }
}

namespace {
template <typename ObjT>
void makeValue(std::string_view S, int32_t SmallIndex, VMJITAny *Out) {
  if (S.size() <= kSmallStrMaxLen) {
    Out->type_index = SmallIndex;
    Out->small_str_len = static_cast<uint32_t>(S.size());
    Out->v_int64 = 0;
    if (!S.empty())
      std::memcpy(Out->v_bytes, S.data(), S.size());
    return;
  }
  ObjT *O = makeObject<ObjT>(std::string(S)).release();
  detail::setTypeIndex(*Out, ObjT::kTypeIndex);
  Out->v_obj = O->raw();
}
} // namespace

void makeStringValue(std::string_view S, VMJITAny *Out) {
  makeValue<StringObj>(S, kVMJITSmallStr, Out);
}

void makeBytesValue(std::string_view S, VMJITAny *Out) {
  makeValue<BytesObj>(S, kVMJITSmallBytes, Out);
}

} // namespace detail
} // namespace vmjit
