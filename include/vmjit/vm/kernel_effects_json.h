//===- vmjit/vm/kernel_effects_json.h - Kernel effects as JSON --*- C++ -*-===//
//
// The kernels' effects (runtime/kernel_effects.h) as the JSON text a
// `vmjit compile --kernels` library records in its manifest
// (AotManifest::KernelEffects), so that binding parameters on it folds the
// calls it proves with no LLVM at run time: one object per kernel,
//   {"NAME": {"only_argument_memory": true, "args": ["read", "write"]}}
// with each argument "none", "read", "write" or "read_write".
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_KERNEL_EFFECTS_JSON_H
#define VMJIT_VM_KERNEL_EFFECTS_JSON_H

#include "vmjit/runtime/kernel_effects.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace vmjit::vm {

/// `Effects` as JSON text.
std::string
kernelEffectsJson(const std::map<std::string, KernelEffects> &Effects);

/// The effects of JSON text `Text`, or nullopt where it is not what
/// kernelEffectsJson writes (with `Why` set).
std::optional<std::map<std::string, KernelEffects>>
parseKernelEffectsJson(std::string_view Text, std::string &Why);

} // namespace vmjit::vm

#endif // VMJIT_VM_KERNEL_EFFECTS_JSON_H
