# gpuledger_test(NAME <name> SOURCES <files...> LIBS <targets...> [LABELS unit|integration|e2e])
# One GoogleTest binary registered with CTest; label defaults to "unit".
# Nothing when GPULEDGER_TESTS is off (the binary alone).
function(gpuledger_test)
  if(NOT GPULEDGER_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  # Paths (the shared data, the binaries a test runs) come from gpuledger_test_paths, never from
  # a -D flag (testing/test_paths.h); linking it also puts testing/ on the include path
  # (temp_dir.h, free_port.h).
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} gpuledger_flags gpuledger_test_paths
                                          GTest::gtest GTest::gtest_main GTest::gmock)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT 600)
endfunction()
