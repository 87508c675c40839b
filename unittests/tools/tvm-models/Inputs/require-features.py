"""require-features.py LIB LOG FEATURES OUT: copies the `vmjit compile
--kernels` library LIB to OUT with the CPU features its manifest records
(the list `vmjit compile -v` printed into LOG: "... needs the CPU features
+adx,...") replaced by FEATURES, padded with NULs: a library compiled for
a CPU this one is not."""

import re
import sys

lib, log, features, out = sys.argv[1:5]
recorded = re.search(r"needs the CPU features (\S+)", open(log).read()).group(1)
old = recorded.encode() + b"\0"
new = features.encode() + b"\0"
assert len(new) <= len(old), "the new list is longer than the recorded one"
data = open(lib, "rb").read()
assert data.count(old) == 1, "the recorded list is not in the library once"
open(out, "wb").write(data.replace(old, new.ljust(len(old), b"\0")))
