#pragma once
// Advice replayed before it is shown (issue 59): every recommendation that moves a workload is
// run hour by hour against the workload's own demand series over the window it came from
// (workload_hours.h), laid out as it says (rightsizing::Layout). An hour does not fit when one
// of its GPUs' memory peak passes what the layout holds, its compute passes what the layout
// does, or more of its GPUs were busy (above 5% of a GPU) than the layout has; `release` fits
// no busy hour at all. The percentile the plan was sized at allows its share of misfit hours
// (p95: 5% of the hours, rounded down); a move past that is risky: its confidence is low, it
// ranks after every move that fits, and when none fits the advice is to keep, saying why.
// Pure; the replay's figures are in Recommendation::replay.

#include "recommendations/workload_hours.h"
#include "rightsizing/recommend.h"

namespace gpuledger::recommendations {

// `recommendation` (with a layout) against `demand`: its hours, misfit hours by cause, the
// allowance of `percentile`, and the hours' cost at what it held and at what it would hold.
rightsizing::Replayed Replay(const rightsizing::Recommendation& recommendation,
                             const DemandSeries& demand, rightsizing::Percentile percentile);

// Replays every recommendation of `ranked` that has a layout, says what the replay found in its
// reasons, and ranks the risky ones after the others; a "keep" goes first when every move is
// risky (`usage` says what it holds; `options` the percentile and the confidence rules).
void ReplayRanked(std::vector<rightsizing::Recommendation>& ranked,
                  const rightsizing::WorkloadUsage& usage, const DemandSeries& demand,
                  const rightsizing::RightsizingOptions& options);

}  // namespace gpuledger::recommendations
