// Issue 35's security tests, on the real binary: an API served beyond loopback without a token
// says so at start-up, and no token or password a user gives gpuledger comes back in its
// output, its log or the answers it sends. (The webhook's TLS floor is webhook_server_test's
// `RefusesTlsBelow12`; the agent's lack of API-server credentials is deploy_manifests_test's.)
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "io/file_util.h"
#include "process_util.h"
#include "temp_dir.h"
#include "test_paths.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;

constexpr const char* kToken = "Sup3rSecretT0ken";
constexpr const char* kGuess = "Gu3ssedT0kenValue";
constexpr const char* kPassword = "Pa55w0rdNeverShown";

class SecurityE2e : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir("gpuledger-security");
    int code = 0;
    const std::string out = RunCapture(
        Bin() + " demo --no-serve --hours 2 --out " + (dir_->path() / "d").string(), &code);
    ASSERT_EQ(code, 0) << out;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string Bin() { return gpuledger::test_paths::kGpuledgerBin; }
  static fs::path Dir() { return dir_->path(); }
  static std::string Ledger() { return "sqlite:" + (Dir() / "d" / "gpuledger.db").string(); }

  // A server on `listen` (port 0), its own output in `name`.out and `name`.out.err; its port.
  static std::string StartServer(std::unique_ptr<Child>& child, const std::string& name,
                                 const std::string& listen, bool with_token) {
    std::vector<std::string> argv = {Bin(), "server", "--ledger", Ledger(), "--listen", listen};
    if (with_token) {
      EXPECT_TRUE(WriteFile((Dir() / "token").string(), std::string(kToken) + "\n").ok());
      argv.insert(argv.end(), {"--token-file", (Dir() / "token").string()});
    }
    child = std::make_unique<Child>(argv, (Dir() / (name + ".out")).string());
    return WaitFor((Dir() / (name + ".out")).string(), std::regex("http://[^:]+:(\\d+)/"), 20s);
  }
  static std::string Log(const std::string& name) {
    auto out = ReadFile((Dir() / (name + ".out")).string());
    auto err = ReadFile((Dir() / (name + ".out.err")).string());
    return (out ? *out : "") + (err ? *err : "");
  }

 private:
  static testing::TempDir* dir_;
};

testing::TempDir* SecurityE2e::dir_ = nullptr;

TEST_F(SecurityE2e, ServingBeyondLoopbackWithoutATokenSaysSoAtStartUp) {
  struct Case {
    std::string name, listen;
    bool token, warned;
  };
  for (const Case& c :
       {Case{"open", "0.0.0.0:0", false, true}, Case{"loopback", "127.0.0.1:0", false, false},
        Case{"tokened", "0.0.0.0:0", true, false}}) {
    std::unique_ptr<Child> server;
    ASSERT_FALSE(StartServer(server, c.name, c.listen, c.token).empty()) << Log(c.name);
    server->Stop(SIGTERM);
    const std::string log = Log(c.name);
    EXPECT_EQ(log.find("warning: the API serves 0.0.0.0:") != std::string::npos, c.warned)
        << c.name << ": " << log;
    if (c.warned) {
      EXPECT_NE(log.find("without a token"), std::string::npos) << log;
    }
  }
}

TEST_F(SecurityE2e, NoTokenOrPasswordComesBackInOutputLogsOrAnswers) {
  std::unique_ptr<Child> server;
  const std::string port = StartServer(server, "secrets", "127.0.0.1:0", true);
  ASSERT_FALSE(port.empty()) << Log("secrets");
  const std::string url = "http://127.0.0.1:" + port;
  ASSERT_TRUE(WriteFile((Dir() / "guess").string(), std::string(kGuess) + "\n").ok());
  ASSERT_TRUE(WriteFile((Dir() / "password").string(), std::string(kPassword) + "\n").ok());
  int code = 0;
  // The right token reads; a wrong one is refused, and neither is repeated.
  std::string said = RunCapture(
      Bin() + " report --server " + url + " --token-file " + (Dir() / "token").string(), &code);
  EXPECT_EQ(code, 0) << said;
  const std::string refused = RunCapture(
      Bin() + " report --server " + url + " --token-file " + (Dir() / "guess").string(), &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(refused.find("401"), std::string::npos) << refused;
  said += refused;
  // Passwords in a PostgreSQL URL, a Prometheus source's password file and a --server URL's
  // user part, each failing to connect: the error names the peer, never the password.
  const std::string pg = std::string("postgres://gpuledger:") + kPassword + "@127.0.0.1:1/none";
  for (const std::string& command :
       {Bin() + " report --db " + pg, Bin() + " server --ledger " + pg + " --listen 127.0.0.1:0",
        Bin() + " report --server http://user:" + kPassword + "@127.0.0.1:1",
        Bin() + " server --source prometheus=http://127.0.0.1:1 --prometheus-user u " +
            "--prometheus-password-file " + (Dir() / "password").string() +
            " --backfill-only --since 2h --ledger sqlite:" + (Dir() / "p.db").string()}) {
    const std::string out = RunCapture(command, &code);
    EXPECT_NE(code, 0) << command << "\n" << out;
    EXPECT_FALSE(out.empty()) << command;
    said += out;
  }
  server->Stop(SIGTERM);
  said += Log("secrets");
  for (const char* secret : {kToken, kGuess, kPassword})
    EXPECT_EQ(said.find(secret), std::string::npos) << secret << " appeared in:\n" << said;
}

}  // namespace
}  // namespace gpuledger
