//===- vmjit/vm/cpu_features.h - Does this CPU have them? -------*- C++ -*-===//
//
// Which of the CPU features a `vmjit compile --kernels` library was
// compiled for (LLVM's names, as recorded in its manifest) this CPU lacks,
// found without LLVM: on x86-64 a table of LLVM's feature names to their
// CPUID bits, with the register state the OS saves (XCR0) for the AVX and
// AVX-512 families. Names outside the table are not checked; elsewhere
// than x86-64 nothing is.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_CPU_FEATURES_H
#define VMJIT_VM_CPU_FEATURES_H

#include <string>
#include <string_view>
#include <vector>

namespace vmjit::vm {

/// The features LLVM's list `Features` enables ("+avx2,+fma,-avx512f":
/// the `+` ones) that this CPU lacks, among the checked ones, in the
/// list's order.
std::vector<std::string> missingCpuFeatures(std::string_view Features);

/// The LLVM feature names missingCpuFeatures checks here (empty where it
/// checks none).
std::vector<std::string> checkedCpuFeatures();

} // namespace vmjit::vm

#endif // VMJIT_VM_CPU_FEATURES_H
