// Bounded state under churn (issue 9, item 6): 1,000 agent restarts and DaemonSet rollouts
// (new pod IPs, so new instance names; counters restarting at 0) fed as real exposition text
// through the real scrape loop, Ingestor and an SQLite ledger. The engine's state and the
// stored state stay bounded by the agents of the retention window, the scrape loop keeps
// counts only for current targets, and the ledger's totals equal the counters' own sums.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "common/counter_units.h"
#include "cost/catalog.h"
#include "ingest/ingestor.h"
#include "ingest/scrape_loop.h"
#include "prometheus/exposition_writer.h"
#include "store/ledger_store.h"

namespace gpuledger::ingest {
namespace {

namespace fs = std::filesystem;

constexpr Micros kT0 = 1'800'000'000LL * kMicrosPerSecond;  // an hour boundary
constexpr Micros kS = kMicrosPerSecond;
constexpr Micros kScrape = 60 * kS;
constexpr int kNodes = 3;
constexpr int kEvents = 1000;    // one every kEveryRounds rounds
constexpr int kEveryRounds = 3;  // so 3,000 rounds: 50 h, far past the 6 h retention
constexpr int kPodEveryRounds = 37;

// One node's agent: its current life (instance name, start) and the pod on its first GPU. The
// counters are integers of µs since the life (or the pod, if later) began, as the agent keeps
// them; the exposition prints them as the agent does (ToBaseUnit).
struct Node {
  int index = 0;
  std::string instance;
  Micros started_us = 0;
  std::string pod;
  Micros pod_started_us = 0;

  GpuMicros Metered(Micros now) const { return now - started_us; }
  GpuMicros Allocated(Micros now) const { return now - std::max(started_us, pod_started_us); }
  std::string Gpu(int g) const { return fmt::format("GPU-n{}-{}", index, g); }

  std::string Render(Micros now) const {
    using prometheus::MetricType;
    prometheus::ExpositionWriter w;
    w.Family("gpuledger_agent_start_time_seconds", "s", MetricType::kGauge);
    w.Sample("gpuledger_agent_start_time_seconds", static_cast<double>(started_us) / 1e6);
    w.Family("gpuledger_device_info", "i", MetricType::kGauge);
    for (int g = 0; g < 2; ++g)
      w.Sample("gpuledger_device_info",
               {{"gpu_uuid", Gpu(g)},
                {"gpu_model", "A100-80GB"},
                {"node", fmt::format("n{}", index)},
                {"parent_uuid", ""},
                {"mig_profile", ""},
                {"sharing_mode", "exclusive"}},
               1);
    const GpuMicros metered = Metered(now);
    auto dev = [&](const char* name, GpuMicros v) {
      w.Family(name, "h", MetricType::kCounter);
      for (int g = 0; g < 2; ++g)
        w.Sample(name, {{"gpu_uuid", Gpu(g)}}, ToBaseUnit(v, CounterScale::kMicrosPerSecond));
    };
    dev("gpuledger_device_metered_seconds_total", metered);
    dev("gpuledger_device_busy_seconds_total", metered / 2);
    dev("gpuledger_device_idle_seconds_total", metered - metered / 2);
    dev("gpuledger_device_unattributed_seconds_total", metered / 2);
    const std::string uid = "uid-" + this->pod, gpu0 = Gpu(0);
    std::vector<prometheus::Label> pod = {{"namespace", "ml"},
                                          {"pod", this->pod},
                                          {"pod_uid", uid},
                                          {"container", "main"},
                                          {"gpu_uuid", gpu0}};
    w.Family("gpuledger_container_allocated_gpu_seconds_total", "h", MetricType::kCounter);
    w.Sample("gpuledger_container_allocated_gpu_seconds_total", pod,
             ToBaseUnit(Allocated(now), CounterScale::kMicrosPerSecond));
    pod.push_back({"compute_source", "unmeasured:none"});
    pod.push_back({"memory_source", "unmeasured"});
    w.Family("gpuledger_container_attribution_info", "i", MetricType::kGauge);
    w.Sample("gpuledger_container_attribution_info", pod, 1);
    return w.Take();
  }
};

// What the ledger's meta holds of the ingest state: keys and bytes.
struct Stored {
  std::size_t keys = 0, bytes = 0;
};
Stored StoredState(store::LedgerStore& s) {
  auto meta = s.ReadMeta();
  EXPECT_TRUE(meta.ok());
  Stored out;
  for (const auto& [k, v] : *meta)
    if (k.starts_with(ClusterMetaKey("c1", kStateMetaKey))) {
      ++out.keys;
      out.bytes += k.size() + v.size();
    }
  return out;
}

TEST(IngestChurn, ThousandRestartsAndRolloutsStayBoundedAndExact) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("gpuledger-churn-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto opened = store::OpenLedger("sqlite:" + (dir / "ledger.db").string());
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  store::LedgerStore& store = **opened;
  const cost::Catalog catalog = cost::DefaultCatalog();
  Ingestor ingestor(store, catalog, "c1", nullptr, [](const std::string& node) {
    return cost::NodeFacts{node, {}, "", "on-demand"};
  });
  ASSERT_TRUE(ingestor.Start(kT0).ok());  // watching since the agents first started
  const Micros retention = ingestor.retention_us;
  ASSERT_EQ(retention, 6 * kMicrosPerHour);

  std::vector<Node> nodes(kNodes);
  int generation = 0, pods = 0;
  auto instance = [&](int node) {
    return fmt::format("10.{}.{}.{}:9400", generation / 250, generation % 250, node);
  };
  for (int i = 0; i < kNodes; ++i)
    nodes[i] = Node{i, instance(i), kT0, fmt::format("p{}", pods++), kT0};

  Micros now = kT0;
  // The loop calls the fetcher on its threads; the nodes change only between rounds.
  Fetcher fetch = [&](const std::string& target) -> Result<std::string> {
    for (const Node& n : nodes)
      if (n.instance == target) return n.Render(now);
    return Unavailable("scrape " + target + ": connection refused");
  };
  auto discover = [&]() -> Result<std::vector<std::string>> {
    std::vector<std::string> targets;
    for (const Node& n : nodes) targets.push_back(n.instance);
    return targets;
  };
  std::ostringstream log;
  ScrapeLoop loop(
      ingestor, ScrapeOptions{{}, kScrape, discover}, fetch, [&] { return now; }, log);

  // The expected totals, from the counters themselves: within one life (instance, start) a
  // series adds its increase since the previous round; a new life or a new pod series adds
  // its whole value (it began at 0 after the previous round).
  struct Last {
    std::string instance;
    Micros started_us = 0;
    std::string pod;
    GpuMicros metered = 0, allocated = 0;
  };
  std::vector<Last> last(kNodes);
  for (int i = 0; i < kNodes; ++i) last[i] = {nodes[i].instance, kT0, nodes[i].pod, 0, 0};
  GpuMicros expect_metered = 0, expect_allocated = 0;
  std::map<std::string, Micros> last_scraped;                      // instance -> its last scrape
  std::map<std::pair<std::string, std::string>, Micros> pod_seen;  // (instance, pod) -> last seen
  std::mt19937_64 rng(20240901);
  int restarts = 0, rollouts = 0;
  std::size_t max_instances = 0, max_stored_bytes = 0, max_state_bytes = 0, max_keys = 0;

  for (int round = 0; round < kEvents * kEveryRounds; ++round) {
    now += kScrape;
    loop.RunRound();
    for (int i = 0; i < kNodes; ++i) {
      const Node& n = nodes[i];
      Last& l = last[i];
      const bool same_life = l.instance == n.instance && l.started_us == n.started_us;
      const GpuMicros m = n.Metered(now), a = n.Allocated(now);
      expect_metered += 2 * (same_life ? m - l.metered : m);  // two GPUs
      expect_allocated += same_life && l.pod == n.pod ? a - l.allocated : a;
      l = {n.instance, n.started_us, n.pod, m, a};
      last_scraped[n.instance] = now;
      pod_seen[{n.instance, n.pod}] = now;
    }
    // The engine holds exactly the agents scraped within the retention (and the scrape loop
    // only the current targets).
    std::erase_if(last_scraped, [&](const auto& kv) { return kv.second < now - retention; });
    std::erase_if(pod_seen, [&](const auto& kv) { return kv.second < now - retention; });
    const auto fp = ingestor.ledger().footprint();
    ASSERT_EQ(fp.instances, static_cast<std::int64_t>(last_scraped.size())) << "round " << round;
    ASSERT_EQ(fp.devices, 2 * fp.instances) << "round " << round;
    ASSERT_EQ(fp.attribution, static_cast<std::int64_t>(pod_seen.size())) << "round " << round;
    ASSERT_EQ(loop.tracked_targets(), static_cast<std::size_t>(kNodes));
    max_instances = std::max(max_instances, last_scraped.size());
    if (round % 100 == 99) {
      const Stored st = StoredState(store);
      max_stored_bytes = std::max(max_stored_bytes, st.bytes);
      max_keys = std::max(max_keys, st.keys);
      max_state_bytes = std::max(max_state_bytes, ingestor.ledger().State().size());
      // Open hours: keep-open window plus the current hour, for every GPU.
      EXPECT_LE(fp.hours, (ingestor.keep_open_us / kMicrosPerHour + 2) * kNodes * 2);
    }
    // Events between rounds, half a scrape after this one: what the dying agent counted since
    // this round is never scraped (lost by design), the new one starts from 0.
    if (round % kPodEveryRounds == 0) {
      Node& n = nodes[static_cast<std::size_t>(round / kPodEveryRounds) % kNodes];
      n.pod = fmt::format("p{}", pods++);
      n.pod_started_us = now;  // the old pod's last value was just scraped
    }
    if (round % kEveryRounds != kEveryRounds - 1) continue;
    if (rng() % 5 < 3) {
      ++restarts;  // an agent restart: the same pod IP, counters back to 0
      nodes[rng() % kNodes].started_us = now + kScrape / 2;
    } else {
      ++rollouts;  // a DaemonSet rollout: every agent anew, on new pod IPs
      ++generation;
      for (int i = 0; i < kNodes; ++i) {
        nodes[i].instance = instance(i);
        nodes[i].started_us = now + kScrape / 2;
      }
    }
  }
  loop.Stop();
  EXPECT_EQ(restarts + rollouts, kEvents);
  EXPECT_GT(rollouts, 300);
  const std::size_t instances_created = kNodes * (1 + rollouts);

  // Bounded: the retention holds 6 h of the churn, not 50 h of it. With a rollout every
  // 7.5 min on average, 6 h hold ~48 generations of 3 agents: ~150 instances of the ~1,200.
  std::cout << fmt::format(
      "churn: {} restarts, {} rollouts, {} instances created; held at most {} instances, "
      "{} state keys, {} bytes stored, {} bytes of engine state\n",
      restarts, rollouts, instances_created, max_instances, max_keys, max_stored_bytes,
      max_state_bytes);
  EXPECT_LT(max_instances, instances_created / 5);
  EXPECT_LE(max_instances, 250u);
  // An agent's part is under 2 KiB here (2 GPUs, one pod), an open hour's under 0.5 KiB.
  EXPECT_LE(max_stored_bytes, 250u * 2048 + 30u * 512);
  EXPECT_LE(max_state_bytes, 250u * 2048 + 30u * 512);
  EXPECT_LE(max_keys, 250u + 30u + 1u);
  // Incremental: a round writes the engine's part, its 3 agents' and their 6 GPUs' current
  // hours (12 when the interval spans an hour boundary), not the ~150 parts held.
  const std::int64_t rounds = kEvents * kEveryRounds;
  EXPECT_LE(ingestor.state_parts_written(), rounds * (1 + kNodes + 2 * kNodes) + 50 * 2 * kNodes);

  // Exact: every µs the counters showed is in the ledger, once; every hour row conserves.
  EXPECT_EQ(ingestor.ledger().late_dropped(), 0);
  auto devices = store.ReadDeviceHours({});
  auto usage = store.ReadUsage({});
  ASSERT_TRUE(devices.ok() && usage.ok());
  GpuMicros metered = 0, allocated = 0, row_allocated = 0, unallocated = 0;
  for (const DeviceHour& d : *devices) {
    metered += d.metered_us;
    unallocated += d.unallocated_us;
    EXPECT_EQ(d.metered_us + d.unmetered_us, kMicrosPerHour);
  }
  for (const UsageRow& u : *usage) allocated += u.allocated_us;
  row_allocated = metered - unallocated;
  EXPECT_EQ(metered, expect_metered);
  EXPECT_EQ(allocated, expect_allocated);
  EXPECT_EQ(row_allocated, allocated);  // Σ allocated + unallocated == metered over all rows
  EXPECT_EQ(devices->size(), static_cast<std::size_t>(kNodes * 2 * 50));  // 50 h, 6 GPUs
  opened->reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::ingest
