//===- register.cpp - Registration of the CPU standard library ------------===//
//
// registerScalarFunctions lives in scalar.cpp; this file registers the
// tensor families and, once per process, everything into the global
// registry.
//
//===----------------------------------------------------------------------===//

#include "common.h"
#include "vmjit/kernels/standard_library.h"

#include <mutex>

namespace vmjit::kernels {

void registerTensorFunctions(Registry &R) {
  registerElementwiseFunctions(R);
  registerMatmulFunctions(R);
  registerSoftmaxFunctions(R);
  registerNormFunctions(R);
  registerShapeFunctions(R);
  registerReduceFunctions(R);
  registerValueFunctions(R);
}

void registerStandardKernels() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    Registry &R = Registry::global();
    registerScalarFunctions(R);
    registerTensorFunctions(R);
  });
}

} // namespace vmjit::kernels
