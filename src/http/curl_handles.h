#pragma once
// Owning handles for libcurl's objects, for the two places that call libcurl: the HTTP client
// (client.cc) and the Kubernetes API transport (k8s/curl_transport.cc). The one global set-up
// is http::InitClientOnce (client.h).

#include <curl/curl.h>

#include <memory>

namespace gpuledger::http {

struct CurlEasyDeleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
struct CurlListDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
struct CurlUrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
struct CurlTextDeleter {
  void operator()(char* p) const { curl_free(p); }
};
using CurlHandle = std::unique_ptr<CURL, CurlEasyDeleter>;
using CurlList = std::unique_ptr<curl_slist, CurlListDeleter>;
using UrlHandle = std::unique_ptr<CURLU, CurlUrlDeleter>;  // libcurl's URL API
using UrlPart = std::unique_ptr<char, CurlTextDeleter>;    // a string libcurl allocated

}  // namespace gpuledger::http
