# Helpers for argus's own tests, examples and benchmarks (never installed, never exported).
include_guard(GLOBAL)

# -std=c++20, not gnu++20 (tests/compile_fail runs the compiler the same way). A directory
# setting: it reaches argus's own targets, never a parent project's.
set(CMAKE_CXX_EXTENSIONS OFF)

# argus_dev: what every test, example and benchmark target links. Warnings are errors; no
# -Wpedantic, because kernel/ uses GCC/Clang vector extensions. ARGUS_NATIVE adds
# -march=native here only: the installed argus::argus target carries no -march.
add_library(argus_dev INTERFACE)
target_link_libraries(argus_dev INTERFACE argus::argus)
target_compile_options(argus_dev INTERFACE -Wall -Wextra -Werror)
if(ARGUS_NATIVE)
  target_compile_options(argus_dev INTERFACE -march=native)
endif()

# GCC's garbage collector: with its default thresholds it collects a heavy test TU's heap
# again and again for little memory. Put off until the heap reaches 4 GB (in practice never),
# the same compiles took 11 % less CPU (five test TUs, two rounds, each compile with and
# without in turn: 200 s against 178 s) for 15-28 % more peak memory (at most 1 GB, for
# unit.eval.differential). A build-time setting only: the code is the same. GCC only (Clang
# has no collector); argus_kernels takes it too.
set(ARGUS_DEV_COMPILER_FLAGS "")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(ARGUS_DEV_COMPILER_FLAGS --param=ggc-min-expand=100 --param=ggc-min-heapsize=4194304)
endif()
target_compile_options(argus_dev INTERFACE ${ARGUS_DEV_COMPILER_FLAGS})

# Flags for compiler runs made outside the build system (tests/compile_fail): the same
# warnings and -march as argus_dev, as a plain list.
set(ARGUS_DEV_FLAGS -Wall -Wextra -Werror)
if(ARGUS_NATIVE)
  list(APPEND ARGUS_DEV_FLAGS -march=native)
endif()

# ARGUS_COMPILED_KERNELS: the kernels are compiled once, at -O2, into argus_kernels
# (argus_add_kernel_library, argus/kernel/instances.hpp), and every test, example and
# benchmark links it: their own translation units then only compile argus's expression layer,
# which the presets build at -Og. Off in the `release` preset (the benchmarks compile the
# kernels in each TU at -O3, as a header-only user does). With ARGUS_BUILD_FUZZERS (the
# `asan` preset), tests/fuzz/CMakeLists.txt adds libFuzzer's coverage instrumentation to them.
#
# ARGUS_KERNEL_DISPATCH makes argus_kernels a dispatching library (argus_add_kernel_library(...
# DISPATCH)): the portable, AVX2+FMA and AVX-512 kernels side by side, one picked at run time.
# With ARGUS_NATIVE=OFF that is how a distribution builds argus, for any x86-64 machine; the
# `release` preset so configured gives the baseline benchmarks of docs/explanation/isa_dispatch.md:
#     cmake --preset release -B build/release-dispatch -DARGUS_NATIVE=OFF \
#           -DARGUS_COMPILED_KERNELS=ON -DARGUS_KERNEL_DISPATCH=ON
# The kernels compile at -O2, or at -O3 in a Release build (as the header-only benchmarks).
option(ARGUS_COMPILED_KERNELS "Tests, examples and benchmarks link the kernels compiled once" ON)
# The kernels' optimisation flags (a list), when not the default (-O2, -O3 in Release): the
# asan preset takes -O1 (the fuzzers it builds too need the kernels' speed) and -g0 (Clang
# spends a sixth of the instrumented kernels' compile on line tables; a report still names
# the kernel's function): docs/contributing/testing.md.
set(ARGUS_KERNEL_OPTIMIZATION "" CACHE STRING
    "Optimisation flags of the compiled kernels, a list (empty: -O2, -O3 in Release)")
option(ARGUS_KERNEL_DISPATCH
       "argus_kernels holds every instruction set's kernels and picks one at run time (with ARGUS_COMPILED_KERNELS)" OFF)
if(ARGUS_KERNEL_DISPATCH AND NOT ARGUS_COMPILED_KERNELS)
  message(FATAL_ERROR "ARGUS_KERNEL_DISPATCH needs ARGUS_COMPILED_KERNELS=ON")
endif()
if(ARGUS_COMPILED_KERNELS)
  if(ARGUS_KERNEL_DISPATCH)
    argus_add_kernel_library(argus_kernels DISPATCH)
  else()
    argus_add_kernel_library(argus_kernels)
  endif()
  set(_argus_kernel_optimization -O2)
  if(CMAKE_BUILD_TYPE STREQUAL "Release")
    set(_argus_kernel_optimization -O3)
  endif()
  if(ARGUS_KERNEL_OPTIMIZATION)
    set(_argus_kernel_optimization ${ARGUS_KERNEL_OPTIMIZATION})
  endif()
  target_compile_options(argus_kernels PRIVATE ${ARGUS_DEV_FLAGS} ${ARGUS_DEV_COMPILER_FLAGS}
                                               ${_argus_kernel_optimization})
  target_link_libraries(argus_dev INTERFACE argus_kernels)
endif()

# argus_path_name(<out> <file> <base_dir> [PREFIX <p>])
# Turns <base_dir>/a/b/c.cpp into "<p>.a.b.c" ("a.b.c" without PREFIX): the test naming scheme.
function(argus_path_name out file base_dir)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "PREFIX" "")
  cmake_path(RELATIVE_PATH file BASE_DIRECTORY "${base_dir}" OUTPUT_VARIABLE rel)
  cmake_path(REMOVE_EXTENSION rel LAST_ONLY)
  string(REPLACE "/" "." name "${rel}")
  if(DEFINED arg_PREFIX)
    set(name "${arg_PREFIX}.${name}")
  endif()
  set(${out} "${name}" PARENT_SCOPE)
endfunction()

# argus_tagged_line(<out> <file> <tag> <default> [JOIN <separator>])
# The text after the first "// <tag>: " line of <file>, or <default>. With JOIN, every such
# line's text, joined by <separator>: a value too long for one line of 100 columns takes several.
function(argus_tagged_line out file tag default)
  cmake_parse_arguments(PARSE_ARGV 4 arg "" "JOIN" "")
  if(DEFINED arg_JOIN)
    file(STRINGS "${file}" lines REGEX "^[ \t]*//[ \t]*${tag}:")
  else()
    file(STRINGS "${file}" lines REGEX "^[ \t]*//[ \t]*${tag}:" LIMIT_COUNT 1)
  endif()
  if(NOT lines)
    set(${out} "${default}" PARENT_SCOPE)
    return()
  endif()
  set(values "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[ \t]*//[ \t]*${tag}:[ \t]*(.*[^ \t])[ \t]*$")
      list(APPEND values "${CMAKE_MATCH_1}")
    else()
      # A tag with nothing after it, say a line that clang-format wrapped at 100 columns: the
      # default would silently stand in for it (a smoke test running every benchmark).
      message(FATAL_ERROR "${file}: its '// ${tag}:' line is empty; keep the tag and its value "
                          "on one line of at most 100 columns")
    endif()
  endforeach()
  list(JOIN values "${arg_JOIN}" value)
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# The optional headers: argus/io/ (safetensors reads its JSON header with nlohmann-json) and
# argus/viz/ (PNG through stb_image_write, Debian's libstb). Tests, examples and the
# header check link them through argus_dev; the argus::argus target never does. Only the tests
# and the examples include them, so a build of the benchmarks or the fuzzers alone (the
# release preset; ARGUS_BUILD_TESTS=OFF with ARGUS_BUILD_FUZZERS) neither needs nor looks for
# them: it configures where neither is installed (Ubuntu's libstb-dev, for one, ships no
# pkg-config file).
if(ARGUS_BUILD_TESTS OR ARGUS_BUILD_EXAMPLES)
  find_package(nlohmann_json 3.10 REQUIRED)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(argus_stb REQUIRED IMPORTED_TARGET stb)
  target_link_libraries(argus_dev INTERFACE nlohmann_json::nlohmann_json PkgConfig::argus_stb)
endif()

# ARGUS_TEST_COSTS: name, seconds pairs for the tests that take long, each the most it took in
# any preset that runs it (a fresh clone on the 2-core development machine in a slow hour,
# 2026-11-27: docs/contributing/testing.md). argus_apply_test_costs() gives each the ctest
# property COST, so that `ctest -j 2` starts them first. On a fresh build ctest knows no
# timings of its own (it keeps them in Testing/Temporary/CTestCostData.txt after a run, and
# prefers them) and starts tests in the order they were added, so a long test added late
# (docs.worked_example, 28 s; unit.eval.prepacked under TSan, 46 s) ran alone at the end of
# its stage while the other core idled. Only the order matters, not the figures' accuracy:
# a new test longer than about 15 s belongs here.
set(ARGUS_TEST_COSTS
    unit.kernel.gemm 54
    tidy.avx512 51
    unit.eval.prepacked.split 46
    tools.ab 44
    unit.kernel.gemm.split 40
    unit.kernel.flash_attention 37
    unit.grad.bad_values 33
    fuzz.attention_fuzzer 31
    fuzz.gradient_fuzzer 31
    docs.worked_example 12
    tidy.avx2 23
    tidy.portable 21
    unit.eval.differential 19
    unit.eval.prepacked 15
    unit.eval.fused_vs_unfused 11
    unit.eval.concurrent_callers 10
    unit.eval.bad_values 10
    unit.grad.differential 9
    unit.kernel.dropout 8)

# argus_apply_test_costs(): COST on those of ARGUS_TEST_COSTS the calling directory added (a
# directory can set properties of its own tests only). Deferred to the end of the directory:
#     cmake_language(DEFER CALL argus_apply_test_costs)
function(argus_apply_test_costs)
  set(pairs ${ARGUS_TEST_COSTS})
  list(LENGTH pairs n)
  math(EXPR last "${n} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET pairs ${i} name)
    list(GET pairs ${j} seconds)
    if(TEST ${name})
      set_tests_properties(${name} PROPERTIES COST ${seconds})
    endif()
  endforeach()
endfunction()
