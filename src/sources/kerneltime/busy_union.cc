#include "sources/kerneltime/busy_union.h"

#include <algorithm>
#include <iterator>

namespace gpuledger::kerneltime {

void BusyUnion::Add(std::uint64_t start_ns, std::uint64_t end_ns) {
  if (end_ns <= start_ns) return;
  ++kernels_;
  if (start_ns < closed_before_ns_) {
    clipped_ns_ += std::min(end_ns, closed_before_ns_) - start_ns;
    start_ns = closed_before_ns_;
    if (end_ns <= start_ns) return;
  }
  // Merge with every open interval it touches or overlaps.
  auto it = open_.upper_bound(start_ns);
  if (it != open_.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= start_ns) it = prev;
  }
  std::uint64_t lo = start_ns, hi = end_ns;
  while (it != open_.end() && it->first <= hi) {
    lo = std::min(lo, it->first);
    hi = std::max(hi, it->second);
    open_ns_ -= it->second - it->first;
    it = open_.erase(it);
  }
  open_.emplace(lo, hi);
  open_ns_ += hi - lo;
  while (open_.size() > capacity_) CommitOldest();
}

void BusyUnion::CommitOldest() {
  auto oldest = open_.begin();
  const std::uint64_t length = oldest->second - oldest->first;
  committed_ns_ += length;
  open_ns_ -= length;
  closed_before_ns_ = oldest->second;
  open_.erase(oldest);
}

}  // namespace gpuledger::kerneltime
