//===- register.cpp - Registration of the CPU standard library ------------===//
//
// registerScalarFunctions lives in scalar.cpp; this file registers the
// tensor families into the standard library's own registry and, once per
// process, from there into the global registry.
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

const Registry &standardKernels() {
  // Never destroyed, as the global registry: a JIT thread may look a
  // function up while the process exits.
  static Registry *R = [] {
    auto *S = new Registry();
    registerScalarFunctions(*S);
    registerTensorFunctions(*S);
    return S;
  }();
  return *R;
}

void registerStandardKernels() {
  static std::once_flag Once;
  std::call_once(Once,
                 [] { Registry::global().addDefaults(standardKernels()); });
}

} // namespace vmjit::kernels
