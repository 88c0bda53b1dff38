// The bytes of what WorkloadHours gathered (rightsize_days.h keeps a day of them in the ledger).
//
// Layout, all varints (common/varint.h), signed ones zigzagged: the format; the model names,
// the pricing class names (a count, then each); the workloads with rows (a count, then each:
// key, namespace, allocated µs as its low and high 64 bits, per percentile its busy-GPU counts
// (a count of pairs: GPUs, hours) and busy compute histogram, the all-GPU compute and memory
// histograms, the most GPUs of one pod, the memory peak, allocated µs by model, memory by
// model, allocated µs by class (each a count, then values), and its demand series: a count of
// hours, each hour as the step from the one before, each hour's first GPU-hour as the step
// from the hour before's, a count of GPU-hours, their compute shares as four bytes each (the
// float's, little-endian: the exact float), then each memory in MiB).
#include <bit>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "common/varint.h"
#include "recommendations/workload_hours.h"

namespace gpuledger::recommendations {
namespace {

template <typename T>
void PutValues(const std::vector<T>& values, std::string& out) {
  PutUnsigned(values.size(), out);
  for (T v : values) PutSigned(static_cast<std::int64_t>(v), out);
}

template <std::size_t N>
void PutCounts(const std::array<std::int64_t, N>& counts, std::string& out) {
  for (std::int64_t c : counts) PutSigned(c, out);
}

// A count of things each taking at least `min_bytes`: past what is left is a damaged count.
std::uint64_t ReadCount(VarintReader& r, std::string_view field, std::size_t min_bytes = 1) {
  const std::uint64_t n = r.Unsigned(field);
  if (n > r.left() / min_bytes) r.Fail(field, "is more than there can be");
  return r.ok() ? n : 0;
}

template <typename T>
void ReadValues(VarintReader& r, std::string_view field, std::size_t at_most,
                std::vector<T>& values) {
  const std::uint64_t n = ReadCount(r, field);
  if (n > at_most) r.Fail(field, fmt::format("names {} entries of {}", n, at_most));
  values.resize(r.ok() ? n : 0);
  for (T& v : values) v = static_cast<T>(r.Signed(field));
}

// Far above any count a window holds (samples or hours: a month of 1 Hz samples of 10,000 GPUs
// is 2^35), so that percentiles summing them cannot overflow.
constexpr std::int64_t kMaxCount = std::int64_t{1} << 40;

std::int64_t ReadCounted(VarintReader& r, std::string_view field) {
  const std::int64_t c = r.Signed(field);
  if (c < 0 || c > kMaxCount) r.Fail(field, "is not a count");
  return c;
}

template <std::size_t N>
void ReadCounts(VarintReader& r, std::string_view field, std::array<std::int64_t, N>& counts) {
  for (std::int64_t& c : counts) c = ReadCounted(r, field);
}

}  // namespace

std::string WorkloadHours::Encode() const {
  std::string out;
  PutUnsigned(WorkloadHours::kFormat, out);
  for (const Names* names : {&models_, &classes_}) {
    PutUnsigned(names->text.size(), out);
    for (const std::string& name : names->text) PutText(name, out);
  }
  std::size_t with_rows = 0;
  for (const Acc& a : accs_) with_rows += a.has_rows ? 1 : 0;
  PutUnsigned(with_rows, out);
  for (const auto& [key, index] : index_) {
    const Acc& a = accs_[index];
    if (!a.has_rows) continue;
    PutText(a.key, out);
    PutText(a.namespace_name, out);
    const auto allocated = static_cast<unsigned __int128>(a.allocated_us);
    PutUnsigned(static_cast<std::uint64_t>(allocated), out);
    PutUnsigned(static_cast<std::uint64_t>(allocated >> 64), out);
    for (std::size_t p = 0; p < kPercentiles; ++p) {
      PutUnsigned(a.hours_by_busy_gpus[p].size(), out);
      for (const auto& [gpus, hours] : a.hours_by_busy_gpus[p]) {
        PutSigned(gpus, out);
        PutSigned(hours, out);
      }
      PutCounts(a.busy_compute[p], out);
    }
    PutCounts(a.all_compute, out);
    PutCounts(a.memory, out);
    PutSigned(a.max_gpus_per_pod, out);
    PutSigned(a.memory_peak_bytes, out);
    PutValues(a.allocated_by_model, out);
    PutValues(a.memory_by_model, out);
    PutValues(a.allocated_by_class, out);
    const DemandSeries& d = a.demand;
    PutUnsigned(d.hours.size(), out);
    Micros hour = 0;
    for (Micros h : d.hours) PutSigned(h - std::exchange(hour, h), out);
    std::uint32_t first = 0;
    for (std::uint32_t f : d.first) PutUnsigned(f - std::exchange(first, f), out);
    PutUnsigned(d.compute.size(), out);
    std::string shares(d.compute.size() * 4, '\0');
    for (std::size_t i = 0; i < d.compute.size(); ++i) {
      const auto bits = std::bit_cast<std::uint32_t>(d.compute[i]);
      for (std::size_t b = 0; b < 4; ++b) shares[4 * i + b] = static_cast<char>(bits >> (8 * b));
    }
    out.append(shares);
    for (std::uint32_t mib : d.memory_mib) PutUnsigned(mib, out);
  }
  return out;
}

Result<WorkloadHours> WorkloadHours::Decode(std::string_view bytes) {
  VarintReader r(bytes, "workload hours");
  if (const std::uint64_t format = r.Unsigned("format"); r.ok() && format != WorkloadHours::kFormat)
    r.Fail("format",
           fmt::format("{} is not {}, the one this build reads", format, WorkloadHours::kFormat));
  WorkloadHours out;
  for (Names* names : {&out.models_, &out.classes_}) {
    const std::uint64_t n = ReadCount(r, "names");
    for (std::uint64_t i = 0; r.ok() && i < n; ++i) {
      const std::size_t before = names->text.size();
      names->Of(r.Text("name"));
      if (names->text.size() == before) r.Fail("name", "is named twice");
    }
  }
  const std::uint64_t workloads = ReadCount(r, "workload count");
  std::string before;  // the last workload's key: they come in order, each once
  for (std::uint64_t w = 0; r.ok() && w < workloads; ++w) {
    const std::string key(r.Text("workload"));
    const std::string namespace_name(r.Text("namespace"));
    if (!r.ok()) break;
    if (w > 0 && key <= before) {
      r.Fail("workload", "is not after the one before");
      break;
    }
    before = key;
    Acc& a = out.accs_[out.Workload(key, namespace_name)];
    a.has_rows = true;
    const std::uint64_t low = r.Unsigned("allocated");
    const std::uint64_t high = r.Unsigned("allocated");
    a.allocated_us = static_cast<__int128>((static_cast<unsigned __int128>(high) << 64) | low);
    for (std::size_t p = 0; p < kPercentiles; ++p) {
      const std::uint64_t n = ReadCount(r, "busy GPU counts", 2);
      for (std::uint64_t i = 0; r.ok() && i < n; ++i) {
        const std::int64_t gpus = r.Signed("busy GPUs");
        if (i > 0 && gpus <= a.hours_by_busy_gpus[p].rbegin()->first)
          r.Fail("busy GPUs", "is not after the count before");
        a.hours_by_busy_gpus[p][gpus] = ReadCounted(r, "hours");
      }
      ReadCounts(r, "busy compute", a.busy_compute[p]);
    }
    ReadCounts(r, "compute", a.all_compute);
    ReadCounts(r, "memory", a.memory);
    a.max_gpus_per_pod = r.Signed("GPUs of a pod");
    a.memory_peak_bytes = r.Signed("memory peak");
    ReadValues(r, "allocated by model", out.models_.text.size(), a.allocated_by_model);
    ReadValues(r, "memory by model", out.models_.text.size(), a.memory_by_model);
    ReadValues(r, "allocated by class", out.classes_.text.size(), a.allocated_by_class);
    if (r.ok() && a.memory_by_model.size() != a.allocated_by_model.size())
      r.Fail("memory by model", "is not one a model");
    DemandSeries& d = a.demand;
    const std::uint64_t hours = ReadCount(r, "demand hours", 2);
    d.hours.resize(hours);
    Micros hour = 0;
    for (Micros& h : d.hours) {
      const std::int64_t step = r.Signed("demand hour");
      if (r.ok() &&
          ((&h != d.hours.data() && step <= 0) || __builtin_add_overflow(hour, step, &hour)))
        r.Fail("demand hour", "is not after the one before");
      h = hour;
    }
    d.first.resize(hours);
    std::uint64_t first = 0;
    for (std::uint32_t& f : d.first) {
      const std::uint64_t step = r.Unsigned("first GPU");
      if (step > UINT32_MAX || (first += step) > UINT32_MAX) r.Fail("first GPU", "is past 32 bits");
      f = static_cast<std::uint32_t>(first);
    }
    const std::uint64_t gpu_hours = ReadCount(r, "demand GPU-hours", 5);
    if (r.ok() && ((hours > 0 && d.first.back() > gpu_hours) ||
                   (hours > 0 && d.first.front() != 0) || (hours == 0 && gpu_hours != 0)))
      r.Fail("first GPU", "is not within the GPU-hours");
    const std::string_view shares = r.Raw(r.ok() ? gpu_hours * 4 : 0, "compute shares");
    d.compute.resize(shares.size() / 4);
    for (std::size_t i = 0; i < d.compute.size(); ++i) {
      std::uint32_t bits = 0;
      for (std::size_t b = 0; b < 4; ++b)
        bits |= std::uint32_t{static_cast<std::uint8_t>(shares[4 * i + b])} << (8 * b);
      d.compute[i] = std::bit_cast<float>(bits);
      // A share is a number from 0 (the percentiles order them: a NaN has no place).
      if (!std::isfinite(d.compute[i]) || d.compute[i] < 0)
        r.Fail("compute share", "is not a share");
    }
    d.memory_mib.resize(d.compute.size());
    for (std::uint32_t& mib : d.memory_mib) {
      const std::uint64_t v = r.Unsigned("memory MiB");
      if (v > UINT32_MAX) r.Fail("memory MiB", "is past 32 bits");
      mib = static_cast<std::uint32_t>(v);
    }
  }
  if (r.ok() && !r.AtEnd()) r.Fail("end", "is followed by more bytes");
  if (!r.ok()) return Internal(r.what());
  return out;
}

}  // namespace gpuledger::recommendations
