//===- value_json.cpp - Values as the JSON of `vmjit run --json` -----------===//

#include "value_json.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/function.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"

#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <string>

namespace vmjit::tool {
namespace {

using nlohmann::ordered_json;

ordered_json floatJson(double D) {
  if (std::isnan(D))
    return "nan";
  if (std::isinf(D))
    return D > 0 ? "inf" : "-inf";
  return D;
}

/// A float32 as the double its shortest decimal form names, so that 0.1f
/// prints as 0.1 rather than 0.10000000149011612.
ordered_json float32Json(float F) {
  if (!std::isfinite(F))
    return floatJson(F);
  return std::stod(fmt::format("{}", F));
}

uint16_t loadU16(const char *P) {
  uint16_t V;
  std::memcpy(&V, P, 2);
  return V;
}

float halfToFloat(uint16_t H) {
  uint32_t Sign = (H >> 15) & 1, Exp = (H >> 10) & 0x1f, Man = H & 0x3ff;
  float V;
  if (Exp == 0)
    V = std::ldexp(static_cast<float>(Man), -24);
  else if (Exp == 31)
    V = Man ? NAN : INFINITY;
  else
    V = std::ldexp(static_cast<float>(Man | 0x400), static_cast<int>(Exp) - 25);
  return Sign ? -V : V;
}

float bfloat16ToFloat(uint16_t B) {
  uint32_t Bits = static_cast<uint32_t>(B) << 16;
  float F;
  std::memcpy(&F, &Bits, 4);
  return F;
}

/// One element of a tensor.
ordered_json element(const char *P, DLDataType T) {
  switch (T.code) {
  case kDLBool:
    return *P != 0;
  case kDLInt:
    switch (T.bits) {
    case 8: return static_cast<int64_t>(*reinterpret_cast<const int8_t *>(P));
    case 16: { int16_t V; std::memcpy(&V, P, 2); return V; }
    case 32: { int32_t V; std::memcpy(&V, P, 4); return V; }
    default: { int64_t V; std::memcpy(&V, P, 8); return V; }
    }
  case kDLUInt:
    switch (T.bits) {
    case 8: return static_cast<uint64_t>(*reinterpret_cast<const uint8_t *>(P));
    case 16: return static_cast<uint64_t>(loadU16(P));
    case 32: { uint32_t V; std::memcpy(&V, P, 4); return V; }
    default: { uint64_t V; std::memcpy(&V, P, 8); return V; }
    }
  case kDLFloat:
    switch (T.bits) {
    case 16: return float32Json(halfToFloat(loadU16(P)));
    case 32: { float V; std::memcpy(&V, P, 4); return float32Json(V); }
    default: { double V; std::memcpy(&V, P, 8); return floatJson(V); }
    }
  case kDLBfloat:
    return float32Json(bfloat16ToFloat(loadU16(P)));
  default:
    return nullptr;
  }
}

ordered_json nested(const char *&P, DLDataType T, std::span<const int64_t> Dims,
                    size_t Axis) {
  if (Axis == Dims.size()) {
    ordered_json E = element(P, T);
    P += dtypeBytes(T);
    return E;
  }
  ordered_json A = ordered_json::array();
  for (int64_t I = 0; I < Dims[Axis]; ++I)
    A.push_back(nested(P, T, Dims, Axis + 1));
  return A;
}

ordered_json tensorJson(const Tensor &T) {
  ordered_json J;
  J["dtype"] = dtypeName(T.dtype());
  J["shape"] = std::vector<int64_t>(T.shape().begin(), T.shape().end());
  if (T.device().device_type != kDLCPU || !T.isContiguous() ||
      T.dtype().lanes != 1) {
    J["data"] = nullptr;
    return J;
  }
  const char *P = static_cast<const char *>(T.data());
  J["data"] = nested(P, T.dtype(), T.shape(), 0);
  return J;
}

} // namespace

ordered_json valueToJson(const AnyView &V) {
  const VMJITAny &R = V.raw();
  switch (V.typeIndex()) {
  case kVMJITNone:
    return nullptr;
  case kVMJITInt:
    return R.v_int64;
  case kVMJITBool:
    return R.v_int64 != 0;
  case kVMJITFloat:
    return floatJson(R.v_float64);
  case kVMJITRawStr:
  case kVMJITSmallStr:
  case kVMJITStr:
    return *V.as<std::string>();
  case kVMJITShape: {
    Shape S = *V.as<Shape>();
    return {{"shape", std::vector<int64_t>(S.begin(), S.end())}};
  }
  case kVMJITTensor:
    return tensorJson(*V.as<Tensor>());
  case kVMJITArray: {
    ordered_json A = ordered_json::array();
    Array Tuple = *V.as<Array>(); // keep the reference while iterating
    for (const Any &E : Tuple)
      A.push_back(valueToJson(E));
    return A;
  }
  case kVMJITFunction:
    return {{"function", V.as<Function>()->name()}};
  case kVMJITDataType:
    return {{"object", "DataType " + dtypeName(R.v_dtype)}};
  default:
    return {{"object", std::string(V.typeName())}};
  }
}

} // namespace vmjit::tool
