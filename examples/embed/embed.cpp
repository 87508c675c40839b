//===- embed.cpp - Using vmjit in-process from C++ -------------------------===//
//
// The in-process C++ API end to end: build a program with the builder (or
// load one from a file), create a VM, call functions, use the stateful API,
// save a function with bound arguments, and profile.
//
//   embed [PROGRAM.vmasm|PROGRAM.bin]
//
//===----------------------------------------------------------------------===//

#include "vmjit/runtime/error.h"
#include "vmjit/vm/builder.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/virtual_machine.h"

#include <cstdio>

using namespace vmjit;
using namespace vmjit::vm;

/// square_plus(x, y) = x * x + y, built with the builder API.
static std::shared_ptr<Executable> buildProgram() {
  ExecutableBuilder B;
  int64_t Mul = B.declarePacked("scalar.mul");
  int64_t Add = B.declarePacked("scalar.add");
  FunctionBuilder &F = B.beginFunction("square_plus", {"x", "y"});
  F.emitCall(2, Mul, {Arg::reg(0), Arg::reg(0)});
  F.emitCall(3, Add, {Arg::reg(2), Arg::reg(1)});
  F.emitRet(3);
  B.endFunction();
  return B.finish(); // verified
}

int main(int Argc, char **Argv) {
  try {
    std::shared_ptr<Executable> Exe =
        Argc > 1 ? loadProgram(Argv[1]) : buildProgram();
    auto VM = VirtualMachine::create(Exe);
    if (Argc > 1) {
      std::printf("%s: main(10) = %s\n", Argv[1],
                  std::string(VM->call("main", 10).typeName()).c_str());
      return 0;
    }

    // Plain calls with C++ arguments.
    std::printf("square_plus(7, 1) = %lld\n",
                static_cast<long long>(
                    VM->call("square_plus", 7, 1).cast<int64_t>()));

    // TVM's stateful API.
    VM->setInput("square_plus", {Any(int64_t(3)), Any(int64_t(4))});
    VM->invokeStateful("square_plus");
    std::printf("stateful: %lld\n", static_cast<long long>(
                                        VM->getOutput("square_plus")
                                            .cast<int64_t>()));

    // save_function: all arguments bound.
    VM->saveFunction("square_plus", "sq_5_5", {Any(int64_t(5)), Any(int64_t(5))});
    std::printf("saved: %lld\n", static_cast<long long>(
                                     VM->getFunction("sq_5_5")().cast<int64_t>()));

    // The profiler.
    VM->setProfiling(true);
    for (int I = 0; I < 1000; ++I)
      VM->call("square_plus", I, 1);
    std::printf("%s", VM->profileTable().c_str());

    // Errors carry the VM frames and leave the VM usable.
    try {
      VM->call("square_plus", std::string("x"), 1);
    } catch (const Error &E) {
      std::printf("error: %s\n", E.format().c_str());
    }
    return 0;
  } catch (const Error &E) {
    std::fprintf(stderr, "embed: %s\n", E.format().c_str());
    return 1;
  }
}
