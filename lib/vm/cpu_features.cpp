//===- cpu_features.cpp - This CPU's features by LLVM's names -------------===//
//
// See cpu_features.h. One row per LLVM feature name: the CPUID leaf,
// subleaf, register and bit that report it, and the register state the OS
// must save for it (XCR0: SSE and AVX state for the AVX family, also the
// opmask and ZMM state for AVX-512), as LLVM's own host detection reads
// them (llvm/lib/TargetParser/Host.cpp).
//
//===----------------------------------------------------------------------===//

#include "vmjit/vm/cpu_features.h"

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace vmjit::vm {

namespace {

#if defined(__x86_64__)

enum Reg : uint8_t { EAX, EBX, ECX, EDX };
/// The register state a feature needs saved by the OS.
enum State : uint8_t { None, Avx, Avx512 };

struct FeatureBit {
  const char *Name; ///< LLVM's name
  uint32_t Leaf, Subleaf;
  Reg R;
  uint8_t Bit;
  State Needs;
};

constexpr uint32_t kExt = 0x80000001;

constexpr FeatureBit kFeatures[] = {
    {"cx8", 1, 0, EDX, 8, None},
    {"cmov", 1, 0, EDX, 15, None},
    {"mmx", 1, 0, EDX, 23, None},
    {"fxsr", 1, 0, EDX, 24, None},
    {"sse", 1, 0, EDX, 25, None},
    {"sse2", 1, 0, EDX, 26, None},
    {"sse3", 1, 0, ECX, 0, None},
    {"pclmul", 1, 0, ECX, 1, None},
    {"ssse3", 1, 0, ECX, 9, None},
    {"fma", 1, 0, ECX, 12, Avx},
    {"cx16", 1, 0, ECX, 13, None},
    {"sse4.1", 1, 0, ECX, 19, None},
    {"sse4.2", 1, 0, ECX, 20, None},
    {"movbe", 1, 0, ECX, 22, None},
    {"popcnt", 1, 0, ECX, 23, None},
    {"aes", 1, 0, ECX, 25, None},
    {"xsave", 1, 0, ECX, 26, None},
    {"avx", 1, 0, ECX, 28, Avx},
    {"f16c", 1, 0, ECX, 29, Avx},
    {"rdrnd", 1, 0, ECX, 30, None},
    {"fsgsbase", 7, 0, EBX, 0, None},
    {"bmi", 7, 0, EBX, 3, None},
    {"avx2", 7, 0, EBX, 5, Avx},
    {"bmi2", 7, 0, EBX, 8, None},
    {"invpcid", 7, 0, EBX, 10, None},
    {"avx512f", 7, 0, EBX, 16, Avx512},
    {"avx512dq", 7, 0, EBX, 17, Avx512},
    {"rdseed", 7, 0, EBX, 18, None},
    {"adx", 7, 0, EBX, 19, None},
    {"avx512ifma", 7, 0, EBX, 21, Avx512},
    {"clflushopt", 7, 0, EBX, 23, None},
    {"clwb", 7, 0, EBX, 24, None},
    {"avx512cd", 7, 0, EBX, 28, Avx512},
    {"sha", 7, 0, EBX, 29, None},
    {"avx512bw", 7, 0, EBX, 30, Avx512},
    {"avx512vl", 7, 0, EBX, 31, Avx512},
    {"avx512vbmi", 7, 0, ECX, 1, Avx512},
    {"avx512vbmi2", 7, 0, ECX, 6, Avx512},
    {"gfni", 7, 0, ECX, 8, None},
    {"vaes", 7, 0, ECX, 9, Avx},
    {"vpclmulqdq", 7, 0, ECX, 10, Avx},
    {"avx512vnni", 7, 0, ECX, 11, Avx512},
    {"avx512bitalg", 7, 0, ECX, 12, Avx512},
    {"avx512vpopcntdq", 7, 0, ECX, 14, Avx512},
    {"rdpid", 7, 0, ECX, 22, None},
    {"avx512vp2intersect", 7, 0, EDX, 8, Avx512},
    {"avx512fp16", 7, 0, EDX, 23, Avx512},
    {"avxvnni", 7, 1, EAX, 4, Avx},
    {"avx512bf16", 7, 1, EAX, 5, Avx512},
    {"xsaveopt", 0xD, 1, EAX, 0, None},
    {"xsavec", 0xD, 1, EAX, 1, None},
    {"xsaves", 0xD, 1, EAX, 3, None},
    {"sahf", kExt, 0, ECX, 0, None},
    {"lzcnt", kExt, 0, ECX, 5, None},
    {"sse4a", kExt, 0, ECX, 6, None},
    {"prfchw", kExt, 0, ECX, 8, None},
    {"xop", kExt, 0, ECX, 11, Avx},
    {"fma4", kExt, 0, ECX, 16, Avx},
    {"tbm", kExt, 0, ECX, 21, None},
};

/// CPUID leaf `Leaf`/`Subleaf`, or zeros where the CPU has no such leaf.
void cpuid(uint32_t Leaf, uint32_t Subleaf, uint32_t Out[4]) {
  Out[0] = Out[1] = Out[2] = Out[3] = 0;
  const uint32_t Max = __get_cpuid_max(Leaf & 0x80000000u, nullptr);
  if (Max >= Leaf)
    __cpuid_count(Leaf, Subleaf, Out[0], Out[1], Out[2], Out[3]);
}

/// XCR0, the register state the OS saves; 0 without OSXSAVE.
uint64_t savedState() {
  uint32_t R[4];
  cpuid(1, 0, R);
  if (!(R[ECX] & (1u << 27)))
    return 0;
  uint32_t Lo, Hi;
  __asm__("xgetbv" : "=a"(Lo), "=d"(Hi) : "c"(0));
  return (static_cast<uint64_t>(Hi) << 32) | Lo;
}

bool hasFeature(const FeatureBit &F) {
  static const uint64_t Xcr0 = savedState();
  constexpr uint64_t kAvxState = 0x6;     // SSE, AVX
  constexpr uint64_t kAvx512State = 0xE6; // and opmask, ZMM
  if (F.Needs == Avx && (Xcr0 & kAvxState) != kAvxState)
    return false;
  if (F.Needs == Avx512 && (Xcr0 & kAvx512State) != kAvx512State)
    return false;
  uint32_t R[4];
  cpuid(F.Leaf, F.Subleaf, R);
  return (R[F.R] >> F.Bit) & 1;
}

const FeatureBit *findFeature(std::string_view Name) {
  for (const FeatureBit &F : kFeatures)
    if (Name == F.Name)
      return &F;
  return nullptr;
}

#endif

} // namespace

std::vector<std::string> missingCpuFeatures(std::string_view Features) {
  std::vector<std::string> Missing;
#if defined(__x86_64__)
  while (!Features.empty()) {
    const size_t End = std::min(Features.find(','), Features.size());
    std::string_view F = Features.substr(0, End);
    Features.remove_prefix(std::min(End + 1, Features.size()));
    if (F.size() < 2 || F.front() != '+')
      continue;
    F.remove_prefix(1);
    if (const FeatureBit *Bit = findFeature(F); Bit && !hasFeature(*Bit))
      Missing.emplace_back(F);
  }
#else
  (void)Features;
#endif
  return Missing;
}

std::vector<std::string> checkedCpuFeatures() {
  std::vector<std::string> Names;
#if defined(__x86_64__)
  for (const FeatureBit &F : kFeatures)
    Names.emplace_back(F.Name);
#endif
  return Names;
}

} // namespace vmjit::vm
