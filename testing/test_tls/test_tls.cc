#include "test_tls/test_tls.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <functional>
#include <memory>

#include "io/file_util.h"

namespace gpuledger::webhook::testing {
namespace {

template <typename T, void (*Free)(T*)>
using Owned = std::unique_ptr<T, std::integral_constant<decltype(Free), Free>>;
using KeyPtr = Owned<EVP_PKEY, EVP_PKEY_free>;
using CertPtr = Owned<X509, X509_free>;
using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;

std::string OpenSslError(const std::string& what) {
  std::string out = what;
  while (unsigned long code = ERR_get_error()) {
    std::array<char, 256> text{};
    ERR_error_string_n(code, text.data(), text.size());
    out += std::string(": ") + text.data();
  }
  return out;
}

bool AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `key` named `cn`, signed by `issuer_key` (itself when issuer is null).
enum class Role { kCa, kServer, kClient };

CertPtr MakeCertificate(EVP_PKEY* key, const char* cn, long serial, X509* issuer,
                        EVP_PKEY* issuer_key, Role role) {
  CertPtr cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  bool ok = false;
  switch (role) {
    case Role::kCa:
      ok = AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE") &&
           AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
      break;
    case Role::kServer:
      ok = AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE") &&
           AddExtension(cert.get(), signer, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1") &&
           AddExtension(cert.get(), signer, NID_ext_key_usage, "serverAuth");
      break;
    case Role::kClient:
      ok = AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE") &&
           AddExtension(cert.get(), signer, NID_ext_key_usage, "clientAuth");
      break;
  }
  if (!ok || X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) return nullptr;
  return cert;
}

std::string Pem(const std::function<int(BIO*)>& write) {
  BioPtr bio(BIO_new(BIO_s_mem()), &BIO_free);
  if (write(bio.get()) != 1) return {};
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

std::string KeyPem(EVP_PKEY* key) {
  return Pem([key](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
  });
}
std::string CertPem(X509* cert) {
  return Pem([cert](BIO* b) { return PEM_write_bio_X509(b, cert); });
}

}  // namespace

Result<TestCertificates> MakeTestCertificates(const std::string& dir) {
  KeyPtr ca_key(EVP_EC_gen("P-256"));
  KeyPtr server_key(EVP_EC_gen("P-256"));
  KeyPtr other_key(EVP_EC_gen("P-256"));
  KeyPtr client_key(EVP_EC_gen("P-256"));
  if (!ca_key || !server_key || !other_key || !client_key)
    return Internal(OpenSslError("EC key generation"));
  CertPtr ca =
      MakeCertificate(ca_key.get(), "gpuledger test CA", 1, nullptr, ca_key.get(), Role::kCa);
  if (!ca) return Internal(OpenSslError("the CA certificate"));
  CertPtr server =
      MakeCertificate(server_key.get(), "localhost", 2, ca.get(), ca_key.get(), Role::kServer);
  if (!server) return Internal(OpenSslError("the server certificate"));
  CertPtr client = MakeCertificate(client_key.get(), "gpuledger test client", 3, ca.get(),
                                   ca_key.get(), Role::kClient);
  if (!client) return Internal(OpenSslError("the client certificate"));
  TestCertificates out{dir + "/ca.pem",        dir + "/server.pem", dir + "/server-key.pem",
                       dir + "/other-key.pem", dir + "/client.pem", dir + "/client-key.pem"};
  for (const auto& [path, pem] :
       {std::pair{out.ca_file, CertPem(ca.get())}, std::pair{out.cert_file, CertPem(server.get())},
        std::pair{out.key_file, KeyPem(server_key.get())},
        std::pair{out.other_key_file, KeyPem(other_key.get())},
        std::pair{out.client_cert_file, CertPem(client.get())},
        std::pair{out.client_key_file, KeyPem(client_key.get())}}) {
    if (pem.empty()) return Internal(OpenSslError(path));
    if (Status written = WriteFile(path, pem); !written) return written.error();
  }
  return out;
}

Result<std::string> Handshake(int port, int min_version, int max_version,
                              const std::string& ca_file) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        &SSL_CTX_free);
  SSL_CTX_set_security_level(ctx.get(), 0);
  SSL_CTX_set_cipher_list(ctx.get(), "DEFAULT:@SECLEVEL=0");
  SSL_CTX_set_min_proto_version(ctx.get(), min_version);
  SSL_CTX_set_max_proto_version(ctx.get(), max_version);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_load_verify_locations(ctx.get(), ca_file.c_str(), nullptr) != 1)
    return Internal(OpenSslError(ca_file));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return Unavailable("connect to 127.0.0.1:" + std::to_string(port) + " failed");
  }
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), &SSL_free);
  SSL_set_fd(ssl.get(), fd);
  SSL_set_tlsext_host_name(ssl.get(), "localhost");
  Result<std::string> out = std::string();
  ERR_clear_error();
  if (SSL_connect(ssl.get()) == 1) {
    out = std::string(SSL_get_version(ssl.get()));
    SSL_shutdown(ssl.get());
  } else {
    out = Unavailable(OpenSslError("handshake"));
  }
  ::close(fd);
  return out;
}

}  // namespace gpuledger::webhook::testing
