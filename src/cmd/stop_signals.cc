#include <csignal>

#include "cmd/commands.h"

namespace gpuledger::cmd {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

}  // namespace

const std::atomic<bool>& StopOnSignals() {
  static const bool installed = [] {
    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
    std::signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)installed;
  return g_stop;
}

}  // namespace gpuledger::cmd
