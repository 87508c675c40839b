# Finds LLVM 19 (Debian's llvm-19-dev) for the JIT tier. Components are
# linked statically into libvmjit_jit.so and hidden there (jit/CMakeLists.txt,
# cmake/vmjit_jit.map): a vmjit process starts in ~8 ms instead of ~25 ms
# with the shared libLLVM, start-up is visible at the command line, and
# programs linking vmjit::jit (in the tree or from an install) need nothing
# of LLVM.
find_package(LLVM 19.1 CONFIG REQUIRED
  HINTS /usr/lib/llvm-19/lib/cmake/llvm)
message(STATUS "Using LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")
separate_arguments(VMJIT_LLVM_DEFINITIONS NATIVE_COMMAND "${LLVM_DEFINITIONS}")
