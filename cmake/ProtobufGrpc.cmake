# gpuledger_grpc_library(<target> PROTO_ROOT <dir> PROTOS <files relative to PROTO_ROOT...>)
#
# Runs protoc and grpc_cpp_plugin (Debian: protobuf-compiler, protobuf-compiler-grpc) over the
# .proto files into the build tree and builds them as a static library. Nothing generated is
# committed. The generated directory is a PUBLIC include, so "kubelet/podresources/v1/api.pb.h"
# is how dependents include it. Generated code is compiled without gpuledger_flags: our warning
# flags are for our code, not protoc's.
include_guard(GLOBAL)
find_package(PkgConfig REQUIRED)
# GLOBAL: dependents in sibling directories link these through gpuledger_protos.
pkg_check_modules(GRPCPP REQUIRED IMPORTED_TARGET GLOBAL grpc++)
pkg_check_modules(PROTOBUF REQUIRED IMPORTED_TARGET GLOBAL protobuf)
find_program(GPULEDGER_PROTOC protoc REQUIRED)
find_program(GPULEDGER_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)

function(gpuledger_grpc_library target)
  cmake_parse_arguments(G "" "PROTO_ROOT" "PROTOS" ${ARGN})
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/gen)
  file(MAKE_DIRECTORY ${out_dir})
  set(srcs)
  foreach(proto ${G_PROTOS})
    string(REGEX REPLACE "\\.proto$" "" stem ${proto})
    set(gen ${out_dir}/${stem}.pb.cc ${out_dir}/${stem}.pb.h
            ${out_dir}/${stem}.grpc.pb.cc ${out_dir}/${stem}.grpc.pb.h)
    add_custom_command(
      OUTPUT ${gen}
      COMMAND ${GPULEDGER_PROTOC}
              --proto_path=${G_PROTO_ROOT}
              --cpp_out=${out_dir}
              --grpc_out=${out_dir}
              --plugin=protoc-gen-grpc=${GPULEDGER_GRPC_CPP_PLUGIN}
              ${G_PROTO_ROOT}/${proto}
      DEPENDS ${G_PROTO_ROOT}/${proto} ${GPULEDGER_PROTOC} ${GPULEDGER_GRPC_CPP_PLUGIN}
      COMMENT "protoc ${proto}"
      VERBATIM)
    list(APPEND srcs ${out_dir}/${stem}.pb.cc ${out_dir}/${stem}.grpc.pb.cc)
  endforeach()
  add_library(${target} STATIC ${srcs})
  target_include_directories(${target} SYSTEM PUBLIC ${out_dir})
  target_link_libraries(${target} PUBLIC PkgConfig::GRPCPP PkgConfig::PROTOBUF)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
