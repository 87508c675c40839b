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
  bool submit(const void *Owner, std::function<void(const CancelFlag &)> F) {
    {
      std::lock_guard Lock(Mutex);
      if (Stopped)
        return false;
      Queue.push_back(Job{Owner, std::move(F)});
      if (Idle == 0 && static_cast<int>(Threads.size()) < compileThreads())
        startThreadLocked();
    }
    Wake.notify_one();
    return true;
  }

  void warm() {
    std::lock_guard Lock(Mutex);
    if (!Stopped && Threads.empty())
      startThreadLocked();
  }

  void wait(const void *Owner) {
    std::unique_lock Lock(Mutex);
    Done.wait(Lock, [&] { return !hasQueued(Owner) && !hasRunning(Owner); });
  }

  void cancel(const void *Owner) {
    std::unique_lock Lock(Mutex);
    std::erase_if(Queue, [&](const Job &J) { return J.Owner == Owner; });
    Done.notify_all(); // a waitForCompiles(Owner) may be done now
    for (const Job &J : Running)
      if (J.Owner == Owner)
        J.Cancel->store(true, std::memory_order_relaxed);
    Done.wait(Lock, [&] { return !hasRunning(Owner); });
  }

  void shutdown() {
    std::vector<std::thread> Joined;
    {
      std::lock_guard Lock(Mutex);
      Stopped = true;
      Queue.clear();
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
  bool hasQueued(const void *Owner) const {
    return std::any_of(Queue.begin(), Queue.end(),
                       [&](const Job &J) { return J.Owner == Owner; });
  }
  bool hasRunning(const void *Owner) const {
    return std::any_of(Running.begin(), Running.end(),
                       [&](const Job &J) { return J.Owner == Owner; });
  }

  void startThreadLocked() {
    Threads.emplace_back([this] { work(); });
  }

  void work() {
    std::unique_lock Lock(Mutex);
    while (true) {
      ++Idle;
      Wake.wait(Lock, [&] { return Stopped || !Queue.empty(); });
      --Idle;
      if (Stopped)
        return;
      auto It = Running.insert(Running.end(), std::move(Queue.front()));
      Queue.pop_front();
      Lock.unlock();
      It->Run(*It->Cancel);
      Lock.lock();
      Running.erase(It);
      Done.notify_all();
    }
  }

  std::mutex Mutex;
  std::condition_variable Wake, Done;
  std::deque<Job> Queue;
  std::list<Job> Running;
  std::vector<std::thread> Threads;
  int Idle = 0;
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
                   std::function<void(const CancelFlag &)> Job) {
  return pool().submit(Owner, std::move(Job));
}
void warmCompilePool() { pool().warm(); }
void waitForCompiles(const void *Owner) { pool().wait(Owner); }
void cancelCompiles(const void *Owner) { pool().cancel(Owner); }
void shutdownCompilePool() { pool().shutdown(); }

} // namespace vmjit::jit
