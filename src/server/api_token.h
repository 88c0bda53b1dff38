#pragma once
// The bearer token /api requires (server --token-file). An install that applies the manifests
// without creating the token's Secret (a GitOps tool, `kubectl apply -k`) mounts it as an
// optional volume: the file is not there yet. The server then starts, says so, and refuses every
// /api request with a 503 that names the file, looking for it again at most every kRetryUs, so
// the Secret created later takes effect without a restart. Never does /api answer without a
// token when one was asked for.

#include <memory>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"

namespace gpuledger::server {

class ApiToken {
 public:
  static constexpr Micros kRetryUs = 5 * kMicrosPerSecond;

  // `token` required; empty: no auth at all (a server on loopback, tests). Implicit, so that
  // "" and "s3cret" read as what they are where an ApiToken is asked for.
  ApiToken(std::string token = {});  // NOLINT(google-explicit-constructor)
  ApiToken(const char* token)
      : ApiToken(std::string(token)) {}  // NOLINT(google-explicit-constructor)
  // The token in `path` (io/file_util.h ReadTokenFile); a file that does not exist is pending
  // (above), one that exists and holds no valid token an error. `clock` (nullptr: the system's)
  // paces the looking again.
  static Result<ApiToken> FromFile(const std::string& path, const Clock* clock = nullptr);

  enum class Verdict { kAllowed, kRefused, kPending };
  // Whether `authorization` (the header's value) carries the token.
  Verdict Check(std::string_view authorization) const;
  // A token is required (configured, or its file awaited).
  bool required() const;
  // Still waiting for the file: what a refused request is told, "" when not waiting.
  std::string Pending() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace gpuledger::server
