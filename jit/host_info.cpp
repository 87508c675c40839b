//===- host_info.cpp - The machine the JIT compiles for --------------------===//

#include "vmjit/jit/host_info.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <vector>

namespace vmjit::jit {

static HostInfo computeHostInfo() {
  HostInfo H;
  H.LLVMVersion = LLVM_VERSION_STRING;
  H.Triple = llvm::sys::getProcessTriple();
  H.CPU = llvm::sys::getHostCPUName().str();
  std::vector<std::string> Enabled;
  for (const auto &F : llvm::sys::getHostCPUFeatures())
    if (F.getValue())
      Enabled.push_back("+" + F.getKey().str());
  std::sort(Enabled.begin(), Enabled.end());
  for (const std::string &F : Enabled) {
    if (!H.Features.empty())
      H.Features += ',';
    H.Features += F;
  }
  return H;
}

const HostInfo &hostInfo() {
  static const HostInfo H = computeHostInfo();
  return H;
}

} // namespace vmjit::jit
