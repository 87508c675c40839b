//===- vmjit/kernels/standard_library.h - scalar.*, tensor.*, kernel.* -*- C++ -*-===//
//
// The CPU functions of the standard library (the names and semantics of the
// contract's "Standard functions", except the vm.builtin.* ones, which live
// with the VM): scalar arithmetic and comparisons, allocating tensor
// kernels (tensor.*) and their destination-passing forms (kernel.*).
// Every function is registered as a typed packed function whose errors
// name it and the offending shapes or dtypes.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_KERNELS_STANDARD_LIBRARY_H
#define VMJIT_KERNELS_STANDARD_LIBRARY_H

#include "vmjit/runtime/registry.h"

namespace vmjit::kernels {

/// Registers scalar.add ... scalar.not into `R`.
void registerScalarFunctions(Registry &R);
/// Registers tensor.* and kernel.* into `R`.
void registerTensorFunctions(Registry &R);

/// Everything above, registered once per process into a registry of its
/// own: the standard functions as vmjit defines them, whatever the global
/// registry holds under their names. Thread-safe.
const Registry &standardKernels();

/// Registers everything above into the global registry, once per process
/// (later calls do nothing); a name registered there earlier keeps its
/// function. Thread-safe.
void registerStandardKernels();

} // namespace vmjit::kernels

#endif // VMJIT_KERNELS_STANDARD_LIBRARY_H
