# Third-party libraries, all found through pkg-config. scripts/install-deps
# installs them from Debian's packages.

find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

pkg_check_modules(CJSON REQUIRED IMPORTED_TARGET libcjson)
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
pkg_check_modules(YAML REQUIRED IMPORTED_TARGET yaml-0.1)
pkg_check_modules(GRPC REQUIRED IMPORTED_TARGET grpc)
pkg_check_modules(PROTOBUFC REQUIRED IMPORTED_TARGET libprotobuf-c)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)

# jemalloc serves the operator's malloc (docs/operator.md, "Memory"; the
# module tfj/heap.h finds it at run time). Not with sanitizers, whose own
# allocator must serve every malloc.
option(TFJOB_JEMALLOC "Link the operator with jemalloc" ON)
if(TFJOB_SANITIZE)
  set(TFJOB_JEMALLOC OFF)
endif()
if(TFJOB_JEMALLOC)
  pkg_check_modules(JEMALLOC IMPORTED_TARGET jemalloc)
  if(NOT JEMALLOC_FOUND)
    message(FATAL_ERROR "jemalloc not found: scripts/install-deps installs libjemalloc-dev "
                        "(or configure with -DTFJOB_JEMALLOC=OFF for glibc's allocator)")
  endif()
endif()

find_program(PROTOC_C NAMES protoc-c REQUIRED)

# tfj_protobuf_c(<var> <proto>...) generates .pb-c.c/.pb-c.h for each proto
# into the current binary dir and appends the sources to <var>.
function(tfj_protobuf_c out_var)
  set(srcs)
  foreach(proto ${ARGN})
    get_filename_component(abs ${proto} ABSOLUTE)
    get_filename_component(dir ${abs} DIRECTORY)
    get_filename_component(base ${abs} NAME_WE)
    set(c ${CMAKE_CURRENT_BINARY_DIR}/${base}.pb-c.c)
    set(h ${CMAKE_CURRENT_BINARY_DIR}/${base}.pb-c.h)
    add_custom_command(
      OUTPUT ${c} ${h}
      COMMAND ${PROTOC_C} --proto_path=${dir} --c_out=${CMAKE_CURRENT_BINARY_DIR} ${abs}
      DEPENDS ${abs}
      COMMENT "protoc-c ${base}.proto"
      VERBATIM)
    list(APPEND srcs ${c})
  endforeach()
  set(${out_var} ${${out_var}} ${srcs} PARENT_SCOPE)
endfunction()
