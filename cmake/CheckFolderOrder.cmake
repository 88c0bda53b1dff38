# The include graph by folder as a test: run by ctest (folders_test) with
#   -DSRC_DIR=<the src/ tree>  -DFOLDER_ORDER=<;-list of its folders, lowest first>
# A file may include headers of its own folder and of folders earlier in the order, never of a
# later one: an include that runs back up is how circles between folders begin (issue 61). A
# folder is src/'s first directory, or sources/<name> for the agent's node sources. Tests
# (*_test.cc) are left out: a test may reach any layer to build its fixture.
cmake_minimum_required(VERSION 3.25)

set(position 0)
foreach(folder IN LISTS FOLDER_ORDER)
  set(rank_${folder} ${position})
  math(EXPR position "${position} + 1")
endforeach()

# The folder of a path relative to src/ ("ledger/reports.cc" -> ledger,
# "sources/nvml/nvml_source.h" -> sources/nvml, "sources/gpu_source.h" -> sources).
function(folder_of path out)
  string(REPLACE "/" ";" parts "${path}")
  list(LENGTH parts count)
  list(GET parts 0 first)
  if(first STREQUAL "sources" AND count GREATER 2)
    list(GET parts 1 second)
    set(first "sources/${second}")
  endif()
  set(${out} "${first}" PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE files RELATIVE "${SRC_DIR}" "${SRC_DIR}/*.cc" "${SRC_DIR}/*.h")
set(violations "")
foreach(file IN LISTS files)
  if(file MATCHES "_test\\.cc$")
    continue()
  endif()
  folder_of("${file}" own)
  if(NOT DEFINED rank_${own})
    string(APPEND violations "src/${file}: its folder '${own}' is not in the order\n")
    continue()
  endif()
  if(NOT EXISTS "${SRC_DIR}/${file}")
    continue()  # gone since the listing (an editor's or a tool's file): nothing to check
  endif()
  file(STRINGS "${SRC_DIR}/${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "\"([^\"]+)\"")
      continue()
    endif()
    set(header "${CMAKE_MATCH_1}")
    if(NOT header MATCHES "/" OR NOT EXISTS "${SRC_DIR}/${header}")
      continue()  # a system or generated header, or a folder-less one
    endif()
    folder_of("${header}" theirs)
    if(theirs STREQUAL own OR NOT DEFINED rank_${theirs})
      continue()
    endif()
    if(rank_${theirs} GREATER rank_${own})
      string(APPEND violations "src/${file}: includes \"${header}\": ${own} is below ${theirs}; "
                               "the dependency goes the other way\n")
    endif()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "Includes that run back up between folders:\n${violations}")
endif()
list(LENGTH files count)
message(STATUS "${count} files, every include goes down the folder order")
