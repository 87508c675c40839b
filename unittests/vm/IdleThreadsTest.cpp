// Tests that a process running only the interpreter has one thread: vmjit
// starts no helper thread of its own in bytecode mode, and OpenBLAS (whose
// pool threads spin in sched_yield after they start) is loaded only at the
// first matrix product. The counts are the process's: the test needs a
// process of its own, which ctest gives each GoogleTest case.
#include "../ProcessThreads.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <fstream>
#include <gtest/gtest.h>
#include <string>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

bool openBlasMapped() {
  std::ifstream Maps("/proc/self/maps");
  std::string Line;
  while (std::getline(Maps, Line))
    if (Line.find("libopenblas") != std::string::npos)
      return true;
  return false;
}

const char *kProgram = R"(
.func count(n)
  %i = call vm.builtin.copy(0)
loop:
  %c = call scalar.lt(%i, %n)
  if %c else done
  %i = call scalar.add(%i, 1)
  goto loop
done:
  ret %i
.end
.func product(a, b)
  %c = call tensor.matmul(%a, %b)
  ret %c
.end
)";

} // namespace

TEST(IdleThreadsTest, InterpreterAloneRunsOnOneThread) {
  auto VM = VirtualMachine::create(assemble(kProgram, "idle.vmasm"));
  EXPECT_EQ(VM->call("count", 200000).cast<int64_t>(), 200000);
  EXPECT_EQ(test::processThreadCount(), 1);
  EXPECT_FALSE(openBlasMapped());

  // The first product loads OpenBLAS, and the result is right.
  Tensor A = Tensor::empty({2, 3}, DLDataType{kDLFloat, 32, 1});
  Tensor B = Tensor::empty({3, 1}, DLDataType{kDLFloat, 32, 1});
  for (int I = 0; I < 6; ++I)
    A.data<float>()[I] = float(I);
  for (int I = 0; I < 3; ++I)
    B.data<float>()[I] = 1.0f;
  Tensor C = VM->call("product", A, B).cast<Tensor>();
  EXPECT_TRUE(openBlasMapped());
  EXPECT_EQ(C.data<float>()[0], 3.0f);
  EXPECT_EQ(C.data<float>()[1], 12.0f);
}
