#pragma once
// TLS stand-ins for the webhook's and the HTTP client's tests and benchmark (never linked into
// gpuledger): a throwaway CA with a server certificate for localhost and 127.0.0.1 and a client
// certificate, and a bare handshake that reports what the server negotiated or why it refused.

#include <string>

#include "common/result.h"

namespace gpuledger::webhook::testing {

struct TestCertificates {
  std::string ca_file;           // the CA's certificate, to verify the server with
  std::string cert_file;         // the server's certificate (SAN DNS:localhost, IP:127.0.0.1)
  std::string key_file;          // its unencrypted private key
  std::string other_key_file;    // a key of no certificate here (a mismatch to test)
  std::string client_cert_file;  // a client certificate (CN "gpuledger test client")
  std::string client_key_file;   // its key
};

// Generates the files (EC P-256, valid one day) under `dir`.
Result<TestCertificates> MakeTestCertificates(const std::string& dir);

// A handshake with 127.0.0.1:`port` offering only protocol versions min..max (TLS1_1_VERSION,
// TLS1_2_VERSION, ...; at OpenSSL security level 0 so that the client itself allows old ones),
// verifying against `ca_file`. The negotiated version ("TLSv1.3") or kUnavailable with
// OpenSSL's reason ("... tlsv1 alert protocol version").
Result<std::string> Handshake(int port, int min_version, int max_version,
                              const std::string& ca_file);

}  // namespace gpuledger::webhook::testing
