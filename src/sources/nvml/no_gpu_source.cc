// The source a node without a usable NVML gets: it keeps answering, with the reason as a fault.
#include <optional>
#include <string>
#include <utility>

#include "sources/nvml/nvml_source.h"

namespace gpuledger::nvml {
namespace {

using sources::GpuReading;
using sources::SourceFault;

class NoGpuSource final : public sources::GpuSource {
 public:
  NoGpuSource(SourceFault fault, std::string why, const Clock& clock)
      : fault_(std::move(fault)), why_(std::move(why)), clock_(clock) {}

  Result<GpuReading> Read() override {
    const ClockReading now = clock_.Now();
    const ClockInterval interval =
        previous_ ? IntervalBetween(*previous_, now) : ClockInterval{now.wall_us, now.wall_us, 0};
    previous_ = now;
    GpuReading r;
    r.start_us = interval.start_us;
    r.end_us = interval.end_us;
    r.wall_step_us = interval.wall_step_us;
    r.faults.push_back(fault_);
    return r;
  }
  std::string Describe() const override { return "no GPU: " + why_; }

 private:
  SourceFault fault_;
  std::string why_;
  const Clock& clock_;
  std::optional<ClockReading> previous_;
};

}  // namespace

std::unique_ptr<sources::GpuSource> MakeNoGpuSource(SourceFault fault, std::string why,
                                                    const Clock& clock) {
  return std::make_unique<NoGpuSource>(std::move(fault), std::move(why), clock);
}

}  // namespace gpuledger::nvml
