# Included by runtime/CMakeLists.txt: the CUDA backend library and the
# loader's test fixtures (docs/cuda.md, docs/runtime-compute.md).

# libtfjob-compute-cuda.so: compute/compute_cuda.cu compiled by nvcc
# (tfj_cuda_attach), linked with cuBLAS and cudart, exporting only
# tfj_compute_plugin_entry (compute/compute_cuda.map). --no-undefined proves at link
# time that it needs nothing from the runtime: its only way back is the
# struct tfj_compute_host its entry point is given.
if(TFJOB_HAVE_CUDA)
  add_library(tfjob-compute-cuda MODULE)
  set_target_properties(tfjob-compute-cuda PROPERTIES
    LINKER_LANGUAGE C
    LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/compute/compute_cuda.map)
  target_include_directories(tfjob-compute-cuda PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src
    $<TARGET_PROPERTY:tfj_common,INTERFACE_INCLUDE_DIRECTORIES>)
  target_link_options(tfjob-compute-cuda PRIVATE
    LINKER:--version-script=${CMAKE_CURRENT_SOURCE_DIR}/src/compute/compute_cuda.map
    LINKER:--no-undefined)
  # The .cu files are compiled from compute/; they include from the root src/.
  tfj_cuda_attach(tfjob-compute-cuda ${CMAKE_CURRENT_SOURCE_DIR}/src/compute)
  # Installed where the loader looks: <bindir>/../lib/tfjob (computelib.h).
  install(TARGETS tfjob-compute-cuda LIBRARY DESTINATION lib/tfjob)
  # Nothing links it, so say who needs it: the runtime, and the tests that
  # load it from next to themselves.
  foreach(t tfjob-runtime runtime_test_compute runtime_gtest_compute runtime_itest_device)
    if(TARGET ${t})
      add_dependencies(${t} tfjob-compute-cuda)
    endif()
  endforeach()

  # The GPU agent image's build context (docs/packaging.md), staged from the
  # same image build directory as the e2e fixture e2e_operator_install and
  # smoke-tested in a chroot (scripts/check-gpu-context); no image is built
  # and no test bed is needed. Labelled e2e for its cost: a cold run
  # configures <dir>-cuda and copies ~660 MB (about 40 s more than the
  # fixture's own build); warm, about 10 s.
  add_test(NAME e2e_image_gpu_context
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/build-images --gpu --stage-only
            ${CMAKE_BINARY_DIR}/image-build)
  set_tests_properties(e2e_image_gpu_context PROPERTIES LABELS e2e TIMEOUT 1500)
endif()

# Fake backend libraries for the loader's tests (tests/fixtures/fake_plugin.c):
# one that loads but has no device, and broken ones it must refuse.
set(_tfj_fakes ok=0 abi=1 nosym=2 size=3 incomplete=4)
foreach(f IN LISTS _tfj_fakes)
  string(REPLACE "=" ";" f "${f}")
  list(GET f 0 name)
  list(GET f 1 variant)
  add_library(tfj-fake-compute-${name} MODULE tests/fixtures/fake_plugin.c)
  target_include_directories(tfj-fake-compute-${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src
    $<TARGET_PROPERTY:tfj_common,INTERFACE_INCLUDE_DIRECTORIES>)
  target_compile_definitions(tfj-fake-compute-${name} PRIVATE FAKE_VARIANT=${variant})
  string(TOUPPER "${name}" up)
  foreach(t runtime_test_computelib runtime_itest_device)
    if(TARGET ${t})
      add_dependencies(${t} tfj-fake-compute-${name})
      target_compile_definitions(${t} PRIVATE
        TFJ_FAKE_COMPUTE_${up}="$<TARGET_FILE:tfj-fake-compute-${name}>")
    endif()
  endforeach()
endforeach()
foreach(t runtime_test_computelib runtime_itest_device)
  if(TARGET ${t})
    target_compile_definitions(${t} PRIVATE
      TFJ_HAVE_CUDA_LIB=$<IF:$<BOOL:${TFJOB_HAVE_CUDA}>,1,0>)
  endif()
endforeach()
if(TARGET runtime_itest_device AND TARGET tfjob-runtime)
  add_dependencies(runtime_itest_device tfjob-runtime)
endif()
