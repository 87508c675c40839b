//===- ProcessThreads.h - How many threads this process has ---*- C++ -*-===//
//
// Shared by the tests that check vmjit starts no thread it does not need
// (IdleThreadsTest) and bounds those it does (CompilePoolTest).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_UNITTESTS_PROCESSTHREADS_H
#define VMJIT_UNITTESTS_PROCESSTHREADS_H

#include <dirent.h>

namespace vmjit::test {

/// The threads of this process (the entries of /proc/self/task), or -1
/// when they cannot be listed.
inline int processThreadCount() {
  DIR *D = opendir("/proc/self/task");
  if (!D)
    return -1;
  int N = 0;
  while (dirent *E = readdir(D))
    if (E->d_name[0] != '.')
      ++N;
  closedir(D);
  return N;
}

} // namespace vmjit::test

#endif // VMJIT_UNITTESTS_PROCESSTHREADS_H
