//===- native_stack.cpp - Where native code may run ----------------------===//
//
// A thread's stack bounds: declared (setNativeStack) or its own, read once
// with pthread_getattr_np. Off both (an undeclared fiber stack) or where
// that call fails, nothing is known, and native code is not entered.
//
//===----------------------------------------------------------------------===//

#include "vmjit/vm/native_stack.h"

#include <algorithm>
#include <pthread.h>

namespace vmjit::vm {

namespace {

struct StackBounds {
  uintptr_t Low = 0, High = 0; // [Low, High); empty if unknown
};

StackBounds threadStack() noexcept {
  StackBounds B;
  pthread_attr_t Attr;
  if (pthread_getattr_np(pthread_self(), &Attr) != 0)
    return B;
  void *Addr;
  size_t Size;
  if (pthread_attr_getstack(&Attr, &Addr, &Size) == 0) {
    B.Low = reinterpret_cast<uintptr_t>(Addr);
    B.High = B.Low + Size;
  }
  pthread_attr_destroy(&Attr);
  return B;
}

thread_local StackBounds Declared;

/// 1 if `SP` lies in `B` above its reserve, 0 if in its reserve, -1 if not
/// in `B` at all.
int aboveReserve(const StackBounds &B, uintptr_t SP) noexcept {
  if (SP < B.Low || SP >= B.High)
    return -1;
  return SP >= B.Low + nativeStackReserve(B.High - B.Low) ? 1 : 0;
}

} // namespace

size_t nativeStackReserve(size_t Size) noexcept {
  constexpr size_t kMin = 128 * 1024, kMax = 256 * 1024;
  return std::max(kMin, std::min(Size / 4, kMax));
}

void setNativeStack(void *Base, size_t Size) noexcept {
  Declared.Low = Size ? reinterpret_cast<uintptr_t>(Base) : 0;
  Declared.High = Size ? Declared.Low + Size : 0;
}

NativeStackScope::NativeStackScope(void *Base, size_t Size) noexcept
    : PrevLow(Declared.Low), PrevHigh(Declared.High) {
  setNativeStack(Base, Size);
}

NativeStackScope::~NativeStackScope() {
  Declared.Low = PrevLow;
  Declared.High = PrevHigh;
}

bool nativeStackAvailable() noexcept {
  thread_local const StackBounds Own = threadStack();
  const auto SP = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  int In = aboveReserve(Declared, SP);
  if (In < 0)
    In = aboveReserve(Own, SP);
  return In > 0;
}

} // namespace vmjit::vm
