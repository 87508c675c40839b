# The Python package (python/): VMJIT_BUILD_PYTHON is on by default when a
# Python 3 interpreter with pybind11 and its development headers is found
# (Debian: python3-dev, python3-pybind11, pybind11-dev), and off in
# sanitizer builds (a sanitizer runtime cannot be loaded into an
# uninstrumented interpreter).
#
# The interpreter: Python3_EXECUTABLE when given; else the first of the
# `python3` on PATH and /usr/bin/python3 that can import pybind11 (the
# first on PATH may be another installation, a pyenv shim say, without
# Debian's packages).
if(NOT DEFINED Python3_EXECUTABLE)
  find_program(_vmjit_path_python3 python3)
  foreach(_cand ${_vmjit_path_python3} /usr/bin/python3)
    if(EXISTS "${_cand}")
      execute_process(COMMAND ${_cand} -c "import pybind11"
        RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(Python3_EXECUTABLE ${_cand} CACHE FILEPATH "The Python of the vmjit package")
        break()
      endif()
    endif()
  endforeach()
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
set(_vmjit_python_found OFF)
if(Python3_FOUND)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c
    "import pybind11; print(pybind11.get_cmake_dir())"
    OUTPUT_VARIABLE _pybind11_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  find_package(pybind11 CONFIG QUIET HINTS ${_pybind11_dir})
  if(pybind11_FOUND)
    set(_vmjit_python_found ON)
  endif()
endif()
set(_vmjit_python_default ${_vmjit_python_found})
if(VMJIT_SANITIZE)
  set(_vmjit_python_default OFF)
endif()
option(VMJIT_BUILD_PYTHON "Build the Python package (python/)" ${_vmjit_python_default})
if(VMJIT_BUILD_PYTHON AND NOT _vmjit_python_found)
  message(FATAL_ERROR "VMJIT_BUILD_PYTHON needs Python 3 with its headers and "
    "pybind11 (Debian: python3-dev python3-pybind11 pybind11-dev; "
    "scripts/install-deps.sh installs them)")
endif()
