# One ctest test per GoogleTest suite (`Suite.*` in one process), instead of one per test as
# gtest_discover_tests registers them: a test binary's start (static registries, the sanitizers'
# shadow memory, the leak check at exit) costs ~0.35 s of CPU under ASan, which ~800 processes
# paid on every CI run. A failing suite's output names the failing test.
#
#   kiln_gtest_suites(<target> [GPU_PREFIX <prefix>] [LABEL <label>] [SLOW <suite>...])
#     GPU_PREFIX: suites starting with it get the label gpu; LABEL: every suite gets it;
#     SLOW: suites ctest starts first, the longest first (a high COST: a fresh tree has no timings, and a long suite
#     started last keeps one core busy alone at the end)
#
# The list is read from `<target> --gtest_list_tests` after each build (this file, run as a
# script), into a file ctest includes.
if(CMAKE_SCRIPT_MODE_FILE)
  string(REPLACE "," ";" SLOW "${SLOW}")
  execute_process(COMMAND "${TEST_EXE}" --gtest_list_tests OUTPUT_VARIABLE listing RESULT_VARIABLE rc
                  TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${TEST_EXE} --gtest_list_tests failed (${rc}):\n${listing}")
  endif()
  string(REPLACE "\n" ";" lines "${listing}")
  set(text "")
  foreach(line IN LISTS lines)
    # A suite line: "Suite." or "Prefix/Suite.  # TypeParam = ..."; test lines are indented.
    if(line MATCHES "^([A-Za-z0-9_/]+)\\.( .*)?$")
      set(suite "${CMAKE_MATCH_1}")
      string(APPEND text "add_test([=[${suite}]=] [==[${TEST_EXE}]==] [==[--gtest_filter=${suite}.*]==])\n")
      set(labels "${LABEL}")
      if(GPU_PREFIX AND suite MATCHES "^${GPU_PREFIX}")
        list(APPEND labels gpu)
      endif()
      string(APPEND text "set_tests_properties([=[${suite}]=] PROPERTIES SKIP_RETURN_CODE 77")
      list(FIND SLOW "${suite}" slow_index)
      if(slow_index GREATER_EQUAL 0)  # the first named starts first
        math(EXPR cost "2000 - 10 * ${slow_index}")
        string(APPEND text " COST ${cost}")
      endif()
      if(labels)
        string(APPEND text " LABELS [==[${labels}]==]")
      endif()
      string(APPEND text ")\n")
    endif()
  endforeach()
  file(WRITE "${OUT}.tmp" "${text}")
  file(RENAME "${OUT}.tmp" "${OUT}")
  return()
endif()

function(kiln_gtest_suites target)
  cmake_parse_arguments(arg "" "GPU_PREFIX;LABEL" "SLOW" ${ARGN})
  string(REPLACE ";" "," slow "${arg_SLOW}")
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -DTEST_EXE=$<TARGET_FILE:${target}> -DOUT=${out} -DGPU_PREFIX=${arg_GPU_PREFIX}
            -DLABEL=${arg_LABEL} -DSLOW=${slow} -P ${CMAKE_SOURCE_DIR}/cmake/gtest_suites.cmake
    VERBATIM)
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/gtest_suites.cmake)  # relist on a change here
  # ctest reads the list once the target is built (before that: one test saying so).
  set(wrapper "${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake")
  file(WRITE "${wrapper}" "if(EXISTS [==[${out}]==])\n  include([==[${out}]==])\nelse()\n"
                          "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${wrapper}")
endfunction()
