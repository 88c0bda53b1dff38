#include "ingest/counter_ledger.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpuledger::ingest {
namespace {

constexpr Micros kH0 = 1'800'000'000LL * kMicrosPerSecond;  // an hour boundary (500000 h)
constexpr Micros kS = kMicrosPerSecond;

struct Dev {
  std::string gpu;
  double metered = 0, busy = 0, idle = 0, unattributed = 0, energy = 0;
  std::string layout = {};  // device_info's layout label
};
struct Ctr {
  std::string pod;
  std::string gpu;
  double allocated = 0, compute = 0, memory = 0, energy = 0;
  // Activity counters (seconds) and attribution_info's newer labels; an empty activity_source
  // renders the container as an older agent does: neither the counters nor the labels.
  double sm = 0, occupancy = 0, tensor = 0, dram = 0;
  std::string activity_source = {}, share_source = {};
};

// One agent scrape as the collector renders it (labels sorted by name).
TargetScrape Scrape(const std::string& instance, Micros at, const std::vector<Dev>& devs,
                    const std::vector<Ctr>& ctrs) {
  TargetScrape s{instance, at, {}};
  for (const Dev& d : devs) {
    s.samples.push_back({"gpuledger_device_info",
                         {{"gpu_model", "A100-80GB"},
                          {"gpu_uuid", d.gpu},
                          {"layout", d.layout},
                          {"mig_profile", ""},
                          {"node", instance + "-node"},
                          {"parent_uuid", ""},
                          {"sharing_mode", "time-slicing"}},
                         1});
    Labels l{{"gpu_uuid", d.gpu}};
    s.samples.push_back({"gpuledger_device_metered_seconds_total", l, d.metered});
    s.samples.push_back({"gpuledger_device_busy_seconds_total", l, d.busy});
    s.samples.push_back({"gpuledger_device_idle_seconds_total", l, d.idle});
    s.samples.push_back({"gpuledger_device_unattributed_seconds_total", l, d.unattributed});
    s.samples.push_back({"gpuledger_device_energy_joules_total", l, d.energy});
    s.samples.push_back({"gpuledger_device_memory_total_bytes", l, 80.0 * kGiB});
  }
  for (const Ctr& c : ctrs) {
    Labels l{{"container", "main"},
             {"gpu_uuid", c.gpu},
             {"namespace", "ml"},
             {"pod", c.pod},
             {"pod_uid", "uid-" + c.pod}};
    s.samples.push_back({"gpuledger_container_allocated_gpu_seconds_total", l, c.allocated});
    s.samples.push_back({"gpuledger_container_compute_gpu_seconds_total", l, c.compute});
    s.samples.push_back({"gpuledger_container_memory_byte_seconds_total", l, c.memory});
    s.samples.push_back({"gpuledger_container_energy_joules_total", l, c.energy});
    s.samples.push_back({"gpuledger_container_memory_used_bytes", l, 1.0 * kGiB});
    Labels info = l;
    info.push_back({"compute_source", "measured:process-samples"});
    info.push_back({"memory_source", "measured"});
    if (!c.activity_source.empty()) {
      s.samples.push_back({"gpuledger_container_sm_active_gpu_seconds_total", l, c.sm});
      s.samples.push_back({"gpuledger_container_sm_occupancy_gpu_seconds_total", l, c.occupancy});
      s.samples.push_back({"gpuledger_container_tensor_active_gpu_seconds_total", l, c.tensor});
      s.samples.push_back({"gpuledger_container_dram_active_gpu_seconds_total", l, c.dram});
      info.push_back({"activity_source", c.activity_source});
      info.push_back({"share_source", c.share_source});
    }
    std::sort(info.begin(), info.end());
    s.samples.push_back({"gpuledger_container_attribution_info", info, 1});
  }
  return s;
}

const UsageRow* Row(const LedgerHour& h, const std::string& pod) {
  for (const UsageRow& r : h.usage)
    if (r.consumer.ref.pod == pod) return &r;
  return nullptr;
}

void ExpectConserved(const LedgerHour& h) {
  const DeviceHour& d = h.device;
  GpuMicros allocated = 0, compute = 0;
  MilliJoules energy = 0;
  for (const UsageRow& r : h.usage) {
    allocated += r.allocated_us;
    compute += r.compute_us;
    energy += r.energy_mj;
  }
  EXPECT_EQ(d.metered_us + d.unmetered_us, kMicrosPerHour) << d.gpu.value;
  EXPECT_EQ(allocated + d.unallocated_us, d.metered_us) << d.gpu.value << " @" << d.hour_us;
  EXPECT_EQ(compute + d.unattributed_us, d.busy_us) << d.gpu.value << " @" << d.hour_us;
  EXPECT_EQ(d.busy_us + d.idle_us, d.metered_us) << d.gpu.value << " @" << d.hour_us;
  EXPECT_EQ(energy + d.unattributed_energy_mj + d.idle_energy_mj, d.energy_mj);
}

std::string Dump(const std::vector<LedgerHour>& hours) {
  std::string out;
  for (const LedgerHour& h : hours) {
    const DeviceHour& d = h.device;
    out += fmt::format(
        "{} {} {} {} {} [{}] m={} u={} un={} b={} i={} ua={} e={} ie={} ue={} mem={}\n", d.hour_us,
        d.gpu.value, d.node, d.gpu_model, ToString(d.sharing), d.layout, d.metered_us,
        d.unmetered_us, d.unallocated_us, d.busy_us, d.idle_us, d.unattributed_us, d.energy_mj,
        d.idle_energy_mj, d.unattributed_energy_mj, d.memory_total_bytes);
    for (const UsageRow& r : h.usage)
      out += fmt::format(
          "  {} a={} c={} mb={} e={} peak={} q={}/{} {} act={}/{}/{}/{} {}:{} "
          "s={}\n",
          r.consumer.ref.Key(), r.allocated_us, r.compute_us, r.memory_kib_s, r.energy_mj,
          r.peak_memory_bytes, ToString(r.compute_quality), ToString(r.memory_quality),
          r.compute_rule, r.activity.sm_active_us, r.activity.sm_occupancy_us,
          r.activity.tensor_active_us, r.activity.dram_active_us, ToString(r.activity_quality),
          r.activity_rule, r.share_source);
  }
  return out;
}

// KAI/Run:ai: the pod watch's annotations (describe) move the fraction of the reservation
// pod's allocation to the annotated pod that ran without a grant of its own.
TEST(CounterLedger, AnnotatedFractionsComeOutOfTheKaiReservation) {
  CounterLedger l("c1", [](const ConsumerRef& ref) {
    ConsumerInfo info{ref};
    if (ref.pod == "half") info.annotated_gpu_fraction = 0.5;
    return info;
  });
  auto scrape = [&](Micros at, double t) {
    TargetScrape s =
        Scrape("a:9400", at, {{"GPU-A", t, t / 2, t / 2, 0, 0}},
               {{"gpu-reservation", "GPU-A", t, 0, 0, 0}, {"half", "GPU-A", 0, t / 2, t * 1e9, 0}});
    // KAI's reservation pods live in their own namespace.
    const std::pair<std::string, std::string> reservation_pod{"pod", "gpu-reservation"};
    for (auto& sample : s.samples) {
      auto& labels = sample.labels;
      if (std::find(labels.begin(), labels.end(), reservation_pod) == labels.end()) continue;
      for (auto& [k, v] : labels)
        if (k == "namespace") v = "runai-reservation";
    }
    return s;
  };
  l.Feed(scrape(kH0, 0));
  l.Feed(scrape(kH0 + 600 * kS, 600));
  auto hours = l.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 1u);
  const UsageRow* half = Row(hours[0], "half");
  const UsageRow* reservation = Row(hours[0], "gpu-reservation");
  ASSERT_NE(half, nullptr);
  ASSERT_NE(reservation, nullptr);
  EXPECT_EQ(half->allocated_us, 300 * kS);
  EXPECT_EQ(half->share_source, "annotation:gpu-fraction");
  EXPECT_EQ(reservation->allocated_us, 300 * kS);
  EXPECT_EQ(hours[0].device.unallocated_us, 0);
}

TEST(CounterLedger, DeltasBecomeExactHourRows) {
  CounterLedger l("c1", nullptr);
  l.Feed(Scrape("a:9400", kH0, {{"GPU-A", 100, 50, 50, 10, 1000, "2 replicas"}},
                {{"p1", "GPU-A", 40, 20, 4e9, 300}, {"p2", "GPU-A", 30, 20, 0, 200}}));
  // First scrape of an agent: a baseline only.
  EXPECT_TRUE(l.Hours(INT64_MAX).empty());
  l.Feed(Scrape(
      "a:9400", kH0 + 600 * kS, {{"GPU-A", 700, 350, 350, 70, 61000, "2 replicas"}},
      {{"p1", "GPU-A", 340, 140, 4e9 + 600 * 2e9, 20300}, {"p2", "GPU-A", 180, 140, 0, 20200}}));
  auto hours = l.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 1u);
  const DeviceHour& d = hours[0].device;
  EXPECT_EQ(d.hour_us, kH0);
  EXPECT_EQ(d.cluster, "c1");
  EXPECT_EQ(d.node, "a:9400-node");
  EXPECT_EQ(d.gpu_model, "A100-80GB");
  EXPECT_EQ(d.sharing, SharingMode::kTimeSlicing);
  EXPECT_EQ(d.layout, "2 replicas");  // as the agent's device_info says
  EXPECT_EQ(d.metered_us, 600 * kS);
  EXPECT_EQ(d.unmetered_us, 3000 * kS);
  EXPECT_EQ(d.busy_us, 300 * kS);
  EXPECT_EQ(d.idle_us, 300 * kS);
  EXPECT_EQ(d.unattributed_us, 60 * kS);
  EXPECT_EQ(d.unallocated_us, 150 * kS);
  EXPECT_EQ(d.energy_mj, 60'000'000);
  EXPECT_EQ(d.memory_total_bytes, 80 * kGiB);
  const UsageRow* p1 = Row(hours[0], "p1");
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(p1->allocated_us, 300 * kS);
  EXPECT_EQ(p1->compute_us, 120 * kS);
  EXPECT_EQ(p1->memory_kib_s, 1'171'875'000);  // 600 s x 2e9 B / 1024
  EXPECT_EQ(p1->energy_mj, 20'000'000);
  EXPECT_EQ(p1->peak_memory_bytes, kGiB);
  EXPECT_EQ(p1->compute_quality, Quality::kMeasured);
  EXPECT_EQ(p1->compute_rule, "process-samples");
  EXPECT_EQ(p1->memory_quality, Quality::kMeasured);
  EXPECT_EQ(p1->consumer.ref.pod_uid.value, "uid-p1");
  EXPECT_EQ(p1->consumer.ref.namespace_name, "ml");
  EXPECT_EQ(Row(hours[0], "p2")->allocated_us, 150 * kS);
  // The rest of the energy (60 kJ - 40 kJ) is split between unattributed (60 s) and idle (300 s).
  EXPECT_EQ(d.unattributed_energy_mj + d.idle_energy_mj, 20'000'000);
  EXPECT_EQ(d.unattributed_energy_mj, 20'000'000 * 60 / 360);
  ExpectConserved(hours[0]);
}

// A reset in the middle (the agent restarted, pod p2 gone), then a missed scrape.
// An agent that started while the ledger was already watching counts from zero at its start;
// one that was running before is a baseline at its first scrape (as Prometheus treats it).
TEST(CounterLedger, AgentStartedWhileWatchedCountsFromItsStart) {
  for (bool watched_before : {true, false}) {
    CounterLedger l("c1", nullptr);
    const Micros agent_start = kH0 + 600 * kS;
    l.ObserveSince(watched_before ? kH0 : agent_start + kS);
    TargetScrape first =
        Scrape("a", agent_start + 30 * kS, {{"GPU-A", 30, 15, 15, 0}}, {{"p1", "GPU-A", 7.5}});
    first.samples.push_back(
        {"gpuledger_agent_start_time_seconds", {}, static_cast<double>(agent_start) / 1e6});
    l.Feed(first);
    l.Feed(Scrape("a", agent_start + 90 * kS, {{"GPU-A", 90, 45, 45, 0}}, {{"p1", "GPU-A", 22.5}}));
    auto hours = l.Hours(INT64_MAX);
    ASSERT_EQ(hours.size(), 1u);
    EXPECT_EQ(hours[0].device.metered_us, (watched_before ? 90 : 60) * kS);
    EXPECT_EQ(Row(hours[0], "p1")->allocated_us, (watched_before ? 90 : 60) * kS / 4);
    ExpectConserved(hours[0]);
  }
}

TEST(CounterLedger, ResetThenMissedScrape) {
  CounterLedger l("c1", nullptr);
  l.Feed(Scrape("a", kH0, {{"GPU-A", 100, 50, 50, 10}},
                {{"p1", "GPU-A", 40, 20}, {"p2", "GPU-A", 30, 20}}));
  l.Feed(Scrape("a", kH0 + 600 * kS, {{"GPU-A", 700, 350, 350, 70}},
                {{"p1", "GPU-A", 340, 140}, {"p2", "GPU-A", 180, 140}}));
  // Restarted 300 s ago: every counter went back; the new values are the deltas.
  l.Feed(Scrape("a", kH0 + 1200 * kS, {{"GPU-A", 300, 100, 200, 0}}, {{"p1", "GPU-A", 150, 100}}));
  EXPECT_EQ(l.resets(), 6);  // metered, busy, idle, unattributed, p1 allocated, p1 compute
  // kH0+1800 missed; the next delta carries its seconds.
  l.Feed(
      Scrape("a", kH0 + 2400 * kS, {{"GPU-A", 1500, 700, 800, 100}}, {{"p1", "GPU-A", 1350, 600}}));
  auto hours = l.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 1u);
  const DeviceHour& d = hours[0].device;
  EXPECT_EQ(d.metered_us, (600 + 300 + 1200) * kS);
  EXPECT_EQ(d.unmetered_us, 1500 * kS);  // 300 s the agent was down + 1200 s not yet seen
  EXPECT_EQ(d.busy_us, (300 + 100 + 600) * kS);
  EXPECT_EQ(d.unattributed_us, (60 + 0 + 100) * kS);
  EXPECT_EQ(Row(hours[0], "p1")->allocated_us, (300 + 150 + 1200) * kS);
  EXPECT_EQ(Row(hours[0], "p1")->compute_us, (120 + 100 + 500) * kS);
  EXPECT_EQ(Row(hours[0], "p2")->allocated_us, 150 * kS);
  EXPECT_EQ(d.unallocated_us, (2100 - 1650 - 150) * kS);
  ExpectConserved(hours[0]);
}

TEST(CounterLedger, IntervalAcrossAnHourBoundarySplitsByTime) {
  CounterLedger l("c1", nullptr);
  l.Feed(Scrape("a", kH0 + 2700 * kS, {{"GPU-A", 0, 0, 0, 0}}, {{"p1", "GPU-A", 0.001, 0}}));
  l.Feed(Scrape("a", kH0 + 3900 * kS, {{"GPU-A", 1200, 400, 800, 0, 400}},
                {{"p1", "GPU-A", 800.001, 400, 0, 400}}));
  auto hours = l.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 2u);
  EXPECT_EQ(hours[0].device.metered_us, 900 * kS);  // 45 min : 15 min = 3 : 1
  EXPECT_EQ(hours[1].device.metered_us, 300 * kS);
  EXPECT_EQ(Row(hours[0], "p1")->allocated_us, 600 * kS);
  EXPECT_EQ(Row(hours[1], "p1")->allocated_us, 200 * kS);
  EXPECT_EQ(Row(hours[0], "p1")->compute_us, 300 * kS);
  EXPECT_EQ(hours[0].device.energy_mj, 300'000);
  EXPECT_EQ(hours[1].device.energy_mj, 100'000);
  EXPECT_EQ(hours[1].device.unmetered_us, 3300 * kS);
  for (const auto& h : hours) ExpectConserved(h);
  // Hours(before) gives only hours that start before it.
  EXPECT_EQ(l.Hours(kH0 + kMicrosPerHour).size(), 1u);
}

// The agent is down from :20 to :40 (scrapes fail) and comes back with counters from zero.
TEST(CounterLedger, AgentDownTwentyMinutesIsUnmetered) {
  CounterLedger l("c1", nullptr);
  double m = 5000;  // long-running agent
  for (int min = 0; min <= 20; min += 5, m += 300)
    l.Feed(Scrape("a", kH0 + min * 60 * kS, {{"GPU-A", m, m / 2, m / 2, 0}}, {{"p1", "GPU-A", m}}));
  // Restarted at :40; first successful scrape at :45.
  double m2 = 300;
  for (int min = 45; min <= 60; min += 5, m2 += 300)
    l.Feed(Scrape("a", kH0 + min * 60 * kS, {{"GPU-A", m2, m2 / 2, m2 / 2, 0}},
                  {{"p1", "GPU-A", m2}}));
  auto hours = l.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 1u);
  EXPECT_EQ(hours[0].device.metered_us, 40 * 60 * kS);
  EXPECT_EQ(hours[0].device.unmetered_us, 20 * 60 * kS);
  EXPECT_EQ(Row(hours[0], "p1")->allocated_us, 40 * 60 * kS);
  ExpectConserved(hours[0]);
}

// A gap over whole hours: those hours are rows with nothing metered, never guessed.
TEST(CounterLedger, WholeHourGapIsUnmeteredRows) {
  CounterLedger l("c1", nullptr);
  l.Feed(Scrape("a", kH0 + 3000 * kS, {{"GPU-A", 10}}, {}));
  // The counter went on (610 > 10): 600 s measured over the 2 h 50 min interval, spread by time.
  l.Feed(Scrape("a", kH0 + 3 * kMicrosPerHour + 600 * kS, {{"GPU-A", 610}}, {}));
  auto hours = l.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 4u);
  GpuMicros metered = 0;
  for (const auto& h : hours) {
    metered += h.device.metered_us;
    ExpectConserved(h);
  }
  EXPECT_EQ(metered, 600 * kS);
  // With a restart (counter back to 300) the new counts go to the last 300 s; the hours between
  // are rows with 0 metered.
  CounterLedger r("c1", nullptr);
  r.Feed(Scrape("a", kH0 + 3000 * kS, {{"GPU-A", 1000}}, {}));
  r.Feed(Scrape("a", kH0 + 3 * kMicrosPerHour + 600 * kS, {{"GPU-A", 300}}, {}));
  hours = r.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 4u);
  EXPECT_EQ(hours[0].device.metered_us, 0);
  EXPECT_EQ(hours[1].device.unmetered_us, kMicrosPerHour);
  EXPECT_EQ(hours[2].device.unmetered_us, kMicrosPerHour);
  EXPECT_EQ(hours[3].device.metered_us, 300 * kS);
}

TEST(CounterLedger, LateSampleRewritesItsHour) {
  CounterLedger l("c1", nullptr);
  l.Feed(Scrape("a", kH0 + 3000 * kS, {{"GPU-A", 0}}, {}));
  l.Feed(Scrape("b", kH0 + 3000 * kS, {{"GPU-B", 0}}, {}));
  l.Feed(Scrape("a", kH0 + 3700 * kS, {{"GPU-A", 700}}, {}));
  l.Feed(Scrape("b", kH0 + 3300 * kS, {{"GPU-B", 300}}, {}));
  auto first = l.TakeTouched();
  ASSERT_EQ(first.size(), 3u);  // (H0, A), (H0, B), (H1, A)
  EXPECT_EQ(first[1].device.gpu.value, "GPU-B");
  EXPECT_EQ(first[1].device.metered_us, 300 * kS);
  EXPECT_TRUE(l.TakeTouched().empty());
  // B's next scrape arrives after A moved on: B's hour H0 re-opens and is re-written whole.
  l.Feed(Scrape("b", kH0 + 3900 * kS, {{"GPU-B", 900}}, {}));
  auto again = l.TakeTouched();
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].device.hour_us, kH0);
  EXPECT_EQ(again[0].device.metered_us, 600 * kS);
  EXPECT_EQ(again[1].device.hour_us, kH0 + kMicrosPerHour);
  EXPECT_EQ(again[1].device.metered_us, 300 * kS);
  // An older scrape than the last of its instance is ignored and counted.
  l.Feed(Scrape("b", kH0 + 3800 * kS, {{"GPU-B", 1000}}, {}));
  EXPECT_EQ(l.ignored_scrapes(), 1);
  EXPECT_TRUE(l.TakeTouched().empty());
  // Forgotten hours are gone; a delta that falls into them is dropped and counted.
  l.Forget(kH0 + kMicrosPerHour);
  EXPECT_EQ(l.Hours(INT64_MAX).size(), 2u);
}

// A consumer that appears on a known agent counts from zero since the last scrape.
TEST(CounterLedger, NewSeriesOnAKnownAgentCountsFromZero) {
  CounterLedger l("c1", [](const ConsumerRef& r) {
    ConsumerInfo i;
    i.ref = r;
    i.owner_kind = "Deployment";
    i.owner_name = "trainer";
    return i;
  });
  l.Feed(Scrape("a", kH0, {{"GPU-A", 100}}, {}));
  l.Feed(Scrape("a", kH0 + 60 * kS, {{"GPU-A", 160}}, {{"p9", "GPU-A", 30, 10}}));
  auto hours = l.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 1u);
  EXPECT_EQ(Row(hours[0], "p9")->allocated_us, 30 * kS);
  EXPECT_EQ(Row(hours[0], "p9")->consumer.owner_name, "trainer");
  ExpectConserved(hours[0]);
}

// A deterministic random stream: 2 agents x 2 GPUs, pods coming and going, an agent restart,
// missed scrapes, 15 s scrapes over 2.5 h.
std::vector<TargetScrape> Stream() {
  std::mt19937_64 rng(7);
  std::vector<TargetScrape> out;
  struct Agent {
    std::string name;
    std::map<std::string, Dev> devs;
    std::map<std::string, Ctr> ctrs;
  };
  std::vector<Agent> agents{{"10.0.0.1:9400", {}, {}}, {"10.0.0.2:9400", {}, {}}};
  for (auto& a : agents)
    for (int g = 0; g < 2; ++g) {
      std::string gpu = fmt::format("GPU-{}-{}", a.name.substr(7, 1), g);
      a.devs[gpu] = Dev{gpu};
      a.devs[gpu].layout = g == 0 ? "4 replicas" : "";
    }
  const Micros start = kH0 + 1234 * kS + 567;
  for (int step = 0; step < 600; ++step) {
    const Micros at = start + step * 15 * kS;
    for (std::size_t ai = 0; ai < agents.size(); ++ai) {
      Agent& a = agents[ai];
      if (ai == 1 && step == 300) {  // agent restart: everything from zero
        for (auto& [g, d] : a.devs) d = Dev{g, 0, 0, 0, 0, 0, d.layout};
        a.ctrs.clear();
      }
      for (auto& [g, d] : a.devs) {
        const double dt = 15.0 - static_cast<double>(rng() % 100) / 1000.0;
        const double busy = dt * static_cast<double>(rng() % 1000) / 1000.0;
        const double unattr = busy * 0.1;
        d.metered += dt;
        d.busy += busy;
        d.idle += dt - busy;
        d.unattributed += unattr;
        d.energy += 250.0 * dt;
        for (int p = 0; p < 3; ++p) {
          const std::string pod = fmt::format("pod-{}-{}", (step / 200 + p) % 5, g);
          Ctr& c = a.ctrs[pod];
          c.pod = pod;
          c.gpu = g;
          c.allocated += dt / 4;
          c.compute += (busy - unattr) / 3;
          c.memory += dt * 1e9;
          c.energy += 250.0 * dt * 0.1;
          if (g.ends_with("-0")) {  // GPU 0s report activity (GPM), GPU 1s are older NVML-only
            c.sm += (busy - unattr) / 3 * 0.4;
            c.occupancy += (busy - unattr) / 3 * 0.2;
            c.tensor += (busy - unattr) / 3 * 0.1;
            c.dram += (busy - unattr) / 3 * 0.3;
            c.activity_source = p == 0 ? "measured:gpm" : "estimated:compute-share+gpm";
            c.share_source = p == 1 ? "env:CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" : "";
          }
        }
      }
      if (rng() % 20 == 0) continue;  // a missed scrape
      std::vector<Dev> devs;
      for (auto& [g, d] : a.devs) devs.push_back(d);
      std::vector<Ctr> ctrs;
      for (auto& [p, c] : a.ctrs) ctrs.push_back(c);
      out.push_back(Scrape(a.name, at, devs, ctrs));
    }
  }
  return out;
}

TEST(CounterLedger, RestoredMidwayEqualsUninterrupted) {
  const auto stream = Stream();
  CounterLedger whole("c1", nullptr);
  for (const auto& s : stream) whole.Feed(s);
  const auto expected = whole.Hours(INT64_MAX);
  ASSERT_GE(expected.size(), 12u);  // 4 GPUs x >= 3 hours
  for (const auto& h : expected) ExpectConserved(h);

  for (std::size_t cut : {stream.size() / 3, stream.size() / 2, stream.size() - 1}) {
    CounterLedger first("c1", nullptr);
    for (std::size_t i = 0; i < cut; ++i) first.Feed(stream[i]);
    const std::string state = first.State();
    CounterLedger second("c1", nullptr);
    ASSERT_TRUE(second.Restore(state).ok());
    EXPECT_EQ(second.State(), state);
    for (std::size_t i = cut; i < stream.size(); ++i) second.Feed(stream[i]);
    EXPECT_EQ(Dump(second.Hours(INT64_MAX)), Dump(expected)) << "cut at " << cut;
    EXPECT_EQ(second.resets(), whole.resets());
  }
  // Replaying samples already fed after a restore (state older than the rows written) produces
  // the same rows: older scrapes are ignored, nothing counted twice.
  CounterLedger replay("c1", nullptr);
  for (std::size_t i = 0; i < stream.size() / 2; ++i) replay.Feed(stream[i]);
  CounterLedger again("c1", nullptr);
  ASSERT_TRUE(again.Restore(replay.State()).ok());
  for (std::size_t i = stream.size() / 4; i < stream.size(); ++i) again.Feed(stream[i]);
  EXPECT_EQ(Dump(again.Hours(INT64_MAX)), Dump(expected));
}

// Applies a delta to stored parts, as a store's UpdateMeta does.
void Apply(std::map<std::string, std::string>& stored, const CounterLedger::StateDelta& d) {
  for (const auto& part : d.erase) stored.erase(part);
  for (const auto& [part, value] : d.put) stored[part] = value;
}

TEST(CounterLedger, StateInPartsIsTheWholeStateAndOnlyWhatChanged) {
  const auto stream = Stream();
  // Parts saved after every 40 scrapes, with hours forgotten as the ingestor does: restoring
  // the parts at any cut gives the engine fed up to the cut.
  CounterLedger first("c1", nullptr);
  std::map<std::string, std::string> stored;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    first.Feed(stream[i]);
    if (i % 40 != 39) continue;
    Apply(stored, first.PendingState());
    first.StateSaved();
    EXPECT_TRUE(first.PendingState().empty());
    CounterLedger restored("c1", nullptr);
    ASSERT_TRUE(restored.RestoreParts(stored).ok()) << i;
    EXPECT_EQ(restored.State(), first.State()) << "after scrape " << i;
  }
  // One more scrape of one agent: its instance, the hours it touched and the engine's
  // counters are pending, the other agent's part is not.
  const std::string other =
      stream.back().instance == "10.0.0.1:9400" ? "10.0.0.2:9400" : "10.0.0.1:9400";
  Apply(stored, first.PendingState());
  first.StateSaved();
  TargetScrape late = stream.back();
  late.at_us += 15 * kS;
  first.Feed(late);
  auto delta = first.PendingState();
  EXPECT_TRUE(delta.put.contains("engine"));
  EXPECT_TRUE(delta.put.contains("instance/" + late.instance));
  EXPECT_FALSE(delta.put.contains("instance/" + other));
  std::size_t hour_parts = 0;
  for (const auto& [part, value] : delta.put) hour_parts += part.starts_with("hour/");
  EXPECT_EQ(hour_parts, 2u);  // the agent's 2 GPUs, in the current hour
  EXPECT_TRUE(delta.erase.empty());

  // Forgetting hours erases their parts; the stored parts still equal the whole state.
  first.Forget(INT64_MAX - kMicrosPerHour);
  delta = first.PendingState();
  EXPECT_GE(delta.erase.size(), 4u);
  Apply(stored, delta);
  first.StateSaved();
  for (const auto& [part, value] : stored) EXPECT_FALSE(part.starts_with("hour/")) << part;
  CounterLedger restored("c1", nullptr);
  ASSERT_TRUE(restored.RestoreParts(stored).ok());
  EXPECT_EQ(restored.State(), first.State());
}

TEST(CounterLedger, RestorePartsNamesThePartItCannotRead) {
  CounterLedger l("c1", nullptr);
  l.Feed(Scrape("a", kH0, {{"GPU-A", 100}}, {}));
  l.Feed(Scrape("a", kH0 + 60 * kS, {{"GPU-A", 160}}, {}));
  auto delta = l.PendingState();
  ASSERT_TRUE(delta.put.contains("instance/a"));
  std::map<std::string, std::string> good(delta.put.begin(), delta.put.end());
  CounterLedger r("c1", nullptr);
  ASSERT_TRUE(r.RestoreParts(good, "ingest_state/").ok());
  EXPECT_EQ(r.State(), l.State());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"instance/a", "{\"last_at_us\": 1"},  // not JSON
      {"instance/a", "{\"name\": \"b\"}"},   // another instance's
      {"engine",
       "{\"kind\": \"gpuledger-counter-ledger\", \"version\": 2}"},  // whole-state version
      {"hour/1/GPU-A", "[]"},
      {"surprise", "{}"},
  };
  for (const auto& [part, text] : cases) {
    auto bad = good;
    bad[part] = text;
    Status s = r.RestoreParts(bad, "ingest_state/");
    ASSERT_FALSE(s.ok()) << part << " = " << text;
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
    EXPECT_TRUE(s.error().message.starts_with("'ingest_state/" + part + "': "))
        << s.error().message;
  }
  auto no_engine = good;
  no_engine.erase("engine");
  Status s = r.RestoreParts(no_engine, "ingest_state/");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.error().message.starts_with("'ingest_state/engine': missing")) << s.error().message;
  EXPECT_EQ(r.State(), l.State());  // a failed restore leaves the engine as it was
}

TEST(CounterLedger, PruneDropsAgentsDevicesAndEntriesNotSeenSince) {
  CounterLedger l("c1", nullptr);
  // Agent "old" goes silent at +60 s; agent "live" runs on, its pod p1 leaves at +60 s and
  // its GPU-B disappears at the same time (p2 arrives).
  l.Feed(Scrape("old", kH0, {{"GPU-O", 0}}, {{"p0", "GPU-O", 0}}));
  l.Feed(Scrape("old", kH0 + 60 * kS, {{"GPU-O", 60}}, {{"p0", "GPU-O", 60}}));
  l.Feed(Scrape("live", kH0, {{"GPU-A", 0}, {"GPU-B", 0}}, {{"p1", "GPU-A", 0}}));
  l.Feed(Scrape("live", kH0 + 60 * kS, {{"GPU-A", 60}, {"GPU-B", 60}}, {{"p1", "GPU-A", 60}}));
  l.Feed(Scrape("live", kH0 + 120 * kS, {{"GPU-A", 120}}, {{"p2", "GPU-A", 60}}));
  auto before = l.footprint();
  EXPECT_EQ(before.instances, 2);
  EXPECT_EQ(before.devices, 3);      // GPU-O; GPU-A, GPU-B
  EXPECT_EQ(before.attribution, 3);  // p0; p1, p2
  l.StateSaved();
  l.Prune(kH0 + 61 * kS);
  auto after = l.footprint();
  EXPECT_EQ(after.instances, 1);
  EXPECT_EQ(after.devices, 1);           // GPU-A
  EXPECT_EQ(after.attribution, 1);       // p2
  EXPECT_EQ(after.hours, before.hours);  // open hours are Forget's
  auto delta = l.PendingState();
  EXPECT_TRUE(delta.erase.contains("instance/old"));
  EXPECT_TRUE(delta.put.contains("instance/live"));
  // Back after it was dropped: a new agent, its first scrape a baseline (nothing invented).
  l.Feed(Scrape("old", kH0 + 180 * kS, {{"GPU-O", 180}}, {{"p0", "GPU-O", 180}}));
  GpuMicros metered = 0;
  for (const auto& h : l.Hours(INT64_MAX))
    if (h.device.gpu.value == "GPU-O") metered += h.device.metered_us;
  EXPECT_EQ(metered,
            60 * kS);  // its first life's minute; the second life's first scrape is a baseline
}

// The activity counters go through the same exact deltas as compute: 100% util and 5% SM
// active over 600 s of one pod are 600 s and 30 s to the µs, with the sources' labels.
TEST(CounterLedger, ActivityCountersBecomeExactRows) {
  CounterLedger l("c1", nullptr);
  Ctr c{"p1", "GPU-A", 0, 0, 0, 0, 0, 0, 0, 0, "measured:gpm", "resource:gpu_milli"};
  l.Feed(Scrape("a", kH0, {{"GPU-A", 0, 0, 0, 0}}, {c}));
  c.allocated = 600;
  c.compute = 600;
  c.sm = 30;
  c.occupancy = 12.5;
  c.tensor = 6;
  c.dram = 3.000001;
  l.Feed(Scrape("a", kH0 + 600 * kS, {{"GPU-A", 600, 600, 0, 0}}, {c}));
  auto hours = l.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 1u);
  const UsageRow* r = Row(hours[0], "p1");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->compute_us, 600 * kS);
  EXPECT_EQ(r->activity.sm_active_us, 30 * kS);
  EXPECT_EQ(r->activity.sm_occupancy_us, 12'500'000);
  EXPECT_EQ(r->activity.tensor_active_us, 6 * kS);
  EXPECT_EQ(r->activity.dram_active_us, 3'000'001);
  EXPECT_EQ(r->activity_quality, Quality::kMeasured);
  EXPECT_EQ(r->activity_rule, "gpm");
  EXPECT_EQ(r->share_source, "resource:gpu_milli");
  EXPECT_EQ(r->compute_quality, Quality::kMeasured);  // the other sources are untouched
  ExpectConserved(hours[0]);
}

// An activity delta across an hour boundary is split by the largest remainder: 1,234,567 µs
// over 45 min + 15 min is 925,925.25 + 308,641.75 -> 925,925 + 308,642, summing exactly.
TEST(CounterLedger, ActivitySplitsAcrossHoursExactly) {
  CounterLedger l("c1", nullptr);
  Ctr c{"p1", "GPU-A", 0, 0, 0, 0, 0, 0, 0, 0, "estimated:compute-share+gpm", ""};
  l.Feed(Scrape("a", kH0 + 2700 * kS, {{"GPU-A", 0}}, {c}));
  c.allocated = 1200;
  c.sm = 1.234567;
  c.dram = 0.000003;  // 3 µs: 2.25 + 0.75 -> 2 + 1
  l.Feed(Scrape("a", kH0 + 3900 * kS, {{"GPU-A", 1200}}, {c}));
  auto hours = l.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 2u);
  const UsageRow* first = Row(hours[0], "p1");
  const UsageRow* second = Row(hours[1], "p1");
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->activity.sm_active_us, 925'925);
  EXPECT_EQ(second->activity.sm_active_us, 308'642);
  EXPECT_EQ(first->activity.dram_active_us, 2);
  EXPECT_EQ(second->activity.dram_active_us, 1);
  for (const UsageRow* r : {first, second}) {
    EXPECT_EQ(r->activity_quality, Quality::kEstimated);
    EXPECT_EQ(r->activity_rule, "compute-share+gpm");
    EXPECT_EQ(r->share_source, "");
  }
}

// An agent that exports no activity (older builds, or no GPM/DCGM): zero activity, no quality,
// no share source; the rest of the row as before. "none" says the same explicitly.
TEST(CounterLedger, AgentWithoutActivityGivesNone) {
  for (const char* source : {"", "none"}) {
    CounterLedger l("c1", nullptr);
    Ctr c{"p1", "GPU-A", 0, 0, 0, 0, 0, 0, 0, 0, source, ""};
    l.Feed(Scrape("a", kH0, {{"GPU-A", 0}}, {c}));
    c.allocated = 60;
    c.compute = 30;
    l.Feed(Scrape("a", kH0 + 60 * kS, {{"GPU-A", 60, 30, 30}}, {c}));
    auto hours = l.Hours(INT64_MAX);
    ASSERT_EQ(hours.size(), 1u);
    const UsageRow* r = Row(hours[0], "p1");
    ASSERT_NE(r, nullptr) << source;
    EXPECT_EQ(r->allocated_us, 60 * kS);
    EXPECT_EQ(r->compute_us, 30 * kS);
    EXPECT_EQ(r->compute_rule, "process-samples");
    EXPECT_EQ(r->activity, Activity{}) << source;
    EXPECT_EQ(r->activity_quality, Quality::kNone) << source;
    EXPECT_EQ(r->activity_rule, "") << source;
    EXPECT_EQ(r->share_source, "") << source;
  }
}

// The activity counters' last values survive a restart (State/Restore and the parts): the
// next scrape books only its delta, as an uninterrupted engine does.
TEST(CounterLedger, ActivityCountersSurviveARestart) {
  Ctr c{"p1", "GPU-A", 100, 100, 0, 0, 50, 20, 10, 5, "measured:dcgm-exporter", ""};
  const TargetScrape s1 = Scrape("a", kH0, {{"GPU-A", 100}}, {c});
  c.allocated = 160;
  c.sm = 53;
  const TargetScrape s2 = Scrape("a", kH0 + 60 * kS, {{"GPU-A", 160}}, {c});
  c.allocated = 220;
  c.sm = 56;
  const TargetScrape s3 = Scrape("a", kH0 + 120 * kS, {{"GPU-A", 220}}, {c});
  CounterLedger whole("c1", nullptr);
  for (const auto& s : {s1, s2, s3}) whole.Feed(s);
  const std::string expected = Dump(whole.Hours(INT64_MAX));
  ASSERT_NE(expected.find("act=6000000/0/0/0 measured:dcgm-exporter"), std::string::npos)
      << expected;

  CounterLedger first("c1", nullptr);
  first.Feed(s1);
  first.Feed(s2);
  CounterLedger restored("c1", nullptr);
  ASSERT_TRUE(restored.Restore(first.State()).ok());
  restored.Feed(s3);
  EXPECT_EQ(Dump(restored.Hours(INT64_MAX)), expected);

  auto parts = first.PendingState();
  CounterLedger from_parts("c1", nullptr);
  ASSERT_TRUE(from_parts.RestoreParts({parts.put.begin(), parts.put.end()}).ok());
  from_parts.Feed(s3);
  EXPECT_EQ(Dump(from_parts.Hours(INT64_MAX)), expected);
}

// A state saved before activity existed (attribution entries of 4 fields, consumer
// accumulators of 12) still restores: its rows have no activity; counting goes on.
TEST(CounterLedger, StateFromBeforeActivityRestores) {
  Ctr c{"p1",
        "GPU-A",
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        "measured:gpm",
        "env:CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"};
  CounterLedger l("c1", nullptr);
  l.Feed(Scrape("a", kH0, {{"GPU-A", 0}}, {c}));
  c.allocated = 60;
  c.sm = 6;
  l.Feed(Scrape("a", kH0 + 60 * kS, {{"GPU-A", 60}}, {c}));
  auto j = nlohmann::json::parse(l.State());
  for (auto& [name, inst] : j["instances"].items())
    for (auto& a : inst["attribution"]) a.erase(a.begin() + 4, a.end());
  for (auto& h : j["hours"])
    for (auto& consumer : h[11]) consumer.erase(consumer.begin() + 12, consumer.end());
  CounterLedger old("c1", nullptr);
  Status restored = old.Restore(j.dump());
  ASSERT_TRUE(restored.ok()) << restored.error().message;
  auto hours = old.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 1u);
  EXPECT_EQ(Row(hours[0], "p1")->activity, Activity{});
  EXPECT_EQ(Row(hours[0], "p1")->activity_quality, Quality::kNone);
  // The series' last values were always kept: the next scrape books 6 s more and the sources.
  c.allocated = 120;
  c.sm = 12;
  old.Feed(Scrape("a", kH0 + 120 * kS, {{"GPU-A", 120}}, {c}));
  hours = old.Hours(INT64_MAX);
  const UsageRow* r = Row(hours[0], "p1");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->activity.sm_active_us, 6 * kS);
  EXPECT_EQ(r->activity_quality, Quality::kMeasured);
  EXPECT_EQ(r->share_source, "env:CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
}

// The stream of the restore tests carries activity and share sources (so those tests cover
// them), and every series it holds is one FedSeriesNames lists (what PromQL ingestion queries).
TEST(CounterLedger, FedSeriesNamesListEverySeriesTheEngineReads) {
  const auto& names = FedSeriesNames();
  const std::set<std::string> fed(names.begin(), names.end());
  EXPECT_EQ(fed.size(), names.size());
  for (const char* n :
       {"gpuledger_container_sm_active_gpu_seconds_total",
        "gpuledger_container_sm_occupancy_gpu_seconds_total",
        "gpuledger_container_tensor_active_gpu_seconds_total",
        "gpuledger_container_dram_active_gpu_seconds_total", "gpuledger_container_attribution_info",
        "gpuledger_container_memory_used_bytes",
        "gpuledger_device_unattributed_memory_byte_seconds_total"})
    EXPECT_TRUE(fed.contains(n)) << n;
  const auto stream = Stream();
  for (const auto& s : stream)
    for (const auto& sample : s.samples) ASSERT_TRUE(fed.contains(sample.name)) << sample.name;
  CounterLedger l("c1", nullptr);
  for (const auto& s : stream) l.Feed(s);
  std::set<std::string> rules, shares;
  for (const auto& h : l.Hours(INT64_MAX))
    for (const auto& r : h.usage) {
      if (r.activity.sm_active_us > 0) rules.insert(r.activity_rule);
      shares.insert(r.share_source);
    }
  EXPECT_TRUE(rules.contains("gpm"));
  EXPECT_TRUE(rules.contains("compute-share+gpm"));
  EXPECT_TRUE(shares.contains("env:CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
}

TEST(CounterLedger, RestoreRefusesWhatIsNotOurs) {
  CounterLedger l("c1", nullptr);
  for (const char* bad : {"", "{", "[]", "{\"kind\":\"other\"}",
                          "{\"kind\":\"gpuledger-counter-ledger\",\"version\":99}",
                          "{\"kind\":\"gpuledger-counter-ledger\",\"version\":1}"}) {
    Status s = l.Restore(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  }
}

namespace histograms {

// The agent's two rightsizing histograms for one container, cumulative counts per `le` as the
// collector renders them (docs/agent.md): compute share at 0.05, 1/7 .. 4/7, +Inf; memory at
// 1/8, 2/8, 4/8 of an 80 GiB card, +Inf.
void AddHistograms(TargetScrape& s, const std::string& pod, const std::string& gpu,
                   const std::array<double, 6>& compute_le, const std::array<double, 4>& memory_le,
                   const char* first_bound = "0.05") {
  Labels l{{"container", "main"},
           {"gpu_uuid", gpu},
           {"namespace", "ml"},
           {"pod", pod},
           {"pod_uid", "uid-" + pod}};
  const std::string compute_bounds[] = {first_bound,          "0.14285714285714285",
                                        "0.2857142857142857", "0.42857142857142855",
                                        "0.5714285714285714", "+Inf"};
  for (int i = 0; i < 6; ++i) {
    Labels b = l;
    b.push_back({"le", compute_bounds[i]});
    s.samples.push_back({"gpuledger_container_compute_share_bucket", b, compute_le[i]});
  }
  const std::string memory_bounds[] = {"1.073741824e+10", "2.147483648e+10", "4.294967296e+10",
                                       "+Inf"};
  for (int i = 0; i < 4; ++i) {
    Labels b = l;
    b.push_back({"le", memory_bounds[i]});
    s.samples.push_back({"gpuledger_container_memory_usage_bytes_bucket", b, memory_le[i]});
  }
}

TargetScrape WithHistograms(const std::string& instance, Micros at, double t,
                            const std::array<double, 6>& compute_le,
                            const std::array<double, 4>& memory_le) {
  TargetScrape s =
      Scrape(instance, at, {{"GPU-A", t, t / 2, t / 2, 0, 0}}, {{"p1", "GPU-A", t, t / 2, 0, 0}});
  AddHistograms(s, "p1", "GPU-A", compute_le, memory_le);
  return s;
}

// Cumulative deltas become counts per bucket of the hour: compute {5,5,25,25,40,50} since the
// baseline -> {5,0,20,0,15,10}; memory {10,30,50,50} -> {10,20,20,0}.
TEST(CounterLedger, HistogramBucketsBecomeCountsPerBucketOfTheHour) {
  CounterLedger l("c1", nullptr);
  l.Feed(WithHistograms("a", kH0 + 10 * kS, 10, {1, 1, 2, 2, 3, 4}, {1, 2, 4, 4}));
  l.Feed(WithHistograms("a", kH0 + 3010 * kS, 3010, {6, 6, 27, 27, 43, 54}, {11, 32, 54, 54}));
  auto hours = l.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 1u);
  const UsageRow* p1 = Row(hours[0], "p1");
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(p1->histogram.compute, (std::array<std::int64_t, 6>{5, 0, 20, 0, 15, 10}));
  EXPECT_EQ(p1->histogram.memory, (std::array<std::int64_t, 4>{10, 20, 20, 0}));
  EXPECT_EQ(l.skipped_buckets(), 0);
  ExpectConserved(hours[0]);
}

// A delta over an hour boundary splits by time, bucket by bucket: 40 min : 20 min of 60
// samples all in the 2/7 bucket -> 40 and 20; per hour the buckets add to the hour's samples.
TEST(CounterLedger, HistogramDeltaAcrossAnHourSplitsByTime) {
  CounterLedger l("c1", nullptr);
  l.Feed(WithHistograms("a", kH0 + 2400 * kS, 0, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0}));
  l.Feed(WithHistograms("a", kH0 + 6000 * kS, 3600, {0, 0, 60, 60, 60, 60}, {60, 60, 60, 60}));
  auto hours = l.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 2u);
  EXPECT_EQ(Row(hours[0], "p1")->histogram.compute,
            (std::array<std::int64_t, 6>{0, 0, 20, 0, 0, 0}));
  EXPECT_EQ(Row(hours[1], "p1")->histogram.compute,
            (std::array<std::int64_t, 6>{0, 0, 40, 0, 0, 0}));
  EXPECT_EQ(Row(hours[0], "p1")->histogram.memory, (std::array<std::int64_t, 4>{20, 0, 0, 0}));
  EXPECT_EQ(Row(hours[1], "p1")->histogram.memory, (std::array<std::int64_t, 4>{40, 0, 0, 0}));
}

// An agent restart resets the bucket counters: the new values are the deltas since it.
// Buckets of another layout (a first bound of 0.1) are skipped and counted, not misread.
TEST(CounterLedger, HistogramResetsCountAndOtherLayoutsAreSkipped) {
  CounterLedger l("c1", nullptr);
  l.Feed(WithHistograms("a", kH0 + 10 * kS, 10, {0, 0, 0, 0, 10, 10}, {10, 10, 10, 10}));
  l.Feed(WithHistograms("a", kH0 + 610 * kS, 5, {0, 0, 0, 0, 5, 5}, {5, 5, 5, 5}));  // reset
  TargetScrape odd =
      Scrape("b", kH0 + 10 * kS, {{"GPU-B", 10, 5, 5, 0, 0}}, {{"q1", "GPU-B", 10, 5, 0, 0}});
  AddHistograms(odd, "q1", "GPU-B", {1, 1, 1, 1, 1, 1}, {1, 1, 1, 1}, "0.1");
  l.Feed(odd);
  auto hours = l.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 1u);
  EXPECT_EQ(Row(hours[0], "p1")->histogram.compute,
            (std::array<std::int64_t, 6>{0, 0, 0, 0, 5, 0}));
  EXPECT_EQ(Row(hours[0], "p1")->histogram.memory, (std::array<std::int64_t, 4>{5, 0, 0, 0}));
  EXPECT_EQ(l.skipped_buckets(), 1);
}

// The agent's hour peaks name their own hour: the current peak raises the hour its
// gpuledger_agent_hour_start_seconds names, the previous one the hour before, both above what
// the scrapes' memory gauge saw (1 GiB).
TEST(CounterLedger, AgentHourPeaksRaiseThePeakOfTheirHour) {
  CounterLedger l("c1", nullptr);
  auto with_peaks = [](Micros at, double t, Micros agent_hour, double peak, double previous) {
    TargetScrape s = Scrape("a", at, {{"GPU-A", t, 0, t, 0, 0}}, {{"p1", "GPU-A", t, 0, 0, 0}});
    Labels l{{"container", "main"},
             {"gpu_uuid", "GPU-A"},
             {"namespace", "ml"},
             {"pod", "p1"},
             {"pod_uid", "uid-p1"}};
    s.samples.push_back(
        {"gpuledger_agent_hour_start_seconds", {}, static_cast<double>(agent_hour / kS)});
    s.samples.push_back({"gpuledger_container_memory_peak_bytes", l, peak});
    if (previous > 0)
      s.samples.push_back({"gpuledger_container_memory_previous_hour_peak_bytes", l, previous});
    return s;
  };
  l.Feed(with_peaks(kH0 + 60 * kS, 60, kH0, 2.0 * kGiB, 0));
  l.Feed(with_peaks(kH0 + 3540 * kS, 3540, kH0, 5.0 * kGiB, 0));
  // The scrape after the hour: hour 0's last minutes peaked at 7 GiB, seen only by the agent.
  l.Feed(with_peaks(kH0 + 3660 * kS, 3660, kH0 + kMicrosPerHour, 3.0 * kGiB, 7.0 * kGiB));
  auto hours = l.Hours(INT64_MAX);
  ASSERT_EQ(hours.size(), 2u);
  EXPECT_EQ(Row(hours[0], "p1")->peak_memory_bytes, 7 * kGiB);
  EXPECT_EQ(Row(hours[1], "p1")->peak_memory_bytes, 3 * kGiB);
  const auto& names = FedSeriesNames();
  for (const char* n :
       {"gpuledger_agent_hour_start_seconds", "gpuledger_container_memory_peak_bytes",
        "gpuledger_container_memory_previous_hour_peak_bytes",
        "gpuledger_container_compute_share_bucket",
        "gpuledger_container_memory_usage_bytes_bucket"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
}

// The open hour's bucket counts are part of the state: restored midway, the rows are the same.
TEST(CounterLedger, HistogramCountsSurviveARestore) {
  const auto a = WithHistograms("a", kH0 + 10 * kS, 10, {0, 1, 1, 1, 1, 1}, {1, 1, 1, 1});
  const auto b =
      WithHistograms("a", kH0 + 1210 * kS, 1210, {0, 11, 11, 21, 21, 21}, {1, 11, 21, 21});
  const auto c =
      WithHistograms("a", kH0 + 2410 * kS, 2410, {0, 21, 21, 41, 41, 41}, {1, 21, 41, 41});
  CounterLedger whole("c1", nullptr);
  for (const auto* s : {&a, &b, &c}) whole.Feed(*s);
  CounterLedger first("c1", nullptr);
  first.Feed(a);
  first.Feed(b);
  CounterLedger resumed("c1", nullptr);
  ASSERT_TRUE(resumed.Restore(first.State()));
  resumed.Feed(c);
  auto expected = whole.Hours(INT64_MAX);
  auto got = resumed.Hours(INT64_MAX);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_EQ(Row(got[0], "p1")->histogram, Row(expected[0], "p1")->histogram);
  EXPECT_EQ(Row(got[0], "p1")->histogram.compute,
            (std::array<std::int64_t, 6>{0, 20, 0, 20, 0, 0}));
}

}  // namespace histograms

}  // namespace
}  // namespace gpuledger::ingest
