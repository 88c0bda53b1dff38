#include "io/subprocess.h"

#include <gtest/gtest.h>

namespace gpuledger {
namespace {

using namespace std::chrono_literals;

TEST(Subprocess, TakesBothStreamsTheExitStatusAndTheEnvironmentGiven) {
  SubprocessRequest r;
  r.argv = {"sh", "-c", "printf 'out:%s' \"$GREETING\"; printf 'err' >&2; exit 3"};
  r.env = {{"GREETING", "hello"}};
  auto done = RunSubprocess(r);
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(done->out, "out:hello");
  EXPECT_EQ(done->err, "err");
  EXPECT_EQ(done->exit_code, 3);
}

TEST(Subprocess, ACommandThatCannotRunIsNotFound) {
  SubprocessRequest r;
  r.argv = {"gpuledger-no-such-command-anywhere"};
  auto done = RunSubprocess(r);
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().code, ErrorCode::kNotFound);
  EXPECT_NE(done.error().message.find("gpuledger-no-such-command-anywhere: cannot be run"),
            std::string::npos)
      << done.error().message;
}

TEST(Subprocess, OneThatHangsOrFloodsIsKilled) {
  SubprocessRequest hang;
  hang.argv = {"sleep", "30"};
  hang.timeout = 200ms;
  const auto start = std::chrono::steady_clock::now();
  auto hung = RunSubprocess(hang);
  ASSERT_FALSE(hung);
  EXPECT_EQ(hung.error().code, ErrorCode::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);  // not the 30 s it wanted

  SubprocessRequest flood;
  flood.argv = {"sh", "-c", "yes"};
  flood.max_output_bytes = 64 * 1024;
  auto flooded = RunSubprocess(flood);
  ASSERT_FALSE(flooded);
  EXPECT_NE(flooded.error().message.find("more than 65536 bytes to stdout"), std::string::npos);
}

TEST(Subprocess, ADaemonThatKeepsItsOutputOpenDoesNotHoldTheCallerPastTheTimeout) {
  SubprocessRequest r;
  r.argv = {"sh", "-c", "echo token; sleep 30"};
  r.timeout = 300ms;
  auto done = RunSubprocess(r);
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().code, ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace gpuledger
