# cmake -P driver for the install.* ctest tests (see tests/CMakeLists.txt).
#   MODE=find_package      cmake --install ARGUS_BINARY_DIR into WORK_DIR/prefix, then configure,
#                          build and run tests/install against that prefix
#   MODE=add_subdirectory  configure, build and run tests/install with argus as a subproject
# Inputs: MODE ARGUS_SOURCE_DIR ARGUS_BINARY_DIR WORK_DIR GENERATOR MAKE_PROGRAM CXX_COMPILER CONFIG
cmake_minimum_required(VERSION 3.25)

# Runs a command quietly; on failure prints its output and stops.
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    list(JOIN ARGV " " cmd)
    message(FATAL_ERROR "install.${MODE}: failed (${rc}): ${cmd}\n${out}")
  endif()
endfunction()

if(NOT CONFIG)
  set(CONFIG Release)
endif()
set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build-${MODE}")
file(REMOVE_RECURSE "${build}")

set(args -S "${CMAKE_CURRENT_LIST_DIR}" -B "${build}" -G "${GENERATOR}"
         "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_BUILD_TYPE=${CONFIG}"
         "-DARGUS_CONSUMER_MODE=${MODE}")
if(MAKE_PROGRAM)
  list(APPEND args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()

if(MODE STREQUAL "find_package")
  file(REMOVE_RECURSE "${prefix}")
  run("${CMAKE_COMMAND}" --install "${ARGUS_BINARY_DIR}" --config "${CONFIG}" --prefix "${prefix}")
  list(APPEND args "-DCMAKE_PREFIX_PATH=${prefix}" "-DARGUS_EXPECTED_PREFIX=${prefix}")
elseif(MODE STREQUAL "add_subdirectory")
  list(APPEND args "-DARGUS_SOURCE_DIR=${ARGUS_SOURCE_DIR}")
else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()

run("${CMAKE_COMMAND}" ${args})
run("${CMAKE_COMMAND}" --build "${build}" --config "${CONFIG}")
find_program(consumer consumer PATHS "${build}" "${build}/${CONFIG}" NO_DEFAULT_PATH REQUIRED)
execute_process(COMMAND "${consumer}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install.${MODE}: the consumer program failed (${rc})")
endif()
