# gpuledger_httplib: the one target that carries cpp-httplib. Debian's libcpp-httplib.so is
# built with OpenSSL, zlib and brotli, and those three macros change its class layouts
# (SSLServer, SSLClient, the compressors): a translation unit that includes httplib.h without
# them would hold a second layout of those classes (an ODR violation). pkg-config's flags carry
# them; linking this target is how a target gets them, with OpenSSL beside. No header under src/
# includes httplib.h, so only the .cc files of targets that link this one see it.
include_guard(GLOBAL)
find_package(PkgConfig REQUIRED)
find_package(OpenSSL REQUIRED)
pkg_check_modules(CPP_HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)
add_library(gpuledger_httplib INTERFACE)
target_link_libraries(gpuledger_httplib INTERFACE PkgConfig::CPP_HTTPLIB OpenSSL::SSL
                                                  OpenSSL::Crypto)
