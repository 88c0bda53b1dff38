# The layer rule (style rule 1) as a test: run by ctest (layers_test) with
#   -DLAYER_FILES=<;-list of the pure layers' source and header files>
#   -DLAYER_LINKS=<;-list of "target=dep,dep,..." for each pure layer>
# It fails, naming file and line, when a pure layer (common, model, attribution, cost,
# utilization, report, billing logic) includes an I/O or network header or a header of an edge
# module, and when a pure layer links anything but pure layers and formatting (a leaf layer,
# utilization: anything but common, model and formatting). Headers of the pure layers are
# checked with their sources: every X.cc brings its X.h.

cmake_minimum_required(VERSION 3.25)

set(forbidden_system
  "fstream" "filesystem" "iostream" "cstdio" "stdio\\.h" "unistd\\.h" "fcntl\\.h" "dlfcn\\.h"
  "netdb\\.h" "poll\\.h" "sys/[a-z_]+\\.h" "netinet/.*" "arpa/.*" "curl/.*" "httplib\\.h"
  "sqlite3\\.h" "libpq-fe\\.h" "grpc/.*" "grpcpp/.*" "yaml-cpp/.*" "zlib\\.h" "thread")
set(forbidden_project
  "io/" "store/" "sources/" "server/" "ingest/" "agent/" "cli/" "cmd/" "sim/" "k8s/"
  "prometheus/" "testing/")
set(allowed_links
  gpuledger_common gpuledger_model gpuledger_attribution gpuledger_cost gpuledger_utilization
  gpuledger_guardrails gpuledger_rightsizing
  gpuledger_report gpuledger_billing gpuledger_flags fmt::fmt)
# Leaf layers that other pure layers build on link fewer: only common and model.
set(leaf_layers gpuledger_utilization gpuledger_guardrails gpuledger_rightsizing)
set(leaf_allowed_links gpuledger_common gpuledger_model gpuledger_flags fmt::fmt)

set(violations "")
foreach(file IN LISTS LAYER_FILES)
  if(NOT EXISTS "${file}")
    continue()
  endif()
  file(STRINGS "${file}" lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*<([^>]+)>")
      set(header "${CMAKE_MATCH_1}")
      foreach(pattern IN LISTS forbidden_system)
        if(header MATCHES "^${pattern}$")
          string(APPEND violations "${file}:${n}: includes <${header}>, an I/O, network or thread "
                                   "header; pure layers take data and return data\n")
        endif()
      endforeach()
    elseif(line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")
      set(header "${CMAKE_MATCH_1}")
      foreach(prefix IN LISTS forbidden_project)
        string(FIND "${header}" "${prefix}" at)
        if(at EQUAL 0)
          string(APPEND violations "${file}:${n}: includes \"${header}\", an edge module; the "
                                   "dependency goes the other way\n")
        endif()
      endforeach()
    endif()
  endforeach()
endforeach()

foreach(entry IN LISTS LAYER_LINKS)
  string(REPLACE "=" ";" parts "${entry}")
  list(GET parts 0 target)
  list(LENGTH parts count)
  if(count LESS 2)
    continue()
  endif()
  list(GET parts 1 deps)
  string(REPLACE "," ";" deps "${deps}")
  foreach(dep IN LISTS deps)
    if(NOT dep IN_LIST allowed_links)
      string(APPEND violations "${target} links ${dep}: a pure layer links only "
                               "${allowed_links}\n")
    elseif(target IN_LIST leaf_layers AND NOT dep IN_LIST leaf_allowed_links)
      string(APPEND violations "${target} links ${dep}: this layer links only "
                               "${leaf_allowed_links}\n")
    endif()
  endforeach()
endforeach()

if(violations)
  # Printed as is (a FATAL_ERROR text is re-wrapped to the terminal), one violation a line.
  message(NOTICE "layer rule broken (style rule 1):\n${violations}")
  message(FATAL_ERROR "layer rule broken: see above")
endif()
list(LENGTH LAYER_FILES checked)
message(STATUS "layers: ${checked} files of the pure layers include no I/O or edge header")
