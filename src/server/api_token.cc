#include "server/api_token.h"

#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <mutex>

#include <fmt/format.h>

#include "io/file_util.h"

namespace gpuledger::server {

struct ApiToken::State {
  std::mutex mu;  // the wait for the file; once `known`, `token` never changes again
  std::atomic<bool> known{false};
  std::string token;  // with `known`: the token; else "" (no auth when `path` is empty too)
  std::string path;   // the file awaited; set before the token is first shared, never after
  const Clock* clock = nullptr;
  Micros next_look_us = 0;

  void Know(std::string t) {
    token = std::move(t);
    known.store(!token.empty(), std::memory_order_release);
  }

  // The token, looking for the file again when it is due. Once known it is read without a lock
  // or a copy: every /api request asks.
  std::string_view Current() {
    if (known.load(std::memory_order_acquire)) return token;
    if (path.empty()) return {};
    std::lock_guard lock(mu);
    if (known.load(std::memory_order_relaxed)) return token;
    const Micros now = clock->Now().mono_us;
    if (now < next_look_us) return {};
    next_look_us = now + kRetryUs;
    // A file that appeared but holds no token yet (the kubelet writes Secrets atomically, so
    // this is a hand-made file) keeps the wait: refusing is the safe answer.
    if (auto read = ReadTokenFile(path)) Know(std::move(*read));
    return known.load(std::memory_order_relaxed) ? std::string_view(token) : std::string_view();
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
  state_->Know(std::move(token));
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
  t.state_->Know(std::move(*token));
  return t;
}

ApiToken::Verdict ApiToken::Check(std::string_view authorization) const {
  const std::string_view token = state_->Current();
  if (token.empty()) return state_->path.empty() ? Verdict::kAllowed : Verdict::kPending;
  return authorization.starts_with("Bearer ") && SameToken(authorization.substr(7), token)
             ? Verdict::kAllowed
             : Verdict::kRefused;
}

bool ApiToken::required() const {
  return state_->known.load(std::memory_order_acquire) || !state_->path.empty();
}

std::string ApiToken::Pending() const {
  if (state_->known.load(std::memory_order_acquire) || state_->path.empty()) return "";
  return fmt::format(
      "no API token yet: {} does not exist (create the Secret gpuledger-api-token, key token, in "
      "the server's namespace; docs/install.md); every /api request is refused until it does",
      state_->path);
}

}  // namespace gpuledger::server
