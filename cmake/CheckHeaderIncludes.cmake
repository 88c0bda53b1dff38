# Headers that do not fan out (issue 26), as a test: run by ctest (headers_test) with
#   -DSRC_DIR=<the src/ tree>
# No header includes nlohmann/json.hpp (nlohmann/json_fwd.hpp declares its types), httplib.h or
# yaml-cpp: each costs seconds in every translation unit that reaches it, and a header is reached
# by many; parsing stays in .cc files. common/units.h, included nearly everywhere, includes no
# other header of ours.
cmake_minimum_required(VERSION 3.25)

file(GLOB_RECURSE headers RELATIVE "${SRC_DIR}" "${SRC_DIR}/*.h")
set(violations "")
foreach(header IN LISTS headers)
  if(NOT EXISTS "${SRC_DIR}/${header}")
    continue()  # gone since the listing
  endif()
  file(STRINGS "${SRC_DIR}/${header}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  foreach(line IN LISTS includes)
    if(line MATCHES "[<\"](nlohmann/json\\.hpp|httplib\\.h|yaml-cpp/[^>\"]*)[>\"]")
      string(APPEND violations "src/${header}: includes <${CMAKE_MATCH_1}>: declare what the "
                               "header names (json_fwd.hpp, a forward declaration) and include "
                               "it in the .cc files that use it\n")
    elseif(header STREQUAL "common/units.h" AND line MATCHES "\"")
      string(APPEND violations "src/${header}: ${line}: units.h includes only the standard "
                               "library\n")
    endif()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "Headers that fan out:\n${violations}")
endif()
list(LENGTH headers count)
message(STATUS "${count} headers, none includes json.hpp, httplib.h or yaml-cpp")
