// Uses the installed runtime: registers a typed function, calls it through
// the safe-call ABI, and checks the answer and a type error.
#include "vmjit/runtime/registry.h"

#include <cstdio>

int main() {
  using namespace vmjit;
  Registry::global().addTyped("consumer.twice", [](int64_t X) { return 2 * X; });
  Function F = *Registry::global().find("consumer.twice");
  if (F(21).cast<int64_t>() != 42)
    return 1;
  try {
    F(1.5);
    return 1;
  } catch (const Error &E) {
    std::printf("consumer ok: %s\n", E.what());
  }
  return 0;
}
