# ccache as the compiler launcher whenever it is installed (docs/development.md), so a rebuild,
# a second build folder or a fresh clone on the same machine compiles only what changed.
#
# Hits must survive a clone in another folder (CI clones main elsewhere): base_dir rewrites the
# absolute paths under the checkout (include directories, the build tree) to relative ones before
# hashing, and hash_dir off keeps the working directory out of the hash. The price is that the
# debug info of an object taken from the cache may name the folder it was first compiled in.
# No compile flag carries an absolute path of its own: test paths come from one generated file
# (cmake/GpuledgerTestPaths.cmake).
#
# -DGPULEDGER_CCACHE=OFF, or a launcher of your own in CMAKE_CXX_COMPILER_LAUNCHER, turns it off.
include_guard(GLOBAL)
option(GPULEDGER_CCACHE "Compile through ccache when it is installed" ON)
if(GPULEDGER_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(GPULEDGER_CCACHE_PROGRAM ccache)
  if(GPULEDGER_CCACHE_PROGRAM)
    # The base directory is the folder that holds the checkout, so that a build folder beside
    # it (build-*/, as .gitignore allows) is rewritten too.
    get_filename_component(gpuledger_ccache_base "${PROJECT_SOURCE_DIR}/.." ABSOLUTE)
    set(CMAKE_CXX_COMPILER_LAUNCHER
        env "CCACHE_BASEDIR=${gpuledger_ccache_base}" CCACHE_NOHASHDIR=1
        ${GPULEDGER_CCACHE_PROGRAM})
    message(STATUS "ccache: ${GPULEDGER_CCACHE_PROGRAM} (base_dir ${gpuledger_ccache_base})")
  endif()
endif()
