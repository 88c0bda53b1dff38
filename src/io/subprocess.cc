#include "io/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

extern char** environ;

namespace gpuledger {
namespace {

// Both ends close on destruction.
struct Pipe {
  int fds[2] = {-1, -1};
  ~Pipe() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
  void CloseRead() {
    ::close(fds[0]);
    fds[0] = -1;
  }
  void CloseWrite() {
    ::close(fds[1]);
    fds[1] = -1;
  }
};

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

Result<SubprocessResult> RunSubprocess(const SubprocessRequest& request) {
  if (request.argv.empty() || request.argv[0].empty()) return InvalidArgument("no command");
  const std::string& command = request.argv[0];
  Pipe out, err;
  if (::pipe2(out.fds, O_CLOEXEC) != 0 || ::pipe2(err.fds, O_CLOEXEC) != 0)
    return IoError(fmt::format("{}: pipe: {}", command, std::strerror(errno)));

  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [name, value] : request.env) env[name] = value;
  std::vector<std::string> env_store;
  for (const auto& [name, value] : env) env_store.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_store = request.argv;
  std::vector<char*> argv;
  for (std::string& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err.fds[1], 2);
  pid_t pid = -1;
  const int spawned =
      ::posix_spawnp(&pid, command.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    return NotFound(fmt::format("{}: cannot be run: {}", command, std::strerror(spawned)));
  out.CloseWrite();
  err.CloseWrite();

  SubprocessResult result;
  const auto deadline = std::chrono::steady_clock::now() + request.timeout;
  auto kill_with = [&](Error e) -> Result<SubprocessResult> {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return e;
  };
  pollfd fds[2] = {{out.fds[0], POLLIN, 0}, {err.fds[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_streams = 2;
  while (open_streams > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return kill_with(Unavailable(
          fmt::format("{}: no answer within {} s", command, request.timeout.count() / 1000.0)));
    const int ready = ::poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR)
      return kill_with(IoError(fmt::format("{}: poll: {}", command, std::strerror(errno))));
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
        if (sinks[i]->size() > request.max_output_bytes)
          return kill_with(
              Unavailable(fmt::format("{}: wrote more than {} bytes to {}", command,
                                      request.max_output_bytes, i == 0 ? "stdout" : "stderr")));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;  // end of that stream
        --open_streams;
      }
    }
  }
  // Both streams closed: wait for the exit, still within the deadline.
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline)
      return kill_with(Unavailable(
          fmt::format("{}: did not exit within {} s", command, request.timeout.count() / 1000.0)));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  result.exit_code = ExitCode(status);
  return result;
}

}  // namespace gpuledger
