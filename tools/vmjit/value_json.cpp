//===- value_json.cpp - Values as the JSON of `vmjit run --json` -----------===//

#include "value_json.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/dtype_traits.h"
#include "vmjit/runtime/function.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/literals.h"

#include <bit>
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

/// A float16 or bfloat16 element as the shortest decimal that reads back
/// to the same bits (0.1, not 0.099975586), as NumPy prints one.
ordered_json narrowJson(uint64_t Bits, const FloatFormat &Fmt) {
  const float F = vm::narrowFloatValue(Bits, Fmt);
  if (!std::isfinite(F))
    return floatJson(F);
  for (int Digits = 1; Digits < 9; ++Digits) {
    std::string S = fmt::format("{:.{}g}", F, Digits);
    vm::LiteralBits L = vm::parseFloatLiteral(S, Fmt);
    if (L.Status == vm::LiteralStatus::Ok && L.Bits == Bits)
      return std::stod(S);
  }
  return float32Json(F);
}

/// A float element of format `Fmt` (bits `Bits`).
ordered_json floatElementJson(uint64_t Bits, const FloatFormat &Fmt) {
  if (Fmt.sameLayout(vm::kFloat64))
    return floatJson(std::bit_cast<double>(Bits));
  if (Fmt.sameLayout(vm::kFloat32))
    return float32Json(std::bit_cast<float>(static_cast<uint32_t>(Bits)));
  return narrowJson(Bits, Fmt);
}

/// One element of a tensor.
ordered_json element(const char *P, DLDataType T) {
  const DTypeTraits *R = findDType(T);
  if (!R)
    return nullptr;
  const uint64_t Bits = loadElementBits(P, *R);
  switch (R->Literal) {
  case LiteralKind::Bool:
    return Bits != 0;
  case LiteralKind::Signed: {
    const int Unused = 64 - T.bits; // sign-extend from the top bit
    return static_cast<int64_t>(Bits << Unused) >> Unused;
  }
  case LiteralKind::Unsigned:
    return Bits;
  case LiteralKind::Float:
    return floatElementJson(Bits, R->Float);
  }
  return nullptr;
}

/// NumPy's print options: arrays over kSummaryThreshold elements show
/// kEdgeItems items at each end of every axis.
constexpr int64_t kSummaryThreshold = 1000;
constexpr int64_t kEdgeItems = 3;

/// The elements of the sub-array at `Offset` (in elements) along `Axis`;
/// `Summarize` puts "..." in place of the middle of long axes.
ordered_json nested(const char *Base, DLDataType T,
                    std::span<const int64_t> Dims, size_t Axis, int64_t Offset,
                    bool Summarize) {
  if (Axis == Dims.size())
    return element(Base + Offset * static_cast<int64_t>(dtypeBytes(T)), T);
  int64_t Stride = 1;
  for (size_t A = Axis + 1; A < Dims.size(); ++A)
    Stride *= Dims[A];
  ordered_json Out = ordered_json::array();
  const int64_t N = Dims[Axis];
  const bool Cut = Summarize && N > 2 * kEdgeItems;
  for (int64_t I = 0; I < N; ++I) {
    if (Cut && I == kEdgeItems) {
      Out.push_back("...");
      I = N - kEdgeItems;
    }
    Out.push_back(
        nested(Base, T, Dims, Axis + 1, Offset + I * Stride, Summarize));
  }
  return Out;
}

ordered_json tensorJson(const Tensor &T, bool Summarize) {
  ordered_json J;
  J["dtype"] = dtypeName(T.dtype());
  J["shape"] = std::vector<int64_t>(T.shape().begin(), T.shape().end());
  // No values for the types NumPy has no dtype for (int4, float8_e4m3fn,
  // float32x2, ...): "data" is null, as for a tensor on another device.
  if (T.device().device_type != kDLCPU || !T.isContiguous() ||
      !vm::isVmasmTensorDType(T.dtype())) {
    J["data"] = nullptr;
    return J;
  }
  const char *P = static_cast<const char *>(T.data());
  J["data"] = nested(P, T.dtype(), T.shape(), 0, 0,
                     Summarize && T.numel() > kSummaryThreshold);
  return J;
}

} // namespace

ordered_json valueToJson(const AnyView &V, bool Summarize) {
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
    return tensorJson(*V.as<Tensor>(), Summarize);
  case kVMJITArray: {
    ordered_json A = ordered_json::array();
    Array Tuple = *V.as<Array>(); // keep the reference while iterating
    for (const Any &E : Tuple)
      A.push_back(valueToJson(E, Summarize));
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
