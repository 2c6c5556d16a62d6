# Test helpers. Every test is labelled: unit, integration, e2e or gpu.
# A test that cannot run here (no GPU, no cluster) exits 77, which ctest
# reports as skipped, never as passed.

# tfj_add_test(NAME <name> SOURCES <src>... [LIBS <lib>...] [LABELS <label>...]
#              [ARGS <arg>...] [TIMEOUT <s>])
function(tfj_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} tfj_testing)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} ${T_ARGS})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}"
                       TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77)
endfunction()

# tfj_add_fuzz(NAME <name> SOURCES <src>... LIBS <lib>... CORPUS <dir>)
# Always builds <name>_replay, which runs the target once on every file of
# the seed corpus and is registered as a unit test. With TFJOB_FUZZ it also
# builds the libFuzzer binary <name> for `make fuzz`.
function(tfj_add_fuzz)
  cmake_parse_arguments(F "" "NAME;CORPUS" "SOURCES;LIBS" ${ARGN})
  add_executable(${F_NAME}_replay ${F_SOURCES}
                 ${PROJECT_SOURCE_DIR}/common/testing/fuzz_replay.c)
  target_link_libraries(${F_NAME}_replay PRIVATE ${F_LIBS})
  add_test(NAME ${F_NAME}_replay COMMAND ${F_NAME}_replay ${F_CORPUS})
  set_tests_properties(${F_NAME}_replay PROPERTIES LABELS "unit;fuzz" TIMEOUT 120)
  if(TFJOB_FUZZ)
    add_executable(${F_NAME} ${F_SOURCES})
    target_link_libraries(${F_NAME} PRIVATE ${F_LIBS})
    target_link_options(${F_NAME} PRIVATE -fsanitize=fuzzer)
    set_property(GLOBAL APPEND PROPERTY TFJ_FUZZ_TARGETS "${F_NAME}|${F_CORPUS}")
  endif()
endfunction()

# tfj_add_component_tests(<core-lib>): registers the tests of the calling
# component directory by file name:
#   tests/test_*.c   -> label unit
#   tests/itest_*.c  -> label integration (need the test bed; exit 77 without it)
#   tests/gtest_*.c  -> label gpu (exit 77 without a GPU)
#   fuzz/fuzz_*.c    -> fuzz target, corpus fuzz/corpus/<name-without-fuzz_>/
# ITEST_FIXTURE <name>: integration tests require that ctest fixture (the
# e2e test bed's `testbed` fixture brings the local cluster up first).
function(tfj_add_component_tests core)
  cmake_parse_arguments(C "" "ITEST_FIXTURE" "" ${ARGN})
  set(dir ${CMAKE_CURRENT_SOURCE_DIR})
  file(GLOB units CONFIGURE_DEPENDS ${dir}/tests/test_*.c)
  file(GLOB itests CONFIGURE_DEPENDS ${dir}/tests/itest_*.c)
  file(GLOB gtests CONFIGURE_DEPENDS ${dir}/tests/gtest_*.c)
  file(GLOB fuzzers CONFIGURE_DEPENDS ${dir}/fuzz/fuzz_*.c)
  get_filename_component(comp ${dir} NAME)
  foreach(src ${units})
    get_filename_component(n ${src} NAME_WE)
    tfj_add_test(NAME ${comp}_${n} SOURCES ${src} LIBS ${core} LABELS unit)
  endforeach()
  foreach(src ${itests})
    get_filename_component(n ${src} NAME_WE)
    tfj_add_test(NAME ${comp}_${n} SOURCES ${src} LIBS ${core} LABELS integration TIMEOUT 900)
    if(C_ITEST_FIXTURE)
      set_tests_properties(${comp}_${n} PROPERTIES FIXTURES_REQUIRED ${C_ITEST_FIXTURE})
    endif()
  endforeach()
  foreach(src ${gtests})
    get_filename_component(n ${src} NAME_WE)
    tfj_add_test(NAME ${comp}_${n} SOURCES ${src} LIBS ${core} LABELS gpu)
  endforeach()
  foreach(src ${fuzzers})
    get_filename_component(n ${src} NAME_WE)
    string(REGEX REPLACE "^fuzz_" "" short ${n})
    tfj_add_fuzz(NAME ${comp}_${n} SOURCES ${src} LIBS ${core} CORPUS ${dir}/fuzz/corpus/${short})
  endforeach()
endfunction()
