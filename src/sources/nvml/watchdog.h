#pragma once
// Runs blocking driver calls under a deadline. NVML calls have hung for hours in the field
// (design section 6) and a hung call cannot be cancelled, so calls run one at a time on a single
// dedicated worker thread and the caller waits at most the deadline. After a timeout the worker
// stays busy with the hung call; until it returns, Run() refuses new work at once (kStillHung)
// instead of queueing or starting more threads.
//
// Jobs must own (or share ownership of) everything they touch: a timed-out job outlives the
// Run() call that issued it. Thread-compatible: one caller thread at a time.

#include <functional>
#include <memory>
#include <string>

#include "common/units.h"

namespace gpuledger::nvml {

class Watchdog {
 public:
  enum class Outcome {
    kDone,       // the job ran to completion within the deadline
    kTimedOut,   // the job did not finish within the deadline; it is now the hung call
    kStillHung,  // an earlier job is still running; this job was not started
  };

  // `keep_alive` (e.g. the dlopen'd library whose code the jobs run) is held by the worker
  // thread until it exits, so a hung call never runs unmapped code.
  Watchdog(Micros deadline_us, std::shared_ptr<void> keep_alive);
  // Joins an idle worker. A worker stuck in a hung call is detached: it exits on its own when
  // the call returns, still holding `keep_alive`.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Runs `job` on the worker and waits up to the deadline. `name` ("nvmlDeviceGetPowerUsage(GPU-
  // ...)") is kept while the job runs, for HungCall().
  Outcome Run(std::string name, std::function<void()> job);

  // Whether a job that timed out is still running.
  bool Hung() const;
  // The name of the running (hung) job, empty when idle.
  std::string HungCall() const;
  Micros deadline_us() const { return deadline_us_; }

 private:
  struct Shared;
  Micros deadline_us_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace gpuledger::nvml
