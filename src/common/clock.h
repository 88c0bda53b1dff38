#pragma once
// The clock: two readings at once, because they answer different questions.
//   wall_us  µs since the Unix epoch (CLOCK_REALTIME): timestamps, and NVML's sample
//            timestamps, which the driver takes from the same clock.
//   mono_us  µs on a clock that never steps (CLOCK_MONOTONIC): lengths. Its origin is
//            arbitrary; only differences mean anything.
// A wall clock steps (an NTP step, a VM resumed after hours, an operator's `date -s`); metered
// time must not. So every interval's length is monotonic elapsed time, and a step of the wall
// clock is detected by comparing the two (IntervalBetween) and counted, never metered.
//
// Components take `const Clock&` (style rule 9); only src/cmd builds a SystemClock. Tests and
// the simulated cluster use ManualClock, whose wall part can step on its own.

#include <atomic>
#include <chrono>

#include "common/units.h"

namespace gpuledger {

struct ClockReading {
  Micros wall_us = 0;
  Micros mono_us = 0;
  friend bool operator==(const ClockReading&, const ClockReading&) = default;
};

class Clock {
 public:
  virtual ~Clock() = default;
  // Both clocks read together. Thread-safe.
  virtual ClockReading Now() const = 0;
};

// The real clocks.
class SystemClock final : public Clock {
 public:
  ClockReading Now() const override {
    using std::chrono::duration_cast;
    using std::chrono::microseconds;
    return {
        duration_cast<microseconds>(std::chrono::system_clock::now().time_since_epoch()).count(),
        duration_cast<microseconds>(std::chrono::steady_clock::now().time_since_epoch()).count()};
  }
};

// The process's one SystemClock, for a component whose caller may leave its clock out
// (a `const Clock*` that is nullptr). Stateless, so shared.
inline const SystemClock& TheSystemClock() {
  static const SystemClock kClock;
  return kClock;
}

// A clock that moves only when told: Advance() moves both parts (time passing), StepWall() only
// the wall part (a clock step). Set from one thread; Now() from any.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Micros wall_us = 0, Micros mono_us = 0)
      : wall_us_(wall_us), mono_us_(mono_us) {}
  ClockReading Now() const override { return {wall_us_.load(), mono_us_.load()}; }
  void Advance(Micros us) {
    wall_us_ += us;
    mono_us_ += us;
  }
  void StepWall(Micros us) { wall_us_ += us; }
  // Both parts to `us` (simulated time, which never steps).
  void Set(Micros us) {
    wall_us_ = us;
    mono_us_ = us;
  }

 private:
  std::atomic<Micros> wall_us_;
  std::atomic<Micros> mono_us_;
};

// A wall clock that moved more or less than the monotonic one by more than this has stepped.
// Why 1 s: NTP slews by at most 500 ppm (0.5 ms per 1 s cycle, 30 ms over a 60 s stall) and the
// two clocks are read microseconds apart, so honest intervals stay far below it; the steps that
// matter (VM resume, a clock set at boot, chrony's default makestep of 1 s) are above it. A step
// below it is not counted, and costs nothing in metered time either: lengths are monotonic.
inline constexpr Micros kWallStepToleranceUs = kMicrosPerSecond;

// One interval between two readings of a Clock, in wall time: it ends at `now`'s wall time and
// is as long as the monotonic clock says (never negative), so a wall step between the two
// readings shifts the interval but never lengthens or shortens it.
struct ClockInterval {
  Micros start_us = 0;  // end_us - monotonic elapsed
  Micros end_us = 0;    // now.wall_us
  // Wall elapsed minus monotonic elapsed when its magnitude exceeds the tolerance (the wall
  // clock stepped by this much, forward when positive); 0 otherwise.
  Micros wall_step_us = 0;
  Micros duration_us() const { return end_us - start_us; }
};

inline ClockInterval IntervalBetween(const ClockReading& previous, const ClockReading& now,
                                     Micros tolerance_us = kWallStepToleranceUs) {
  const Micros elapsed = now.mono_us > previous.mono_us ? now.mono_us - previous.mono_us : 0;
  const Micros step = (now.wall_us - previous.wall_us) - elapsed;
  const Micros magnitude = step < 0 ? -step : step;
  return {now.wall_us - elapsed, now.wall_us, magnitude > tolerance_us ? step : 0};
}

}  // namespace gpuledger
