//===- fuzz_support.cpp - Failure reporting for the fuzz targets ----------===//
//
// What the libFuzzer entry points share: a bug becomes a message and an
// abort(), which libFuzzer records (with the input) as a crash.
//
//===----------------------------------------------------------------------===//

#include "fuzz_targets.h"

#include "vmjit/runtime/error.h"

#include <cstdio>
#include <cstdlib>
#include <exception>

namespace vmjit::fuzz {

void fail(const std::string &What) { throw FuzzFailure(What); }

void runFuzzerInput(Outcome (*Target)(std::span<const uint8_t>),
                    const uint8_t *Data, size_t Size) {
  try {
    Target(std::span<const uint8_t>(Data, Size));
    return;
  } catch (const FuzzFailure &F) {
    std::fprintf(stderr, "vmjit fuzz: property violated: %s\n", F.what());
  } catch (const Error &E) {
    std::fprintf(stderr, "vmjit fuzz: vmjit::Error escaped the target: %s\n",
                 E.format().c_str());
  } catch (const std::exception &E) {
    std::fprintf(stderr, "vmjit fuzz: non-vmjit exception: %s\n", E.what());
  } catch (...) {
    std::fprintf(stderr, "vmjit fuzz: unknown exception\n");
  }
  std::abort();
}

} // namespace vmjit::fuzz
