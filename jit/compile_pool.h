//===- compile_pool.h - The process's tier-2 compile threads ----*- C++ -*-===//
//
// Internal to the JIT library. Every TierManager queues its tier-2 compiles
// here: one process-wide pool of at most compileThreads() threads, started
// on demand (before, each manager had a thread of its own: 64 executables
// kept 64 idle threads). Jobs run in the order they were queued. Each job
// belongs to an owner (a manager) and gets the owner's cancellation flag:
// a job checks it between the phases of its compile and gives up when it
// is set, which is how a manager's destruction and the end of the process
// abandon a compile instead of waiting for it to finish.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_COMPILE_POOL_H
#define VMJIT_JIT_COMPILE_POOL_H

#include <atomic>
#include <functional>

namespace vmjit::jit {

/// What a job is given: set when its compile should stop (the owner is
/// going away, or the process is ending). Checked, never waited on.
using CancelFlag = std::atomic<bool>;

/// The number of pool threads: VMJIT_COMPILE_THREADS when set (1..64),
/// else half the hardware threads, at least 1 and at most 4.
int compileThreads() noexcept;

/// The pool's two queues. Short: tier-2 compiles (milliseconds), on up to
/// compileThreads() threads. Long: the kernel tier's compiles (seconds),
/// one at a time on a thread of their own, so that no tier-2 compile
/// waits behind one.
enum class CompileLane { Short, Long };

/// Queues `Job` for `Owner` in `Lane` and starts a thread for that lane if
/// none of its threads is idle and it has fewer than its limit. Returns
/// false, without queueing, once shutdownCompilePool() has run.
bool submitCompile(const void *Owner,
                   std::function<void(const CancelFlag &)> Job,
                   CompileLane Lane = CompileLane::Short);

/// Starts one pool thread now if none runs yet (so the first hot function
/// does not pay for creating it).
void warmCompilePool();

/// Waits until `Owner` has no job queued or running (after
/// shutdownCompilePool: none running, the queue being dropped).
void waitForCompiles(const void *Owner);

/// Drops `Owner`'s queued jobs, sets the cancellation flag of its running
/// ones and waits for those to return. Later submissions of `Owner` run
/// normally (the flag is per job).
void cancelCompiles(const void *Owner);

/// cancelCompiles without the wait: for an owner whose running jobs hold
/// what they use themselves, and whose end should not wait for a compile
/// (a running job stops at its next check, in the background).
void abandonCompiles(const void *Owner);

/// Registers shutdownCompilePool with atexit, once per process: a compile
/// still running when the process exits would run into LLVM's static
/// objects as they are destroyed (see stopBackgroundCompiles).
void shutdownCompilePoolAtExit();
/// For good: drops every queued job, cancels the running ones, waits for
/// them and stops the threads; later submissions are refused.
void shutdownCompilePool();

} // namespace vmjit::jit

#endif // VMJIT_JIT_COMPILE_POOL_H
