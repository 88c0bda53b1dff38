# GPULEDGER_SANITIZE: the whole tree built under a sanitizer (the asan and tsan presets;
# docs/reliability.md). Every target, stand-ins and generated code included: ASan and TSan see
# only what they instrument, and a mix of instrumented and plain code reports falsely.
#   address  AddressSanitizer and UndefinedBehaviorSanitizer (no recovery: UB fails the test)
#   thread   ThreadSanitizer
include_guard(GLOBAL)
set(GPULEDGER_SANITIZE "" CACHE STRING "address (ASan+UBSan), thread (TSan), or empty for none")
if(NOT GPULEDGER_SANITIZE STREQUAL "")
  # Instrumented code calls into the sanitizer's runtime library: the static libraries linked
  # into our shared objects (the NVML stand-in, the kernel-time tracer) must be PIC.
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
endif()
if(GPULEDGER_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(GPULEDGER_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT GPULEDGER_SANITIZE STREQUAL "")
  message(FATAL_ERROR "GPULEDGER_SANITIZE '${GPULEDGER_SANITIZE}': expected address, thread or empty")
endif()
