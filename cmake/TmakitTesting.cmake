include(GoogleTest)

# tmakit_add_test(<name> SOURCES <files...> [LIBS <libs...>] [GPU])
# One GoogleTest binary; each test case becomes a ctest test. GPU tests get the label `gpu`
# and report GTEST_SKIP (no GPU present) as "skipped" in ctest, never as a pass.
function(tmakit_add_test name)
  cmake_parse_arguments(ARG "GPU" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main
                        tmakit_warnings tmakit_portable)
  if(ARG_GPU)
    set(labels gpu)
  else()
    set(labels host)
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS "${labels}" SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]"
    DISCOVERY_TIMEOUT 60)
endfunction()
