//===- abi_tour.cpp - The value and call ABI, end to end -------------------===//
//
// A tour of what every vmjit layer builds on: it loads a kernel library
// written in C, calls its exports through the safe-call ABI, passes tensors
// and strings, shows an error crossing the boundary with its message kept,
// a typed C++ function rejecting a wrong argument, and a zero-copy DLPack
// round trip.
//
//   abi_tour [PATH/libvmjit_demo_kernels.so]
//
//===----------------------------------------------------------------------===//

#include "vmjit/runtime/library.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"

#include <cstdio>
#include <string>

using namespace vmjit;

static std::string defaultLibraryPath(const char *Argv0) {
  std::string Self = Argv0;
  size_t Slash = Self.rfind('/');
  std::string Dir = Slash == std::string::npos ? "." : Self.substr(0, Slash);
  return Dir + "/../lib/libvmjit_demo_kernels.so";
}

int main(int Argc, char **Argv) {
  std::string Path = Argc > 1 ? Argv[1] : defaultLibraryPath(Argv[0]);
  try {
    auto Lib = KernelLibrary::load(Path);
    std::printf("loaded %s, exporting:", Path.c_str());
    for (const std::string &Name : Lib->functionNames())
      std::printf(" %s", Name.c_str());
    std::printf("\n");

    Function Add = *Lib->find("demo_add_int");
    std::printf("demo_add_int(2, 40) = %lld\n",
                static_cast<long long>(Add(2, 40).cast<int64_t>()));

    Tensor T = Tensor::empty({2, 3}, dtype::Float32);
    for (int I = 0; I < 6; ++I)
      T.data<float>()[I] = static_cast<float>(I + 1);
    Function Sum = *Lib->find("demo_sum_f32");
    std::printf("demo_sum_f32(float32[2,3] = 1..6) = %g\n",
                Sum(T).cast<double>());

    Function Identity = *Lib->find("demo_identity");
    Any S = Identity(String("a string longer than seven bytes"));
    std::printf("demo_identity(str) = \"%s\" (a %s object)\n",
                S.cast<std::string>().c_str(),
                std::string(S.typeName()).c_str());

    try {
      (*Lib->find("demo_fail"))(7);
    } catch (const Error &E) {
      std::printf("demo_fail(7) raised %s\n", E.format().c_str());
    }

    Registry::global().addTyped("tour.scale", [](Tensor X, double K) {
      Tensor Out = Tensor::empty(X.shape(), X.dtype());
      for (int64_t I = 0; I < X.numel(); ++I)
        Out.data<float>()[I] = static_cast<float>(X.data<float>()[I] * K);
      return Out;
    });
    Function Scale = *Registry::global().find("tour.scale");
    std::printf("tour.scale(T, 0.5) sums to %g\n",
                Sum(Scale(T, 0.5)).cast<double>());
    try {
      Scale(3, 0.5);
    } catch (const Error &E) {
      std::printf("tour.scale(3, 0.5) raised %s\n", E.format().c_str());
    }

    DLManagedTensor *Exported = T.toDLPack();
    Tensor Back = Tensor::fromDLPack(Exported);
    std::printf("DLPack round trip shares memory: %s\n",
                Back.data() == T.data() ? "yes" : "no");
    return 0;
  } catch (const Error &E) {
    std::fprintf(stderr, "abi_tour: %s\n", E.format().c_str());
    return 1;
  }
}
