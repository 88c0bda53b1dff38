# Compile flags live on one INTERFACE target that every gpuledger target links.
add_library(gpuledger_flags INTERFACE)
# -Wno-missing-field-initializers: the model is plain aggregates that grow trailing fields with
# defaults; a brace-init that names the leading ones (value-initializing the rest) is intended.
target_compile_options(gpuledger_flags INTERFACE -Wall -Wextra -Wpedantic -Wno-pedantic
                                                 -Wno-missing-field-initializers)
target_include_directories(gpuledger_flags INTERFACE ${PROJECT_SOURCE_DIR}/src)
