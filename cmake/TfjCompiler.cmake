# Compiler flags every target shares: C11, warnings as errors, and the
# optional sanitizer and libFuzzer instrumentation.

add_compile_options(-Wall -Wextra -Werror -Wshadow -Wformat=2 -Wvla
                    -Wno-unused-parameter -fno-strict-aliasing)
add_compile_definitions(_POSIX_C_SOURCE=200809L _DEFAULT_SOURCE)

if(TFJOB_SANITIZE)
  add_compile_options(-fsanitize=${TFJOB_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${TFJOB_SANITIZE})
endif()

if(TFJOB_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TFJOB_FUZZ needs clang (configure with CC=clang)")
  endif()
  # Everything gets coverage instrumentation; only fuzz targets link the
  # libFuzzer main (see tfj_add_fuzz in TfjTest.cmake).
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
