#pragma once
// Child processes for end-to-end tests: the real binaries, as an operator runs them.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace gpuledger {

using namespace std::chrono_literals;

// A child process whose stdout goes to a file (stderr to FILE.err); stopped with SIGTERM on
// destruction, or with any signal by Stop().
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& out_file,
        const std::vector<std::string>& extra_env = {}) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, (out_file + ".err").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<std::string> env_store;
    for (char** e = environ; *e; ++e) env_store.push_back(*e);
    for (const auto& e : extra_env) env_store.push_back(e);
    std::vector<char*> env;
    for (auto& e : env_store) env.push_back(e.data());
    env.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), env.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Child() { Stop(SIGTERM); }
  // Sends `sig`, waits up to 5 s, then SIGKILL; idempotent.
  void Stop(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    int status;
    for (int i = 0; i < 50 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(100ms);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  bool ok() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

// The agent command `gpuledger-sim-node` prints ("GPULEDGER_NVML_SCENARIO=<file> <agent> ..."):
// its environment assignment and its words; argv is empty when the line is not of that form.
struct PrintedCommand {
  std::string env;
  std::vector<std::string> argv;
};
inline PrintedCommand SplitPrintedCommand(const std::string& command) {
  PrintedCommand out;
  std::smatch m;
  if (!std::regex_search(command, m, std::regex("^(\\S+=\\S+) (.*)$"))) return out;
  out.env = m[1].str();
  std::istringstream words(m[2].str());
  for (std::string w; words >> w;) out.argv.push_back(w);
  return out;
}

// Waits until `file` has a line matching `re`; returns the first capture group.
inline std::string WaitFor(const std::string& file, const std::regex& re,
                           std::chrono::seconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, re)) return m.size() > 1 ? m[1].str() : line;
    }
    std::this_thread::sleep_for(100ms);
  }
  return {};
}

// Runs a shell command; its stdout and stderr together, and its exit code.
inline std::string RunCapture(const std::string& cmd, int* code) {
  std::string out;
  FILE* pipe = ::popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  int status = ::pclose(pipe);
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// The listen backlog of the TCP socket listening on loopback `port`, as `ss` reports it (the
// Send-Q column of a listening socket); -1 when `ss` is not installed or shows no such socket.
inline int ListenBacklog(const std::string& port) {
  int code = 0;
  const std::string out = RunCapture("ss -Hltn 'sport = :" + port + "'", &code);
  if (code != 0) return -1;
  std::istringstream fields(out);
  std::string state;
  int recv_q = 0, send_q = -1;
  fields >> state >> recv_q >> send_q;
  return state == "LISTEN" ? send_q : -1;
}

}  // namespace gpuledger
