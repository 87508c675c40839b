# Compiler set-up shared by every vmjit target: ccache, warnings, sanitizers.

# Paths under the source tree are hashed relative to it (base_dir), and the
# build directory is not hashed (hash_dir off), so two clones of the tree,
# a developer's and CI's, share cached objects. The price: debug info of a
# cached object names the directory it was first compiled in.
find_program(VMJIT_CCACHE ccache)
if(VMJIT_CCACHE)
  set(_vmjit_ccache env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} CCACHE_NOHASHDIR=1
    ${VMJIT_CCACHE})
  set(CMAKE_C_COMPILER_LAUNCHER ${_vmjit_ccache})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_vmjit_ccache})
endif()

# Warnings go on vmjit's own targets through this interface library, so
# that third-party headers and consumers of the installed package are not
# affected.
add_library(vmjit_warnings INTERFACE)
target_compile_options(vmjit_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wnon-virtual-dtor -Wimplicit-fallthrough -Wno-unused-parameter>
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wno-unused-parameter>)
if(VMJIT_WERROR)
  target_compile_options(vmjit_warnings INTERFACE -Werror)
endif()

# Position-independent code (every target is) may call and inline its own
# functions directly: vmjit's symbols are never interposed. GCC otherwise
# assumes they may be and keeps every such call out of line.
add_compile_options(-fno-semantic-interposition)

if(VMJIT_SANITIZE)
  if(VMJIT_SANITIZE STREQUAL "address")
    set(_vmjit_san "-fsanitize=address,undefined")
  elseif(VMJIT_SANITIZE STREQUAL "undefined")
    set(_vmjit_san "-fsanitize=undefined")
  elseif(VMJIT_SANITIZE STREQUAL "thread")
    set(_vmjit_san "-fsanitize=thread")
  else()
    message(FATAL_ERROR "VMJIT_SANITIZE must be address, undefined or thread, not '${VMJIT_SANITIZE}'")
  endif()
  add_compile_options(${_vmjit_san} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  # Line tables only (after the build type's -g, so it wins): a
  # sanitizer's report still names file and line of every frame, and the
  # sanitizer builds (CI builds three) compile and link much faster
  # without full debug info.
  if(CMAKE_BUILD_TYPE MATCHES "RelWithDebInfo|Debug")
    add_compile_options(-g1)
  endif()
  # Clang's -fsanitize=function (part of "undefined") reads the 8 bytes
  # before every indirect call target for a type signature; JIT code has
  # none, and baseline code may start at the first byte of a mapping.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND NOT VMJIT_SANITIZE STREQUAL "thread")
    add_compile_options(-fno-sanitize=function)
  endif()
  add_link_options(${_vmjit_san})
  # For projects built against this tree in tests (the package test).
  set(VMJIT_SANITIZER_FLAGS "${_vmjit_san}")
endif()

# vmjit_add_library(NAME [STATIC|SHARED] SOURCES...): a library of the
# project with its vmjit:: alias, warnings and the include directory.
function(vmjit_add_library name kind)
  add_library(${name} ${kind} ${ARGN})
  string(REPLACE "vmjit_" "" _short ${name})
  add_library(vmjit::${_short} ALIAS ${name})
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  # The warnings as compile options, not a link dependency: the exported
  # targets (install and build tree) then name nothing of this project.
  target_compile_options(${name} PRIVATE
    $<TARGET_PROPERTY:vmjit_warnings,INTERFACE_COMPILE_OPTIONS>)
  set_target_properties(${name} PROPERTIES EXPORT_NAME ${_short})
endfunction()
