# TfjCuda.cmake - finds the CUDA toolkit and compiles the CUDA backend.
#
# Input (top-level CMakeLists.txt): TFJOB_CUDA = AUTO | ON | OFF.
#   AUTO builds the CUDA backend when a working nvcc is found, ON fails the
#   configure when it is not, OFF never builds it.
#
# Cache knobs (rarely needed):
#   TFJOB_CUDA_ROOT           where scripts/install-cuda puts the toolkit
#                             (/opt/tfjob/cuda/toolkit); searched before PATH
#   TFJOB_NVCC                an explicit nvcc, skips the search
#   TFJOB_CUDA_ARCHS          SM versions to build machine code for ("80;90":
#                             A100, H100/H200); PTX for the highest is embedded
#                             too, so newer GPUs JIT-compile it
#   TFJOB_CUDA_HOST_COMPILER  nvcc's host compiler (-ccbin); empty = nvcc's
#                             default (gcc/g++ on PATH)
#   TFJOB_CUDA_WERROR         host and nvcc warnings are errors (ON)
#   TFJOB_CUDA_NVCC_FLAGS     extra nvcc flags
#
# Results: TFJOB_HAVE_CUDA (ON/OFF), TFJOB_CUDA_VERSION (e.g. 13.0),
# TFJOB_CUDA_LIBDIR, TFJOB_CUDA_INCLUDE_DIR, imported targets tfj::cudart and
# tfj::cublas, and tfj_cuda_attach() below.
#
# Why custom commands instead of enable_language(CUDA): the toolkit comes from
# NVIDIA's PyPI wheels (docs/cuda.md), and CMake's CUDA language support
# assumes a classic installation layout when it derives the toolkit's
# directories from nvcc; running nvcc ourselves keeps the build independent
# of that, keeps the project's C flags (-Werror, sanitizers, libFuzzer
# instrumentation) away from nvcc, and needs no C++ language in the project.

set(TFJOB_CUDA_ROOT "/opt/tfjob/cuda/toolkit" CACHE PATH
    "CUDA toolkit installed by scripts/install-cuda (searched before PATH)")
set(TFJOB_CUDA_ARCHS "80;90" CACHE STRING
    "SM architectures to build for; PTX of the highest is embedded too")
set(TFJOB_CUDA_HOST_COMPILER "" CACHE FILEPATH
    "Host compiler for nvcc (-ccbin); empty means nvcc's default")
option(TFJOB_CUDA_WERROR "Treat warnings in .cu files as errors" ON)
set(TFJOB_CUDA_NVCC_FLAGS "" CACHE STRING "Extra flags for nvcc")

string(TOUPPER "${TFJOB_CUDA}" _tfj_cuda_mode)
if(NOT _tfj_cuda_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "TFJOB_CUDA must be AUTO, ON or OFF (got '${TFJOB_CUDA}')")
endif()

# _tfj_cuda_nvcc_flags(<out>): the nvcc flags every .cu file is compiled
# with (and the configure probe too, so the probe tests what the build uses).
function(_tfj_cuda_nvcc_flags out)
  set(flags -std=c++17 -Xcompiler=-fPIC)
  if(CMAKE_BUILD_TYPE STREQUAL "Debug")
    list(APPEND flags -O0 -g -lineinfo)
  elseif(CMAKE_BUILD_TYPE STREQUAL "RelWithDebInfo")
    list(APPEND flags -O2 -g -lineinfo)
  else()
    list(APPEND flags -O3)
  endif()
  if(TFJOB_CUDA_WERROR)
    list(APPEND flags -Xcompiler=-Wall,-Wextra,-Werror --Werror=all-warnings)
  endif()
  if(TFJOB_CUDA_HOST_COMPILER)
    list(APPEND flags -ccbin=${TFJOB_CUDA_HOST_COMPILER})
  endif()
  set(archs ${TFJOB_CUDA_ARCHS})
  list(SORT archs COMPARE NATURAL)
  foreach(a IN LISTS archs)
    if(NOT a MATCHES "^[0-9]+[a-z]?$")
      message(FATAL_ERROR "TFJOB_CUDA_ARCHS: '${a}' is not an SM version like 90")
    endif()
    list(APPEND flags -gencode=arch=compute_${a},code=sm_${a})
  endforeach()
  list(GET archs -1 top)
  list(APPEND flags -gencode=arch=compute_${top},code=compute_${top})
  separate_arguments(extra UNIX_COMMAND "${TFJOB_CUDA_NVCC_FLAGS}")
  list(APPEND flags ${extra})
  set(${out} ${flags} PARENT_SCOPE)
endfunction()

# _tfj_cuda_first_file(<out> <dirs> <names>): the first existing dir/name.
function(_tfj_cuda_first_file out dirs names)
  foreach(d IN LISTS dirs)
    foreach(n IN LISTS names)
      if(EXISTS "${d}/${n}" AND NOT IS_DIRECTORY "${d}/${n}")
        set(${out} "${d}/${n}" PARENT_SCOPE)
        return()
      endif()
    endforeach()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

# _tfj_cuda_detect(<ok> <why>): finds nvcc, cudart, cuBLAS and the headers,
# then compiles and links a probe with them. Sets the TFJOB_CUDA_* results in
# the caller's scope; <why> says what is missing when <ok> is false.
function(_tfj_cuda_detect ok why)
  set(${ok} FALSE PARENT_SCOPE)

  # A cached nvcc that has since disappeared, or one found under a
  # TFJOB_CUDA_ROOT that has been changed since, is searched for again.
  if(TFJOB_NVCC AND NOT EXISTS "${TFJOB_NVCC}")
    unset(TFJOB_NVCC CACHE)
  endif()
  if(DEFINED TFJOB_CUDA_ROOT_SEARCHED AND NOT TFJOB_CUDA_ROOT_SEARCHED STREQUAL TFJOB_CUDA_ROOT)
    unset(TFJOB_NVCC CACHE)
  endif()
  set(TFJOB_CUDA_ROOT_SEARCHED "${TFJOB_CUDA_ROOT}" CACHE INTERNAL "")
  find_program(TFJOB_NVCC NAMES nvcc HINTS "${TFJOB_CUDA_ROOT}/bin" NO_DEFAULT_PATH)
  find_program(TFJOB_NVCC NAMES nvcc
               PATHS /usr/local/cuda/bin DOC "nvcc that builds the CUDA backend")
  if(NOT TFJOB_NVCC)
    set(${why} "no nvcc in ${TFJOB_CUDA_ROOT}/bin or PATH (run scripts/install-cuda)"
        PARENT_SCOPE)
    return()
  endif()

  # The toolkit root is nvcc's bin/.. as found (keeps the stable
  # /opt/tfjob/cuda/toolkit symlink in RPATHs), then as resolved (a PATH
  # entry like /usr/local/bin/nvcc -> /usr/local/cuda-X/bin/nvcc).
  get_filename_component(bindir "${TFJOB_NVCC}" DIRECTORY)
  get_filename_component(root "${bindir}" DIRECTORY)
  get_filename_component(real "${TFJOB_NVCC}" REALPATH)
  get_filename_component(realbin "${real}" DIRECTORY)
  get_filename_component(realroot "${realbin}" DIRECTORY)
  set(libdirs)
  set(incdirs)
  foreach(r IN ITEMS "${root}" "${realroot}")
    list(APPEND libdirs "${r}/lib" "${r}/lib64" "${r}/targets/x86_64-linux/lib")
    list(APPEND incdirs "${r}/include" "${r}/targets/x86_64-linux/include")
  endforeach()
  # Distribution packages (Debian's nvidia-cuda-toolkit) use system paths.
  list(APPEND libdirs ${CMAKE_C_IMPLICIT_LINK_DIRECTORIES} /usr/lib/x86_64-linux-gnu)
  list(APPEND incdirs /usr/include)
  list(REMOVE_DUPLICATES libdirs)

  _tfj_cuda_first_file(cudart "${libdirs}"
                       "libcudart.so;libcudart.so.13;libcudart.so.12;libcudart.so.11.0")
  _tfj_cuda_first_file(cublas "${libdirs}"
                       "libcublas.so;libcublas.so.13;libcublas.so.12;libcublas.so.11")
  _tfj_cuda_first_file(header "${incdirs}" "cublas_v2.h")
  if(NOT cudart OR NOT cublas OR NOT header)
    set(${why} "nvcc at ${TFJOB_NVCC} but no libcudart/libcublas/cublas_v2.h next to it"
        PARENT_SCOPE)
    return()
  endif()
  get_filename_component(libdir "${cublas}" DIRECTORY)
  get_filename_component(incdir "${header}" DIRECTORY)

  execute_process(COMMAND "${TFJOB_NVCC}" --version
                  OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "release ([0-9]+\\.[0-9]+)")
    set(${why} "${TFJOB_NVCC} --version failed: ${out}" PARENT_SCOPE)
    return()
  endif()
  set(version "${CMAKE_MATCH_1}")

  # The probe compiles a kernel that includes cuBLAS's header with the
  # build's own nvcc flags, and links it into a C program with the C
  # compiler: a toolkit that passes builds the backend. nvcc rejects
  # unsupported host compilers and architectures here, at configure time,
  # instead of in the middle of the build. The result is cached per set of
  # inputs so reconfiguring costs nothing.
  _tfj_cuda_nvcc_flags(flags)
  set(key "${TFJOB_NVCC}|${version}|${cudart}|${cublas}|${CMAKE_C_COMPILER}|${flags}")
  if(NOT TFJOB_CUDA_PROBED STREQUAL key)
    set(dir "${CMAKE_BINARY_DIR}/CMakeFiles/tfj_cuda_probe")
    file(MAKE_DIRECTORY "${dir}")
    file(WRITE "${dir}/probe.cu" [=[
#include <cuda_runtime.h>
#include <cublas_v2.h>
__global__ void tfj_probe_kernel(float *x) { x[threadIdx.x] *= 2.0f; }
extern "C" int tfj_probe(void)
{
	cublasHandle_t h;
	if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
		return -1;
	tfj_probe_kernel<<<1, 1>>>(nullptr);
	cublasDestroy(h);
	return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
]=])
    file(WRITE "${dir}/main.c"
         "int tfj_probe(void);\nint main(void) { return tfj_probe() == 12345; }\n")
    execute_process(COMMAND "${TFJOB_NVCC}" ${flags} -c probe.cu -o probe.o
                    WORKING_DIRECTORY "${dir}" RESULT_VARIABLE rc
                    OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(rc EQUAL 0)
      execute_process(COMMAND "${CMAKE_C_COMPILER}" main.c probe.o "${cublas}" "${cudart}"
                              -lstdc++ -lm -o probe
                      WORKING_DIRECTORY "${dir}" RESULT_VARIABLE rc
                      OUTPUT_VARIABLE out2 ERROR_VARIABLE out2)
      string(APPEND out "${out2}")
    endif()
    if(NOT rc EQUAL 0)
      set(${why} "nvcc ${version} at ${TFJOB_NVCC} failed the compile/link probe:\n${out}"
          PARENT_SCOPE)
      return()
    endif()
    set(TFJOB_CUDA_PROBED "${key}" CACHE INTERNAL "inputs of the last passed CUDA probe")
  endif()

  set(TFJOB_CUDA_VERSION "${version}" PARENT_SCOPE)
  set(TFJOB_CUDA_LIBDIR "${libdir}" PARENT_SCOPE)
  set(TFJOB_CUDA_INCLUDE_DIR "${incdir}" PARENT_SCOPE)
  set(TFJOB_CUDART_LIBRARY "${cudart}" PARENT_SCOPE)
  set(TFJOB_CUBLAS_LIBRARY "${cublas}" PARENT_SCOPE)
  set(${ok} TRUE PARENT_SCOPE)
endfunction()

set(TFJOB_HAVE_CUDA OFF)
if(_tfj_cuda_mode STREQUAL "OFF")
  message(STATUS "CUDA backend: OFF (TFJOB_CUDA=OFF)")
else()
  _tfj_cuda_detect(_tfj_cuda_ok _tfj_cuda_why)
  if(_tfj_cuda_ok)
    set(TFJOB_HAVE_CUDA ON)
    message(STATUS "CUDA backend: ON (nvcc ${TFJOB_CUDA_VERSION} at ${TFJOB_NVCC}, "
                   "sm ${TFJOB_CUDA_ARCHS}, libs in ${TFJOB_CUDA_LIBDIR})")
  elseif(_tfj_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "TFJOB_CUDA=ON but the CUDA toolkit is not usable: ${_tfj_cuda_why}\n"
                        "Run scripts/install-cuda, or set TFJOB_NVCC / TFJOB_CUDA_ROOT.")
  else()
    message(STATUS "CUDA backend: OFF (${_tfj_cuda_why})")
  endif()
endif()

if(TFJOB_HAVE_CUDA AND NOT TARGET tfj::cudart)
  add_library(tfj::cudart SHARED IMPORTED GLOBAL)
  set_target_properties(tfj::cudart PROPERTIES IMPORTED_LOCATION "${TFJOB_CUDART_LIBRARY}")
  add_library(tfj::cublas SHARED IMPORTED GLOBAL)
  set_target_properties(tfj::cublas PROPERTIES IMPORTED_LOCATION "${TFJOB_CUBLAS_LIBRARY}")
  # CMake puts the library directory into the build tree's RPATH by itself
  # but strips it on install; the wheels' directory is no system path, so
  # installed binaries get it as an explicit RUNPATH. RUNPATH (not RPATH)
  # still lets LD_LIBRARY_PATH point a GPU node at other copies.
  list(FIND CMAKE_C_IMPLICIT_LINK_DIRECTORIES "${TFJOB_CUDA_LIBDIR}" _tfj_implicit)
  if(_tfj_implicit EQUAL -1 AND NOT TFJOB_CUDA_LIBDIR MATCHES "^/usr/lib")
    set_target_properties(tfj::cudart PROPERTIES
      INTERFACE_LINK_OPTIONS "LINKER:-rpath,${TFJOB_CUDA_LIBDIR}")
  endif()
endif()

# tfj_cuda_attach(<target> <srcdir>)
#
# When TFJOB_HAVE_CUDA: compiles every <srcdir>/*.cu with nvcc into <target>,
# links it PUBLIC with cuBLAS, cudart, libstdc++ and libm (nvcc's host code
# is C++), and adds the PUBLIC compile definition TFJOB_HAVE_CUDA=1. The .cu
# files see <target>'s include directories and compile definitions,
# including those its linked targets pass on. Otherwise, or when <srcdir>
# has no .cu file yet, it does nothing. Call it in the same CMakeLists.txt
# that creates <target>, and use the keyword form of target_link_libraries
# (PUBLIC/PRIVATE) for <target>.
function(tfj_cuda_attach target srcdir)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "tfj_cuda_attach: no target '${target}'")
  endif()
  if(NOT TFJOB_HAVE_CUDA)
    return()
  endif()
  get_filename_component(srcdir "${srcdir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  file(GLOB cu_srcs CONFIGURE_DEPENDS "${srcdir}/*.cu")
  if(NOT cu_srcs)
    message(STATUS "CUDA backend: no .cu files in ${srcdir}; ${target} stays CPU-only")
    return()
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    message(FATAL_ERROR "tfj_cuda_attach: ${target} is an INTERFACE library")
  endif()

  _tfj_cuda_nvcc_flags(flags)
  set(incs "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
  # -I/usr/include would break libstdc++'s #include_next chain.
  set(incs "$<FILTER:${incs},EXCLUDE,^/usr/include/?$>")
  set(defs "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
  set(objdir "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/${target}.cuda")
  file(MAKE_DIRECTORY "${objdir}")
  set(objs)
  foreach(src IN LISTS cu_srcs)
    get_filename_component(name "${src}" NAME)
    set(obj "${objdir}/${name}.o")
    add_custom_command(
      OUTPUT "${obj}"
      COMMAND "${TFJOB_NVCC}" ${flags}
              "$<$<BOOL:${incs}>:-I$<JOIN:${incs},;-I>>"
              "$<$<BOOL:${defs}>:-D$<JOIN:${defs},;-D>>"
              -MD -MF "${obj}.d" -c "${src}" -o "${obj}"
      DEPENDS "${src}" "${TFJOB_NVCC}"
      DEPFILE "${obj}.d"
      COMMAND_EXPAND_LISTS
      VERBATIM
      COMMENT "Building CUDA object ${name}.o (${target})")
    list(APPEND objs "${obj}")
  endforeach()
  set_source_files_properties(${objs} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  target_sources(${target} PRIVATE ${objs})
  target_compile_definitions(${target} PUBLIC TFJOB_HAVE_CUDA=1)
  target_link_libraries(${target} PUBLIC tfj::cublas tfj::cudart stdc++ m)
endfunction()
