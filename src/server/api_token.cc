#include "server/api_token.h"

#include <sys/stat.h>

#include <cerrno>
#include <mutex>

#include <fmt/format.h>

#include "io/file_util.h"

namespace gpuledger::server {

struct ApiToken::State {
  std::mutex mu;
  std::string token;  // "" with `path` empty: no auth; with `path`: still pending
  std::string path;   // the file awaited
  const Clock* clock = nullptr;
  Micros next_look_us = 0;

  // The token, looking for the file again when it is due.
  std::string Current() {
    std::lock_guard lock(mu);
    if (!token.empty() || path.empty()) return token;
    const Micros now = clock->Now().mono_us;
    if (now < next_look_us) return token;
    next_look_us = now + kRetryUs;
    // A file that appeared but holds no token yet (the kubelet writes Secrets atomically, so
    // this is a hand-made file) keeps the wait: refusing is the safe answer.
    if (auto read = ReadTokenFile(path)) token = std::move(*read);
    return token;
  }
};

namespace {

// Constant-time comparison: the token check must not leak how much of a guess was right.
bool SameToken(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ (i < b.size() ? b[i] : 0);
  return diff == 0;
}

}  // namespace

ApiToken::ApiToken(std::string token) : state_(std::make_shared<State>()) {
  state_->token = std::move(token);
}

Result<ApiToken> ApiToken::FromFile(const std::string& path, const Clock* clock) {
  ApiToken t;
  t.state_->clock = clock != nullptr ? clock : &TheSystemClock();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) {
    t.state_->path = path;
    t.state_->next_look_us = t.state_->clock->Now().mono_us + kRetryUs;
    return t;
  }
  auto token = ReadTokenFile(path);
  if (!token) return token.error();
  t.state_->token = std::move(*token);
  return t;
}

ApiToken::Verdict ApiToken::Check(std::string_view authorization) const {
  const std::string token = state_->Current();
  if (token.empty()) return state_->path.empty() ? Verdict::kAllowed : Verdict::kPending;
  return authorization.starts_with("Bearer ") && SameToken(authorization.substr(7), token)
             ? Verdict::kAllowed
             : Verdict::kRefused;
}

bool ApiToken::required() const {
  std::lock_guard lock(state_->mu);
  return !state_->token.empty() || !state_->path.empty();
}

std::string ApiToken::Pending() const {
  std::lock_guard lock(state_->mu);
  if (!state_->token.empty() || state_->path.empty()) return "";
  return fmt::format(
      "no API token yet: {} does not exist (create the Secret gpuledger-api-token, key token, in "
      "the server's namespace; docs/install.md); every /api request is refused until it does",
      state_->path);
}

}  // namespace gpuledger::server
