//===- error.cpp - Errors, the raised-error slot, the C error API ----------===//

#include "vmjit/runtime/error.h"

#include <fmt/format.h>
#include <mutex>
#include <new>

namespace vmjit {
namespace {
/// This thread's raised error: set by a failing safe call, taken by its
/// caller.
thread_local ObjectPtr<Object> RaisedError;

std::mutex ForeignMutex;
std::vector<std::function<std::optional<Error>()>> &foreignSources() {
  static auto *Sources = new std::vector<std::function<std::optional<Error>()>>;
  return *Sources;
}

std::optional<Error> takeForeignError() {
  std::lock_guard Lock(ForeignMutex);
  for (auto &Take : foreignSources())
    if (std::optional<Error> E = Take())
      return E;
  return std::nullopt;
}
} // namespace

void addForeignErrorSource(std::function<std::optional<Error>()> Take) {
  std::lock_guard Lock(ForeignMutex);
  foreignSources().push_back(std::move(Take));
}

void FrameTrace::push(Line L) {
  if (Head.size() < kHeadLines) {
    Head.push_back(std::move(L));
    return;
  }
  if (Tail.size() < kTailLines) {
    Tail.push_back(std::move(L));
    return;
  }
  // The ring is full: its oldest line joins the omitted ones.
  Omitted += Tail[TailStart].Frames;
  Tail[TailStart] = std::move(L);
  TailStart = (TailStart + 1) % kTailLines;
}

FrameTrace::Line &FrameTrace::newest() {
  if (Tail.empty())
    return Head.back();
  // A full ring's newest line is the one before its oldest.
  return Tail[(TailStart + Tail.size() - 1) % Tail.size()];
}

void FrameTrace::add(std::string Frame) {
  ++Count;
  if (Count > 1 && Frame == LastFrame) {
    if (++Run <= kShownRepeats)
      return push({std::move(Frame), 1});
    // From the second extra repeat on, the newest line is this run's
    // "[repeated]" line.
    if (Run > kShownRepeats + 1)
      return void(++newest().Frames);
    return push({"", 1});
  }
  Run = 1;
  LastFrame = Frame;
  push({std::move(Frame), 1});
}

std::vector<std::string> FrameTrace::lines() const {
  auto Text = [](const Line &L) {
    if (!L.Text.empty())
      return L.Text;
    return fmt::format("[previous frame repeated {} more time{}]", L.Frames,
                       L.Frames == 1 ? "" : "s");
  };
  std::vector<std::string> Out;
  for (const Line &L : Head)
    Out.push_back(Text(L));
  if (Omitted)
    Out.push_back(fmt::format("[{} frame{} omitted]", Omitted,
                              Omitted == 1 ? "" : "s"));
  for (size_t I = 0; I < Tail.size(); ++I)
    Out.push_back(Text(Tail[(TailStart + I) % Tail.size()]));
  return Out;
}

std::string Error::format() const {
  std::string S = kind() + ": " + message();
  for (const std::string &F : frames())
    S += "\n  " + F;
  return S;
}

void throwError(std::string Kind, std::string Message) {
  throw Error(std::move(Kind), std::move(Message));
}

void setRaisedError(const Error &E) noexcept { RaisedError = E.ptr(); }

Error takeRaisedError() noexcept {
  ObjectPtr<Object> P = std::move(RaisedError);
  if (P && P->typeIndex() == kVMJITError)
    return Error(std::move(P));
  try {
    if (std::optional<Error> E = takeForeignError())
      return std::move(*E);
    return Error("InternalError",
                 "a safe call failed without raising an error");
  } catch (...) {
    // Out of memory while reporting an error: nothing better to give.
    std::terminate();
  }
}

void throwRaisedError() { throw takeRaisedError(); }

namespace detail {
int raiseCurrentException() noexcept {
  try {
    throw;
  } catch (const Error &E) {
    setRaisedError(E);
  } catch (const std::bad_alloc &) {
    VMJITErrorSetRaisedFromCStr("MemoryError", "out of memory");
  } catch (const std::exception &E) {
    VMJITErrorSetRaisedFromCStr("InternalError", E.what());
  } catch (...) {
    VMJITErrorSetRaisedFromCStr("InternalError", "unknown C++ exception");
  }
  return -1;
}
} // namespace detail

} // namespace vmjit

using namespace vmjit;

extern "C" {

void VMJITErrorSetRaised(VMJITObject *Err) {
  RaisedError = ObjectPtr<Object>::share(Object::fromRaw(Err));
}

void VMJITErrorSetRaisedFromCStr(const char *Kind, const char *Message) {
  try {
    RaisedError = Error(Kind ? Kind : "RuntimeError", Message ? Message : "")
                      .ptr();
  } catch (...) {
    // Allocation failed; keep whatever was raised before rather than throw
    // across the C boundary.
  }
}

void VMJITErrorMoveFromRaised(VMJITObject **Result) {
  Object *P = RaisedError.release();
  *Result = P ? P->raw() : nullptr;
}

int VMJITErrorGetInfo(VMJITObject *Err, VMJITByteArray *Kind,
                      VMJITByteArray *Message) {
  if (!Err || Err->type_index != kVMJITError)
    return -1;
  auto *E = reinterpret_cast<ErrorObj *>(Err);
  if (Kind)
    *Kind = {E->Kind.data(), E->Kind.size()};
  if (Message)
    *Message = {E->Message.data(), E->Message.size()};
  return 0;
}

} // extern "C"
