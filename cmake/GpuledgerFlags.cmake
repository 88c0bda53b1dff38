# Compile flags live on one INTERFACE target that every gpuledger target links.
add_library(gpuledger_flags INTERFACE)
target_compile_options(gpuledger_flags INTERFACE -Wall -Wextra -Wpedantic -Wno-pedantic)
target_include_directories(gpuledger_flags INTERFACE ${PROJECT_SOURCE_DIR}/src)
