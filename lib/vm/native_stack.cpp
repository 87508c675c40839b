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

/// The stack the last check found the frame on, as [Limit, High): its
/// reserve excluded. Empty (Limit > High) until a check finds one, and
/// after a declaration changes.
struct FastRange {
  uintptr_t Limit = UINTPTR_MAX, High = 0;
};
thread_local FastRange Fast;

/// The thread's own stack, read once per thread.
const StackBounds &ownStack() noexcept {
  thread_local const StackBounds Own = threadStack();
  return Own;
}

/// Fills Fast from the stack holding `SP`, declared or the thread's own.
[[gnu::noinline]] bool findStack(uintptr_t SP) noexcept {
  const StackBounds *Known[] = {&Declared, &ownStack()};
  for (const StackBounds *B : Known) {
    if (SP < B->Low || SP >= B->High)
      continue;
    Fast.Limit = B->Low + nativeStackReserve(B->High - B->Low);
    Fast.High = B->High;
    return SP >= Fast.Limit;
  }
  return false; // a stack vmjit does not know
}

} // namespace

size_t nativeStackReserve(size_t Size) noexcept {
  constexpr size_t kMin = 128 * 1024, kMax = 256 * 1024;
  return std::max(kMin, std::min(Size / 4, kMax));
}

void setNativeStack(void *Base, size_t Size) noexcept {
  Declared.Low = Size ? reinterpret_cast<uintptr_t>(Base) : 0;
  Declared.High = Size ? Declared.Low + Size : 0;
  Fast = FastRange();
}

NativeStackScope::NativeStackScope(void *Base, size_t Size) noexcept
    : PrevLow(Declared.Low), PrevHigh(Declared.High) {
  setNativeStack(Base, Size);
}

NativeStackScope::~NativeStackScope() {
  setNativeStack(reinterpret_cast<void *>(PrevLow), PrevHigh - PrevLow);
}

uintptr_t nativeStackLimit() noexcept { return Fast.Limit; }

bool nativeStackAvailable() noexcept {
  // Every native entry asks: one range check on the stack found last.
  const auto SP = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (SP >= Fast.Limit && SP < Fast.High) [[likely]]
    return true;
  return findStack(SP);
}

bool nativeStackNearlyExhausted() noexcept {
  const auto SP = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (SP >= Fast.Limit && SP < Fast.High) [[likely]]
    return false; // above the reserve of the stack found last
  const StackBounds *Known[] = {&Declared, &ownStack()};
  for (const StackBounds *B : Known)
    if (SP >= B->Low && SP < B->High)
      return SP < B->Low + nativeStackReserve(B->High - B->Low) / 2;
  return false; // a stack vmjit does not know: nothing to go by
}

uintptr_t availableNativeStackLimit() noexcept {
  const auto SP = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const FastRange &R = Fast; // one lookup of the thread's state
  if (SP >= R.Limit && SP < R.High) [[likely]]
    return R.Limit;
  return findStack(SP) ? Fast.Limit : 0;
}

} // namespace vmjit::vm
