// A format reader that includes the interpreter: the layering check must
// refuse it (unittests/layering/CMakeLists.txt).
#include "vmjit/vm/virtual_machine.h"
