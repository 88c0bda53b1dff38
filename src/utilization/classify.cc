#include "utilization/classify.h"
#include "common/enum_names.h"

#include <array>
#include <cmath>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include <optional>

#include "model/compute_band.h"

namespace gpuledger::utilization {
namespace {

constexpr NameTable<Class, 8> kNames = {{
    {Class::kUnallocated, "unallocated"},
    {Class::kIdle, "idle"},
    {Class::kAllocatedButIdle, "allocated-but-idle"},
    {Class::kBusyButStarved, "busy-but-starved"},
    {Class::kMemoryBound, "memory-bound"},
    {Class::kComputeLight, "compute-light"},
    {Class::kHealthy, "healthy"},
    {Class::kUnknown, "unknown"},
}};

// a / b < r, exactly (b > 0; products in 128 bits cannot overflow).
bool Below(std::int64_t a, std::int64_t b, Ratio r) {
  return static_cast<__int128>(a) * r.den < static_cast<__int128>(r.num) * b;
}
bool AtLeast(std::int64_t a, std::int64_t b, Ratio r) { return !Below(a, b, r); }

double Fraction(std::int64_t a, std::int64_t b) {
  return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
}

// "100%", "5%", "2.5%": whole percents without decimals, else one.
std::string Pct(double fraction) {
  const double p = fraction * 100.0;
  if (std::abs(p - std::round(p)) < 0.05) return fmt::format("{:.0f}%", p);
  return fmt::format("{:.1f}%", p);
}

std::string GpuHours(GpuMicros us) {
  return fmt::format("{:.2f} GPU-h", static_cast<double>(us) / kMicrosPerHour);
}

// The activity sources a rule names: GPM and dcgm-exporter are recognised among the '+'-joined
// rules ("compute-share+gpm"); another recorded rule is passed on as it is.
std::string BasisOf(const std::string& rule) {
  std::set<std::string> known;
  std::stringstream in(rule);
  for (std::string r; std::getline(in, r, '+');)
    if (r == "gpm" || r == "dcgm-exporter") known.insert(r);
  if (known.empty()) return rule.empty() ? "activity" : rule;
  std::string out;
  for (const std::string& k : known) out += (out.empty() ? "" : "+") + k;
  return out;
}

struct Builder {
  Classification c;
  void Signal(std::string name, double v) { c.signals.emplace_back(std::move(name), v); }
  void Threshold(std::string name, Ratio r) {
    c.thresholds.emplace_back(std::move(name), r.value());
  }
};

// A workload's figures over its grant, as the rules below read them.
struct Figures {
  explicit Figures(const Inputs& in)
      : activity(in.activity_quality != Quality::kNone && in.activity_allocated_us > 0),
        alloc(in.allocated_us),
        util(Fraction(in.compute_us, alloc)),
        footprint_known(in.granted_memory_kib_s > 0),
        footprint(Fraction(in.memory_kib_s, in.granted_memory_kib_s)),
        // Activity fractions over the part of the window that carried activity.
        sm(Fraction(in.activity.sm_active_us, in.activity_allocated_us)),
        dram(Fraction(in.activity.dram_active_us, in.activity_allocated_us)),
        coverage(Fraction(in.activity_allocated_us, alloc)),
        partial(activity && in.activity_allocated_us < alloc),
        coverage_note(partial ? fmt::format(" (activity over {} of the grant)", Pct(coverage))
                              : "") {}
  bool activity;
  GpuMicros alloc;
  double util;
  bool footprint_known;
  double footprint;
  double sm, dram, coverage;
  bool partial;
  std::string coverage_note;
};

void CoverageSignal(const Figures& f, Builder& b) {
  if (f.partial) b.Signal("activity_coverage", f.coverage);
}

// Idle, or holding its grant while computing almost nothing: true when it is.
bool ByGrantUse(const Inputs& in, const Figures& f, Builder& b) {
  Classification& c = b.c;
  // idle: no GPU process ran at all.
  if (Below(in.compute_us, f.alloc, kIdleUtilBelow) && in.memory_kib_s <= 0) {
    c.cls = Class::kIdle;
    b.Signal("memory_footprint", 0.0);
    b.Threshold("idle_util_below", kIdleUtilBelow);
    c.reason = fmt::format(
        "GPU util {} (< {}) and no GPU memory held over {} granted: no GPU "
        "process ran",
        Pct(f.util), Pct(kIdleUtilBelow.value()), GpuHours(f.alloc));
    return true;
  }

  // allocated-but-idle: a process holds the grant (and maybe memory) but computes almost nothing.
  if (Below(in.compute_us, f.alloc, kAllocatedIdleUtilBelow)) {
    c.cls = Class::kAllocatedButIdle;
    if (f.footprint_known) b.Signal("memory_footprint", f.footprint);
    b.Threshold("allocated_idle_util_below", kAllocatedIdleUtilBelow);
    c.reason = fmt::format(
        "GPU util {} (< {}) over {} granted{}: holds its grant but computes "
        "almost nothing",
        Pct(f.util), Pct(kAllocatedIdleUtilBelow.value()), GpuHours(f.alloc),
        f.footprint_known && in.memory_kib_s > 0
            ? fmt::format(", {} of its memory held", Pct(f.footprint))
            : "");
    return true;
  }
  return false;
}

// What activity counters tell (memory-bound, busy but starved): true when they decide.
bool ByActivity(const Inputs& in, const Figures& f, Builder& b) {
  Classification& c = b.c;
  // memory-bound, with f.activity: while its kernels ran, DRAM bandwidth was at half its peak or
  // more (DRAM active >= 50% of f.util), and busier than the SMs. Checked before busy-but-starved:
  // SMs that wait on memory are memory-bound, not starved of work.
  if (f.activity && in.activity_compute_us > 0 &&
      AtLeast(in.activity.dram_active_us, in.activity_compute_us, kMemoryBoundDramPerUtilAtLeast) &&
      in.activity.dram_active_us >= in.activity.sm_active_us) {
    c.cls = Class::kMemoryBound;
    b.Signal("sm_active", f.sm);
    b.Signal("dram_active", f.dram);
    CoverageSignal(f, b);
    b.Threshold("memory_bound_dram_per_util_at_least", kMemoryBoundDramPerUtilAtLeast);
    c.reason = fmt::format(
        "DRAM active {} at GPU util {} (>= {} of util) and at least SM active "
        "{}{}: memory bandwidth is the limiter",
        Pct(f.dram), Pct(f.util), Pct(kMemoryBoundDramPerUtilAtLeast.value()), Pct(f.sm),
        f.coverage_note);
    return true;
  }

  // busy-but-starved: f.util says a kernel was resident most of the time, SM active says on few
  // SMs. Compared over the same (covered) time: SM active < 25% of f.util there.
  if (f.activity && AtLeast(in.compute_us, f.alloc, kBusyUtilAtLeast) &&
      in.activity_compute_us > 0 &&
      Below(in.activity.sm_active_us, in.activity_compute_us, kStarvedSmPerUtilBelow)) {
    c.cls = Class::kBusyButStarved;
    b.Signal("sm_active", f.sm);
    CoverageSignal(f, b);
    b.Threshold("busy_util_at_least", kBusyUtilAtLeast);
    b.Threshold("starved_sm_per_util_below", kStarvedSmPerUtilBelow);
    c.reason = fmt::format(
        "GPU util {} but SM active {} (< {} of util){}: kernels resident, SMs "
        "mostly idle",
        Pct(f.util), Pct(f.sm), Pct(kStarvedSmPerUtilBelow.value()), f.coverage_note);
    return true;
  }
  return false;
}

// Memory-bound on NVML alone, or light: true when it is.
bool ByLightness(const Inputs& in, const Figures& f, Builder& b) {
  Classification& c = b.c;
  // memory-bound, NVML only: the f.footprint fills the granted memory while little is computed.
  if (!f.activity && f.footprint_known &&
      AtLeast(in.memory_kib_s, in.granted_memory_kib_s, kMemoryBoundFootprintAtLeast) &&
      Below(in.compute_us, f.alloc, kLightUtilBelow)) {
    c.cls = Class::kMemoryBound;
    b.Signal("memory_footprint", f.footprint);
    b.Threshold("memory_bound_footprint_at_least", kMemoryBoundFootprintAtLeast);
    b.Threshold("compute_light_util_below", kLightUtilBelow);
    c.reason = fmt::format(
        "memory footprint {} of the granted memory (>= {}) while GPU util is "
        "{} (< {}); NVML only: held memory, not bandwidth, is what it needs",
        Pct(f.footprint), Pct(kMemoryBoundFootprintAtLeast.value()), Pct(f.util),
        Pct(kLightUtilBelow.value()));
    return true;
  }

  // compute-light: computes, but under a quarter of its grant.
  if (Below(in.compute_us, f.alloc, kLightUtilBelow)) {
    c.cls = Class::kComputeLight;
    b.Threshold("compute_light_util_below", kLightUtilBelow);
    c.reason = fmt::format(
        "GPU util {} (< {}) over {} granted: uses under a quarter of its "
        "grant",
        Pct(f.util), Pct(kLightUtilBelow.value()), GpuHours(f.alloc));
    return true;
  }

  // With f.activity, a f.util between 25% and 50% whose SM active is under a quarter of it is light
  // too: the SMs did less than a quarter of an already modest f.util (not busy enough to call
  // starved, not healthy either).
  if (f.activity && in.activity_compute_us > 0 &&
      Below(in.activity.sm_active_us, in.activity_compute_us, kStarvedSmPerUtilBelow)) {
    c.cls = Class::kComputeLight;
    b.Signal("sm_active", f.sm);
    CoverageSignal(f, b);
    b.Threshold("busy_util_at_least", kBusyUtilAtLeast);
    b.Threshold("starved_sm_per_util_below", kStarvedSmPerUtilBelow);
    c.reason = fmt::format(
        "GPU util {} (< {}) with SM active {} (< {} of util){}: the SMs did "
        "less than util suggests",
        Pct(f.util), Pct(kBusyUtilAtLeast.value()), Pct(f.sm), Pct(kStarvedSmPerUtilBelow.value()),
        f.coverage_note);
    return true;
  }
  return false;
}

// Whether an estimated compute figure too uncertain decides it (light by the GPUs' own busy
// time, else unknown): true when it does; `bounded` says how an estimate's floor let it pass.
bool ByItsEstimate(const Inputs& in, const Figures& f, Builder& b, std::string& bounded) {
  Classification& c = b.c;
  // Healthy only on a compute figure that can bear it: an estimate whose rules were never
  // measured, or were measured far off, cannot tell a busy workload from a presence, unless its
  // bounds settle it: its floor (an estimate off by up to b is at least 1/(1+b) of itself, a
  // measured part is itself, summed over its rows) still a quarter of the grant, or the GPUs' own
  // measured busy time under a quarter.
  if (in.compute_quality == Quality::kEstimated) {
    const std::optional<double> band = MeasuredComputeBandOfRules(in.compute_rule);
    if (!band || *band > kTrustedComputeBand.value()) {
      const bool one_rule = in.compute_rule.find('+') == std::string::npos;
      const std::string estimate =
          fmt::format("GPU util {} is an estimate ({}{})", Pct(f.util),
                      in.compute_rule.empty() ? "rule unknown" : "rule " + in.compute_rule,
                      band ? fmt::format(", off by up to {:.0f}% on real hardware", *band * 100)
                      : one_rule ? ", never measured on real hardware"
                                 : ", part of it never measured on real hardware");
      const double low = Fraction(in.compute_floor_us, f.alloc);
      const double busy = Fraction(in.device_busy_us, f.alloc);
      b.Threshold("trusted_compute_band", kTrustedComputeBand);
      if (in.compute_floor_us > 0 && AtLeast(in.compute_floor_us, f.alloc, kLightUtilBelow)) {
        b.Signal("gpu_util_at_least", low);
        bounded = fmt::format("{}, so at least {} even so", estimate, Pct(low));
      } else if (band && in.device_busy_us > 0 &&
                 Below(in.device_busy_us, f.alloc, kLightUtilBelow)) {
        c.cls = Class::kComputeLight;
        b.Signal("device_busy", busy);
        b.Threshold("compute_light_util_below", kLightUtilBelow);
        c.reason = fmt::format(
            "{}, but the GPUs it ran on were busy {} of its grant (NVML's own device util, "
            "< {}): whatever the split, it used under a quarter of its grant",
            estimate, Pct(busy), Pct(kLightUtilBelow.value()));
        return true;
      } else {
        c.cls = Class::kUnknown;
        if (in.compute_floor_us > 0) b.Signal("gpu_util_at_least", low);
        if (band && in.device_busy_us > 0) b.Signal("device_busy", busy);
        // What is known, and what would decide it: a signal of the work itself rather than of
        // its presence.
        c.reason = fmt::format(
            "{}{}: too uncertain to call the grant used or light; SM activity would decide it: "
            "GPM (Hopper or newer) or dcgm-exporter beside the agent, or the kernel-time tracer",
            estimate,
            in.compute_floor_us > 0
                ? fmt::format(", so between {} and {} of its grant", Pct(low),
                              band && in.device_busy_us > 0 ? Pct(busy) : "more")
                : "");
        return true;
      }
    }
  }
  return false;
}

}  // namespace

std::string_view ToString(Class c) { return NameIn(kNames, c, "unknown"); }

Classification Classify(const Inputs& in) {
  Builder b;
  Classification& c = b.c;
  const Figures f(in);
  c.nvml_only = !f.activity;
  c.basis = f.activity ? BasisOf(in.activity_rule) : "nvml-only";

  if (in.allocated_us <= 0) {
    c.cls = Class::kUnallocated;
    c.reason = in.compute_us > 0 ? fmt::format(
                                       "no grant in the window ({} used without one): no share to "
                                       "judge use against",
                                       GpuHours(in.compute_us))
                                 : "no grant in the window: no share to judge use against";
    return c;
  }

  b.Signal("gpu_util", f.util);
  std::string bounded;  // how an estimate's bound decided it, for the reason
  if (ByGrantUse(in, f, b) || ByActivity(in, f, b) || ByLightness(in, f, b) ||
      ByItsEstimate(in, f, b, bounded))
    return c;
  c.cls = Class::kHealthy;
  b.Threshold("compute_light_util_below", kLightUtilBelow);
  if (f.activity) {
    b.Signal("sm_active", f.sm);
    b.Signal("dram_active", f.dram);
    CoverageSignal(f, b);
    b.Threshold("starved_sm_per_util_below", kStarvedSmPerUtilBelow);
    b.Threshold("memory_bound_dram_per_util_at_least", kMemoryBoundDramPerUtilAtLeast);
    c.reason = fmt::format(
        "GPU util {} with SM active {} and DRAM active {}{}: the grant is "
        "used",
        Pct(f.util), Pct(f.sm), Pct(f.dram), f.coverage_note);
  } else {
    if (f.footprint_known) b.Signal("memory_footprint", f.footprint);
    c.reason = fmt::format(
        "{} (>= {}); NVML only: SM activity unknown, so a busy but starved GPU cannot be told "
        "apart",
        bounded.empty() ? "GPU util " + Pct(f.util) : bounded, Pct(kLightUtilBelow.value()));
  }
  return c;
}

}  // namespace gpuledger::utilization
