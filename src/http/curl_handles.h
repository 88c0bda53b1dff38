#pragma once
// Owning handles for libcurl's objects, for the two places that call libcurl: the HTTP client
// (client.cc) and the Kubernetes API transport (k8s/curl_transport.cc).

#include <curl/curl.h>

#include <memory>

namespace gpuledger::http {

struct CurlEasyDeleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
struct CurlListDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using CurlHandle = std::unique_ptr<CURL, CurlEasyDeleter>;
using CurlList = std::unique_ptr<curl_slist, CurlListDeleter>;

}  // namespace gpuledger::http
