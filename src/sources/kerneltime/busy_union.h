#pragma once
// One process's busy time on one GPU from its kernels: the length of the union of their
// [start, end) intervals, so kernels that overlap (concurrent streams) count once (issue 31).
// Pure: CUPTI's activity records come in through Add, in any order within a window.
//
// Memory is bounded: at most `capacity` disjoint intervals are kept open. Beyond it the oldest
// are committed to the total and everything before the end of the last committed one is
// closed: a record arriving later that reaches back before it is clipped there (CUPTI delivers
// a kernel's record after it ends, per buffer, so a record that late is rare; `clipped_ns`
// says how much was cut). busy_ns() never decreases: a reader may take differences.
//
// Thread-compatible: one writer (the tracer's flush thread).

#include <cstdint>
#include <map>

namespace gpuledger::kerneltime {

class BusyUnion {
 public:
  explicit BusyUnion(std::size_t capacity = 4096) : capacity_(capacity) {}

  // One kernel, [start_ns, end_ns) on the GPU's clock. Empty or reversed intervals are ignored.
  void Add(std::uint64_t start_ns, std::uint64_t end_ns);

  // The union's length so far: committed plus the open intervals.
  std::uint64_t busy_ns() const { return committed_ns_ + open_ns_; }
  std::uint64_t kernels() const { return kernels_; }
  std::uint64_t clipped_ns() const { return clipped_ns_; }
  std::size_t open_intervals() const { return open_.size(); }

 private:
  void CommitOldest();

  std::size_t capacity_;
  std::map<std::uint64_t, std::uint64_t> open_;  // start -> end, disjoint and not touching
  std::uint64_t open_ns_ = 0;                    // Σ (end - start) over open_
  std::uint64_t committed_ns_ = 0;
  std::uint64_t closed_before_ns_ = 0;  // nothing before this is counted again
  std::uint64_t kernels_ = 0;
  std::uint64_t clipped_ns_ = 0;
};

}  // namespace gpuledger::kerneltime
