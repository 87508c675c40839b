//===- shape.cpp - Shape helpers -------------------------------------------===//

#include "vmjit/runtime/shape.h"

namespace vmjit {

std::string shapeString(std::span<const int64_t> Dims) {
  std::string S = "[";
  for (size_t I = 0; I < Dims.size(); ++I) {
    if (I)
      S += ", ";
    S += std::to_string(Dims[I]);
  }
  return S + "]";
}

} // namespace vmjit
