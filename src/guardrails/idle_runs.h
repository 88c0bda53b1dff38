#pragma once
// idle-allocation findings from the ledger's rows, in two steps so that a reader may hold a
// day's part and not its rows (ledger/findings.h holds them for the days that ended):
//
//   IdleHours gathers one day's rows (or a part of a day) into each series' idle segments: a
//   series is a consumer on a device (a MIG instance, else the GPU) of a node, its rows of one
//   hour summed; an hour is idle when the allocation is held with compute at most
//   policy.idle_compute_fraction of it; a segment is consecutive idle hours of one exemption
//   (the policy's answer for the labels of each hour's first row).
//   IdleRuns joins the days' segments, oldest first, into runs: a run begins at an idle hour
//   of a subject not exempt and goes on through consecutive idle hours whatever their labels
//   (a subject is exempt by the labels its run began with). A run of at least
//   policy.idle_allocation_hours hours is a finding: first seen at the start of its first
//   hour, last seen at the end of its last; resolved at that end when the run ended before
//   `now_us`'s last complete hour (the consumer got busy or left), open otherwise. Priced as
//   they go: the allocation held, at each hour's price. Host processes are left out.
//
// A day's segments depend on the rows, the idle fraction and the exemptions (IdlePolicyKey),
// never on the run length asked for or on other days.

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "guardrails/policy.h"
#include "guardrails/price_findings.h"
#include "model/consumer.h"

namespace gpuledger::guardrails {

// What a day's segments depend on in `policy`: equal keys, equal segments.
std::string IdlePolicyKey(const Policy& policy);

// Consecutive idle hours of a series with one exemption, summed.
struct IdleSegment {
  Micros from_us = 0;  // its first hour
  int hours = 0;
  bool exempt = false;
  GpuMicros allocated_us = 0, compute_us = 0;
  Nanos cost_nanos = 0;   // each row's allocation at its device-hour's price
  std::string device_id;  // its first hour's first row's
};

// A series' idle segments in a day, in hour order.
struct IdleSeriesDay {
  std::string node;
  ConsumerRef subject;
  std::string device;    // a MIG instance, else the GPU
  std::string workload;  // the subject's (Finding::workload); "" where not known
  std::vector<IdleSegment> segments;
};

class IdleHours {
 public:
  explicit IdleHours(const Policy& policy) : policy_(policy) {}

  using Series = std::size_t;
  // The series `row` is of (its node, subject and device).
  Series SeriesOf(const FindingRow& row);
  // A row of `series`, in hour order within it; `labels`: its subject's pod labels, which must
  // outlive the hour (until a row of a later hour of the series, or Finish): the policy is asked
  // whether they exempt it only when the hour turns out idle.
  void Add(Series series, const FindingRow& row, const HourPrice& device, const LabelMap& labels);
  // The series with an idle hour, each with its segments.
  std::vector<IdleSeriesDay> Finish();

 private:
  struct State {
    IdleSeriesDay day;
    bool host = false;
    // The hour being gathered (its rows summed).
    Micros hour_us = -1;
    GpuMicros allocated_us = 0, compute_us = 0;
    Nanos cost_nanos = 0;
    std::string device_id;             // its first row's
    const LabelMap* labels = nullptr;  // its first row's
  };
  void EndHour(State& s);

  const Policy& policy_;
  std::map<std::tuple<std::string, ConsumerRef, std::string>, Series> index_;
  std::vector<State> states_;
};

class IdleRuns {
 public:
  IdleRuns(const Policy& policy, std::string cluster, Micros now_us);

  // The segments of the part of the window from `part_from_us`, after those of every earlier
  // part: a run that the part does not go on with ends.
  void AddDay(const std::vector<IdleSeriesDay>& day, Micros part_from_us);
  // The runs long enough, priced, in the order they ended.
  std::vector<PricedFinding> Finish();

 private:
  struct Run {
    std::string workload;
    int hours = 0;
    Micros first_us = 0, last_us = 0;  // its first and last hours
    GpuMicros allocated_us = 0, compute_us = 0;
    Nanos cost_nanos = 0;
    std::string device_id;
  };
  using Key = std::tuple<std::string, ConsumerRef, std::string>;  // node, subject, device
  void End(const Key& key, const Run& run);

  const Policy& policy_;
  const bool enabled_;
  std::string cluster_;
  Micros open_from_us_;
  std::map<Key, Run> runs_;  // the runs a later hour may go on with
  std::vector<PricedFinding> found_;
};

}  // namespace gpuledger::guardrails
