# GPULEDGER_SANITIZE: the whole tree built under a sanitizer (the asan and tsan presets;
# docs/reliability.md). Every target, stand-ins and generated code included: ASan and TSan see
# only what they instrument, and a mix of instrumented and plain code reports falsely.
#   address  AddressSanitizer and UndefinedBehaviorSanitizer (no recovery: UB fails the test)
#   thread   ThreadSanitizer
#   fuzzer   clang only (the fuzz preset): ASan+UBSan and libFuzzer's coverage on every target;
#            the fuzz targets (fuzz/) link libFuzzer's main
include_guard(GLOBAL)
set(GPULEDGER_SANITIZE "" CACHE STRING
    "address (ASan+UBSan), thread (TSan), fuzzer (clang: ASan+UBSan+libFuzzer), or empty")
if(NOT GPULEDGER_SANITIZE STREQUAL "")
  # Instrumented code calls into the sanitizer's runtime library: the static libraries linked
  # into our shared objects (the NVML stand-in, the kernel-time tracer) must be PIC.
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
endif()
if(GPULEDGER_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(GPULEDGER_SANITIZE STREQUAL "fuzzer")
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "GPULEDGER_SANITIZE fuzzer needs clang (the fuzz preset sets it)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
                      -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(GPULEDGER_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT GPULEDGER_SANITIZE STREQUAL "")
  message(FATAL_ERROR
          "GPULEDGER_SANITIZE '${GPULEDGER_SANITIZE}': expected address, thread, fuzzer or empty")
endif()
