# cmake -P checker for one compile-fail test (see CMakeLists.txt in this directory).
# Inputs: COMPILER COMPILER_ID FLAGS_FILE, SOURCES_FILE (sets SOURCES: the test's file, or for
#         "twins" several), VARIANT (twin | twins | error), PCH (may be empty: the precompiled
#         first header of the files; CMakeLists.txt says where it is used), EXTERN_KERNELS (ON:
#         compile with -DARGUS_EXTERN_KERNELS, as the PCHs are; CMakeLists.txt says why),
#         BATCH_TU (where "twins" writes its TU)
#   twin:  compile SOURCE as is; the compiler must succeed.
#   twins: the twins of SOURCES in one TU: every #include line of the files first, then each
#          file inside a namespace of its own; the compiler must succeed.
#   error: compile with -DARGUS_EXPECT_COMPILE_ERROR; the compiler must fail and its output
#          must match every "// expect: <regex>" line (and "// expect-gcc:" with GCC,
#          "// expect-clang:" with Clang). The first "// expect:" regex is the rule: its first
#          match must be within the first RULE_LINE_LIMIT (10) lines of the output, and the
#          whole output at most TOTAL_LINE_LIMIT (25) lines: the message leads with the rule.
#          And one misuse is one error: the output holds exactly one "error:" line (a file
#          whose misuse is several says so: "// expect-errors: <count>").
#          The checker prints "rule at line R of T" for docs/reliability.md.
cmake_minimum_required(VERSION 3.25)
include("${FLAGS_FILE}")
include("${SOURCES_FILE}")
# The command but for the variant's macro and the file (-D and -U take effect before any
# -include, wherever they stand).
set(command "${COMPILER}" ${FLAGS})
if(EXTERN_KERNELS)
  list(APPEND command -DARGUS_EXTERN_KERNELS)
endif()
set(pch_wrapper "")
if(PCH AND COMPILER_ID MATCHES "Clang")
  list(APPEND command -Winvalid-pch -include-pch "${PCH}")
elseif(PCH)
  string(REGEX REPLACE "\\.gch$" "" pch_wrapper "${PCH}")
  list(APPEND command -Winvalid-pch -include "${pch_wrapper}")
endif()

if(VARIANT STREQUAL "twins")
  # Several twins in one TU (CMakeLists.txt says which files qualify and why).
  set(hoisted "")
  set(bodies "")
  foreach(source IN LISTS SOURCES)
    file(STRINGS "${source}" includes REGEX "^#include <")
    foreach(line IN LISTS includes)
      if(NOT line IN_LIST hoisted)
        list(APPEND hoisted "${line}")
      endif()
    endforeach()
    cmake_path(GET source STEM stem)
    string(MAKE_C_IDENTIFIER "${stem}" stem)
    string(APPEND bodies "namespace argus_twin_${stem} {\n#include \"${source}\"\n}  // namespace argus_twin_${stem}\n")
  endforeach()
  list(JOIN hoisted "\n" hoisted)
  file(WRITE "${BATCH_TU}" "// The twins of tests/compile_fail, several to a TU (check_compile_fail.cmake).\n"
                           "${hoisted}\n${bodies}")
  list(APPEND command "${BATCH_TU}")
  execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE output ERROR_VARIABLE output)
  list(LENGTH SOURCES count)
  list(JOIN SOURCES "\n  " names)
  list(JOIN command " " command_line)
  if(NOT rc EQUAL 0)
    string(SUBSTRING "${output}" 0 4000 first)
    message(FATAL_ERROR "The twins of ${count} compile-fail tests must compile without "
                        "ARGUS_EXPECT_COMPILE_ERROR, but the compiler failed (${rc}); the error "
                        "names the file:\n${command_line}\n${first}\nThe files:\n  ${names}")
  endif()
  message(STATUS "${count} twins compile without ARGUS_EXPECT_COMPILE_ERROR:\n  ${names}")
  return()
endif()
list(GET SOURCES 0 SOURCE)
set(RULE_LINE_LIMIT 10)
set(TOTAL_LINE_LIMIT 25)

# The 1-based number of the first line of `text` matching `regex` (0 if none), and the number
# of lines of `text`.
function(first_matching_line out_line out_total text regex)
  set(n 0)
  set(found 0)
  while(NOT text STREQUAL "")
    string(FIND "${text}" "\n" eol)
    if(eol EQUAL -1)
      set(line "${text}")
      set(text "")
    else()
      string(SUBSTRING "${text}" 0 ${eol} line)
      math(EXPR next "${eol} + 1")
      string(SUBSTRING "${text}" ${next} -1 text)
    endif()
    math(EXPR n "${n} + 1")
    if(found EQUAL 0 AND line MATCHES "${regex}")
      set(found ${n})
    endif()
  endwhile()
  set(${out_line} ${found} PARENT_SCOPE)
  set(${out_total} ${n} PARENT_SCOPE)
endfunction()

# The first 25 lines of `text`, indented. Works on the string, not on a CMake list: compiler
# output is full of ';' and '['.
function(head out text)
  set(result "")
  foreach(i RANGE 1 25)
    string(FIND "${text}" "\n" eol)
    if(eol EQUAL -1)
      string(APPEND result "  ${text}\n")
      set(text "")
      break()
    endif()
    string(SUBSTRING "${text}" 0 ${eol} line)
    math(EXPR next "${eol} + 1")
    string(SUBSTRING "${text}" ${next} -1 text)
    string(APPEND result "  ${line}\n")
    if(text STREQUAL "")
      break()
    endif()
  endforeach()
  if(NOT text STREQUAL "")
    string(APPEND result "  [...]\n")
  endif()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# The regexes this compiler must find, from the "// expect...:" lines of SOURCE.
set(tags "expect")
if(COMPILER_ID STREQUAL "GNU")
  list(APPEND tags "expect-gcc")
elseif(COMPILER_ID MATCHES "Clang")
  list(APPEND tags "expect-clang")
endif()
file(READ "${SOURCE}" rest)
set(rest_of_source "${rest}")
set(expected "")  # one regex per line, kept as a string
set(count 0)
set(rule "")
while(rest MATCHES "//[ \t]*(expect(-gcc|-clang)?):[ \t]*([^\n]*[^ \t\n])")
  set(tag "${CMAKE_MATCH_1}")
  set(regex "${CMAKE_MATCH_3}")
  string(FIND "${rest}" "${CMAKE_MATCH_0}" at)
  string(LENGTH "${CMAKE_MATCH_0}" len)
  math(EXPR at "${at} + ${len}")
  string(SUBSTRING "${rest}" ${at} -1 rest)
  if(tag STREQUAL "expect" AND rule STREQUAL "")
    set(rule "${regex}")
  endif()
  if(tag IN_LIST tags)
    string(APPEND expected "${regex}\n")
    math(EXPR count "${count} + 1")
  endif()
endwhile()

set(expected_errors 1)
if(rest_of_source MATCHES "//[ \t]*expect-errors:[ \t]*([0-9]+)")
  set(expected_errors "${CMAKE_MATCH_1}")
endif()

if(VARIANT STREQUAL "error")
  if(count EQUAL 0 OR rule STREQUAL "")
    message(FATAL_ERROR "${SOURCE}: no '// expect: <regex>' line: say what the error must name")
  endif()
  list(APPEND command -DARGUS_EXPECT_COMPILE_ERROR)
elseif(NOT VARIANT STREQUAL "twin")
  message(FATAL_ERROR "VARIANT must be twin or error, not '${VARIANT}'")
endif()
list(APPEND command "${SOURCE}")

execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(PCH)
  # With a PCH, the include stack's bottom line names the PCH's wrapper (GCC: "from
  # <wrapper>:1") or line 1 of the test (Clang: "from <test>:1:") where the test's own first
  # #include would be: the one difference a PCH makes (tools/compare_pch_diagnostics.sh).
  # Its line number: 1 + the newlines before it (file(STRINGS) would skip blank lines).
  file(READ "${SOURCE}" text)
  string(FIND "\n${text}" "\n#include <argus/" at)
  string(SUBSTRING "${text}" 0 ${at} before)
  string(REGEX REPLACE "[^\n]" "" newlines "${before}")
  string(LENGTH "${newlines}" include_line)
  math(EXPR include_line "${include_line} + 1")
  if(pch_wrapper)
    string(REPLACE "${pch_wrapper}:1" "${SOURCE}:${include_line}" output "${output}")
  else()
    string(REPLACE "from ${SOURCE}:1:" "from ${SOURCE}:${include_line}:" output "${output}")
  endif()
endif()
list(JOIN command " " command_line)
head(first_lines "${output}")

if(VARIANT STREQUAL "twin")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${SOURCE} must compile without ARGUS_EXPECT_COMPILE_ERROR, but the "
                        "compiler failed (${rc}):\n${command_line}\n${first_lines}")
  endif()
  message(STATUS "compiles without ARGUS_EXPECT_COMPILE_ERROR: ${SOURCE}")
  return()
endif()

if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled with -DARGUS_EXPECT_COMPILE_ERROR; it must not.\n"
                      "${command_line}\n${first_lines}")
endif()
set(missing "")
while(expected MATCHES "^([^\n]*)\n(.*)$")
  set(regex "${CMAKE_MATCH_1}")
  set(expected "${CMAKE_MATCH_2}")
  if(NOT output MATCHES "${regex}")
    string(APPEND missing "  ${regex}\n")
  endif()
endwhile()
if(NOT missing STREQUAL "")
  message(FATAL_ERROR "${SOURCE} failed to compile (as it should), but the output does not "
                      "match:\n${missing}so the error may be an unrelated one.\n"
                      "${command_line}\n${first_lines}")
endif()
# The test's own file name often spells the rule; it must not count as a mention.
get_filename_component(source_name "${SOURCE}" NAME)
string(REPLACE "${SOURCE}" "test.cpp" output_for_rule "${output}")
string(REPLACE "${source_name}" "test.cpp" output_for_rule "${output_for_rule}")
first_matching_line(rule_line total_lines "${output_for_rule}" "${rule}")
if(rule_line GREATER RULE_LINE_LIMIT OR total_lines GREATER TOTAL_LINE_LIMIT)
  message(FATAL_ERROR "${SOURCE}: the rule '${rule}' first appears at line ${rule_line} of "
                      "${total_lines}; it must lead (line <= ${RULE_LINE_LIMIT}, at most "
                      "${TOTAL_LINE_LIMIT} lines in all).\n${command_line}\n${first_lines}")
endif()
# Errors: GCC and Clang both write "<file>:<line>:<column>: error: ..." (a fatal error too:
# "fatal error:").
string(REGEX MATCHALL "(^|\n)[^\n]*:[0-9]+:[0-9]+: (fatal )?error: " error_lines "${output}")
list(LENGTH error_lines errors)
if(NOT errors EQUAL expected_errors)
  message(FATAL_ERROR "${SOURCE}: ${errors} errors where ${expected_errors} was expected: one "
                      "misuse is one error (the first reported, the rest taken silently).\n"
                      "${command_line}\n${first_lines}")
endif()
message(STATUS "fails as expected with ARGUS_EXPECT_COMPILE_ERROR: ${SOURCE}: rule at line "
               "${rule_line} of ${total_lines}, ${errors} error(s)")
