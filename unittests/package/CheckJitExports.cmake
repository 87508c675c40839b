# Checks the dynamic symbols of an installed libvmjit_jit.so (cmake -P, with
# -DNM=nm -DLIBRARY=path): the JIT API is exported, and every exported
# symbol is vmjit's (its mangled name contains "vmjit"), so that none of
# the LLVM linked into the library can clash with another LLVM in the
# process (cmake/vmjit_jit.map).
execute_process(COMMAND ${NM} -D --defined-only --format=just-symbols ${LIBRARY}
  OUTPUT_VARIABLE _out RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${LIBRARY}")
endif()
string(REGEX REPLACE "\n$" "" _out "${_out}")
string(REPLACE "\n" ";" _symbols "${_out}")
list(LENGTH _symbols _count)
# vmjit::jit::enableJIT, vmjit::jit::tierManagerOf, vmjit::jit::hostInfo.
foreach(_api _ZN5vmjit3jit9enableJIT _ZN5vmjit3jit13tierManagerOf
             _ZN5vmjit3jit8hostInfoEv)
  set(_found ${_symbols})
  list(FILTER _found INCLUDE REGEX "^${_api}")
  if(NOT _found)
    message(FATAL_ERROR "${LIBRARY} does not export ${_api}")
  endif()
endforeach()
list(FILTER _symbols EXCLUDE REGEX "vmjit")
if(_symbols)
  list(LENGTH _symbols _n)
  list(SUBLIST _symbols 0 20 _first)
  list(JOIN _first "\n  " _shown)
  message(FATAL_ERROR "${LIBRARY} exports ${_n} symbols that are not vmjit's:\n  ${_shown}")
endif()
message(STATUS "${LIBRARY}: ${_count} exported symbols, all vmjit's")
