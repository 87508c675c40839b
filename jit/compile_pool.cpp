//===- compile_pool.cpp - The process's background compile threads --------===//

#include "compile_pool.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace vmjit::jit {

int compileThreads() noexcept {
  if (const char *Env = std::getenv("VMJIT_COMPILE_THREADS"))
    if (long V = std::atol(Env); V >= 1 && V <= 64)
      return static_cast<int>(V);
  const unsigned HW = std::thread::hardware_concurrency();
  return std::clamp(static_cast<int>(HW / 2), 1, 4);
}

namespace {

struct Job {
  const void *Owner;
  std::function<void(const CancelFlag &)> Run;
  /// Shared with cancelCompiles while the job runs.
  std::shared_ptr<CancelFlag> Cancel = std::make_shared<CancelFlag>(false);
};

class Pool {
public:
  bool submit(const void *Owner, std::function<void(const CancelFlag &)> F,
              CompileLane L) {
    {
      std::lock_guard Lock(Mutex);
      if (Stopped)
        return false;
      Lane &Q = lane(L);
      Q.Queue.push_back(Job{Owner, std::move(F)});
      if (Q.Idle == 0 && Q.Threads < laneThreads(L))
        startThreadLocked(L);
    }
    // The threads of both lanes wait on Wake: wake them all (a handful).
    Wake.notify_all();
    return true;
  }

  void warm() {
    std::lock_guard Lock(Mutex);
    if (!Stopped && lane(CompileLane::Short).Threads == 0)
      startThreadLocked(CompileLane::Short);
  }

  void wait(const void *Owner) {
    std::unique_lock Lock(Mutex);
    Done.wait(Lock, [&] { return !hasQueued(Owner) && !hasRunning(Owner); });
  }

  void cancel(const void *Owner, bool Wait) {
    std::unique_lock Lock(Mutex);
    for (Lane &Q : Lanes)
      std::erase_if(Q.Queue, [&](const Job &J) { return J.Owner == Owner; });
    Done.notify_all(); // a waitForCompiles(Owner) may be done now
    for (const Job &J : Running)
      if (J.Owner == Owner)
        J.Cancel->store(true, std::memory_order_relaxed);
    if (Wait)
      Done.wait(Lock, [&] { return !hasRunning(Owner); });
  }

  void shutdown() {
    std::vector<std::thread> Joined;
    {
      std::lock_guard Lock(Mutex);
      Stopped = true;
      for (Lane &Q : Lanes)
        Q.Queue.clear();
      for (const Job &J : Running)
        J.Cancel->store(true, std::memory_order_relaxed);
      Joined.swap(Threads);
    }
    Wake.notify_all();
    for (std::thread &T : Joined)
      if (T.joinable())
        T.join();
    Done.notify_all();
  }

private:
  /// One queue and its threads: short jobs (tier 2, milliseconds) on up to
  /// compileThreads() threads, long ones (kernels, seconds) on one.
  struct Lane {
    std::deque<Job> Queue;
    int Idle = 0;
    int Threads = 0;
  };
  Lane &lane(CompileLane L) { return Lanes[static_cast<int>(L)]; }
  static int laneThreads(CompileLane L) {
    return L == CompileLane::Short ? compileThreads() : 1;
  }
  bool hasQueued(const void *Owner) const {
    return std::any_of(std::begin(Lanes), std::end(Lanes), [&](const Lane &Q) {
      return std::any_of(Q.Queue.begin(), Q.Queue.end(),
                         [&](const Job &J) { return J.Owner == Owner; });
    });
  }
  bool hasRunning(const void *Owner) const {
    return std::any_of(Running.begin(), Running.end(),
                       [&](const Job &J) { return J.Owner == Owner; });
  }

  void startThreadLocked(CompileLane L) {
    ++lane(L).Threads;
    Threads.emplace_back([this, L] { work(lane(L)); });
  }

  void work(Lane &Q) {
    std::unique_lock Lock(Mutex);
    while (true) {
      ++Q.Idle;
      Wake.wait(Lock, [&] { return Stopped || !Q.Queue.empty(); });
      --Q.Idle;
      if (Stopped)
        return;
      auto It = Running.insert(Running.end(), std::move(Q.Queue.front()));
      Q.Queue.pop_front();
      Lock.unlock();
      It->Run(*It->Cancel);
      Lock.lock();
      Running.erase(It);
      Done.notify_all();
    }
  }

  std::mutex Mutex;
  std::condition_variable Wake, Done;
  Lane Lanes[2];
  std::list<Job> Running;
  std::vector<std::thread> Threads;
  bool Stopped = false;
};

/// Never destroyed: threads may still wait on it while statics are torn
/// down (shutdownCompilePool has stopped them by then in every path that
/// the JIT controls).
Pool &pool() {
  static Pool *P = new Pool();
  return *P;
}

} // namespace

bool submitCompile(const void *Owner,
                   std::function<void(const CancelFlag &)> Job,
                   CompileLane Lane) {
  return pool().submit(Owner, std::move(Job), Lane);
}
void warmCompilePool() { pool().warm(); }
void waitForCompiles(const void *Owner) { pool().wait(Owner); }
void cancelCompiles(const void *Owner) { pool().cancel(Owner, true); }
void abandonCompiles(const void *Owner) { pool().cancel(Owner, false); }
void shutdownCompilePool() { pool().shutdown(); }

void shutdownCompilePoolAtExit() {
  static std::once_flag AtExit;
  std::call_once(AtExit, [] { std::atexit(shutdownCompilePool); });
}

} // namespace vmjit::jit
