#include "sources/dcgm/dcgm_source.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "prometheus/http_get.h"
#include "test_paths.h"

namespace gpuledger::sources::dcgm {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const std::string& name) {
  std::ifstream in(fs::path(gpuledger::test_paths::kSourceDir) / "src/sources/dcgm/testdata" /
                   name);
  std::ostringstream out;
  out << in.rdbuf();
  EXPECT_FALSE(out.str().empty()) << name;
  return out.str();
}

const GpuUuid kGpu0{"GPU-0a0a0a0a-1111-2222-3333-444455556666"};
const GpuUuid kGpu1{"GPU-1b1b1b1b-1111-2222-3333-444455556666"};
const GpuUuid kGpu2{"GPU-2c2c2c2c-1111-2222-3333-444455556666"};
const GpuUuid kMigA{"MIG-aaaaaaaa-1111-2222-3333-444455556666"};  // GPU_I_ID 1
const GpuUuid kMigB{"MIG-bbbbbbbb-1111-2222-3333-444455556666"};  // GPU_I_ID 2
constexpr Micros kS = kMicrosPerSecond;

MigInstance Mig(GpuUuid uuid, GpuUuid parent, std::string profile, int slices) {
  MigInstance m;
  m.uuid = std::move(uuid);
  m.parent = std::move(parent);
  m.profile = std::move(profile);
  m.compute_slices = slices;
  return m;
}

DeviceSignals Signals(GpuUuid device, std::optional<GpuMicros> busy) {
  DeviceSignals s;
  s.device = std::move(device);
  s.busy_us = busy;
  return s;
}

// What NVML says about the node of the fixtures over [start, end): busy times of the whole
// GPUs, none for the MIG instances, no activity anywhere (no GPM).
GpuReading NodeReading(Micros start, Micros end) {
  GpuReading r;
  r.start_us = start;
  r.end_us = end;
  for (const GpuUuid& g : {kGpu0, kGpu1, kGpu2}) {
    r.gpus.emplace_back();
    r.gpus.back().uuid = g;
  }
  r.mig_instances = {Mig(kMigA, kGpu2, "3g.40gb", 3), Mig(kMigB, kGpu2, "3g.40gb", 3)};
  r.signals = {Signals(kGpu0, (end - start) * 8 / 10), Signals(kGpu1, 0), Signals(kGpu2, {}),
               Signals(kMigA, {}), Signals(kMigB, {})};
  return r;
}

// An inner source returning `make(n)` on its n-th Read (0-based).
class ScriptedGpus final : public GpuSource {
 public:
  explicit ScriptedGpus(std::function<Result<GpuReading>(int)> make) : make_(std::move(make)) {}
  Result<GpuReading> Read() override { return make_(reads_++); }
  std::string Describe() const override { return "nvml: fake"; }

 private:
  std::function<Result<GpuReading>(int)> make_;
  int reads_ = 0;
};

// One-second readings, the first a baseline (start == end) as the NVML source gives.
std::unique_ptr<GpuSource> OneSecondNode() {
  return std::make_unique<ScriptedGpus>([](int n) -> Result<GpuReading> {
    const Micros t0 = 1'700'000'000 * kS;
    return n == 0 ? NodeReading(t0, t0) : NodeReading(t0 + (n - 1) * kS, t0 + n * kS);
  });
}

struct Harness {
  std::string body;
  Result<std::string> next_error = std::string();  // a value: serve `body`
  int fetches = 0;
  std::unique_ptr<DcgmGpuSource> source;

  explicit Harness(std::string b, DcgmOptions options = {}) : body(std::move(b)) {
    options.url = "http://localhost:9400/metrics";
    source = std::make_unique<DcgmGpuSource>(
        OneSecondNode(),
        [this]() -> Result<std::string> {
          ++fetches;
          if (!next_error) return next_error.error();
          return body;
        },
        options);
  }
  GpuReading Read() const {
    auto r = source->Read();
    EXPECT_TRUE(r) << r.error().message;
    return *r;
  }
};

const DeviceSignals& Of(const GpuReading& r, const GpuUuid& device) {
  for (const DeviceSignals& s : r.signals)
    if (s.device == device) return s;
  ADD_FAILURE() << "no signals for " << device.value;
  static const DeviceSignals kNone;
  return kNone;
}

std::vector<std::string> Codes(const GpuReading& r) {
  std::vector<std::string> out;
  for (const SourceFault& f : r.faults) {
    EXPECT_EQ(f.source, "dcgm-exporter");
    out.push_back(f.code);
  }
  return out;
}

void ExpectFilledFromTheFixture(const GpuReading& r) {
  const DeviceSignals& g0 = Of(r, kGpu0);
  ASSERT_TRUE(g0.activity);
  EXPECT_EQ(*g0.activity, (Activity{500'000, 250'000, 125'000, 375'000}));
  EXPECT_EQ(g0.activity_source, SignalSource::kDcgm);
  EXPECT_EQ(g0.busy_us, 800'000) << "a whole GPU keeps NVML's busy time";
  EXPECT_EQ(g0.busy_source, SignalSource::kNvml);
  EXPECT_EQ(Of(r, kGpu1).activity, (Activity{0, 0, 0, 0}));
  EXPECT_FALSE(Of(r, kGpu2).activity) << "DCGM profiles a MIG GPU per instance";
  const DeviceSignals& a = Of(r, kMigA);
  EXPECT_EQ(a.activity, (Activity{600'000, 300'000, 200'000, 100'000}));
  EXPECT_EQ(a.busy_us, 625'000);
  EXPECT_EQ(a.busy_source, SignalSource::kDcgm);
  const DeviceSignals& b = Of(r, kMigB);
  EXPECT_EQ(b.activity, (Activity{62'500, 31'250, 0, 15'625}));
  EXPECT_EQ(b.busy_us, 125'000);
}

TEST(DcgmGpuSource, FillsActivityAndMigBusyTheSameFromBothFieldSets) {
  for (const char* fixture : {"classic.prom", "renamed_4_9.prom"}) {
    SCOPED_TRACE(fixture);
    Harness h(Fixture(fixture));
    GpuReading baseline = h.Read();
    EXPECT_EQ(h.fetches, 0) << "nothing to fill in a baseline";
    EXPECT_FALSE(Of(baseline, kGpu0).activity);
    GpuReading r = h.Read();
    EXPECT_EQ(h.fetches, 1);
    ExpectFilledFromTheFixture(r);
    // The MIG GPU itself has no profiling series: said once, not every cycle.
    EXPECT_EQ(Codes(r), std::vector<std::string>{"MISSING_FIELDS"});
    EXPECT_NE(r.faults[0].detail.find(kGpu2.value), std::string::npos) << r.faults[0].detail;
    GpuReading again = h.Read();
    ExpectFilledFromTheFixture(again);
    EXPECT_TRUE(again.faults.empty());
  }
}

TEST(DcgmGpuSource, IntegralIsTheGaugeTimesTheInterval) {
  DcgmScrape scrape;
  DcgmUnit u;
  u.gpu_uuid = kGpu0;
  u.sm_active = 0.5;
  u.sm_occupancy = 0.25;
  u.tensor_active = 1.0 / 3;
  u.dram_active = 0.0;
  scrape.units.push_back(u);
  GpuReading r = NodeReading(0, 30 * kS);
  ApplyStats stats = ApplyScrape(scrape, r);
  EXPECT_EQ(stats.activity_filled, 1);
  EXPECT_EQ(Of(r, kGpu0).activity, (Activity{15 * kS, 7'500'000, 10 * kS, 0}));
  GpuReading empty = NodeReading(5, 5);
  EXPECT_EQ(ApplyScrape(scrape, empty).activity_filled, 0);
}

TEST(DcgmGpuSource, GpmAndExistingBusyTakePrecedence) {
  auto scrape = ParseDcgmExporter(Fixture("classic.prom"));
  ASSERT_TRUE(scrape);
  GpuReading r = NodeReading(0, kS);
  const Activity gpm{1, 2, 3, 4};
  for (DeviceSignals& s : r.signals) {
    if (s.device == kGpu0 || s.device == kMigA) {
      s.activity = gpm;
      s.activity_source = SignalSource::kGpm;
    }
    if (s.device == kMigA) {
      s.busy_us = 42;
      s.busy_source = SignalSource::kGpm;
    }
  }
  ApplyScrape(*scrape, r);
  EXPECT_EQ(Of(r, kGpu0).activity, gpm);
  EXPECT_EQ(Of(r, kGpu0).activity_source, SignalSource::kGpm);
  EXPECT_EQ(Of(r, kMigA).activity, gpm);
  EXPECT_EQ(Of(r, kMigA).busy_us, 42);
  EXPECT_EQ(Of(r, kMigA).busy_source, SignalSource::kGpm);
  EXPECT_EQ(Of(r, kMigB).activity_source, SignalSource::kDcgm);
}

TEST(DcgmGpuSource, FetchFailuresAddAFaultAndLeaveSignalsAsTheyWere) {
  DcgmOptions options;
  options.refresh_us = 2 * kS;
  Harness h(Fixture("classic.prom"), options);
  h.next_error = Unavailable("GET http://localhost:9400/metrics: timed out after 1000 ms");
  (void)h.Read();
  GpuReading r = h.Read();
  EXPECT_EQ(Codes(r), std::vector<std::string>{"TIMEOUT"});
  EXPECT_NE(r.faults[0].detail.find("timed out"), std::string::npos);
  const GpuReading untouched = NodeReading(r.start_us, r.end_us);
  for (const DeviceSignals& s : r.signals) {
    EXPECT_FALSE(s.activity) << s.device.value;
    EXPECT_EQ(s.busy_us, Of(untouched, s.device).busy_us) << s.device.value;
  }
  // Retried only after refresh_us, not every cycle: a hung exporter costs one timeout each.
  r = h.Read();
  EXPECT_EQ(h.fetches, 1);
  EXPECT_TRUE(r.faults.empty());
  EXPECT_FALSE(Of(r, kGpu0).activity) << "no scrape since the failure";
  h.next_error = Unavailable("GET http://localhost:9400/metrics: Connection");
  r = h.Read();
  EXPECT_EQ(h.fetches, 2);
  EXPECT_EQ(Codes(r), std::vector<std::string>{"FETCH_FAILED"});
  h.next_error = std::string();
  h.body = "<html><body>404 page not found</body></html>\n";
  (void)h.Read();
  r = h.Read();
  EXPECT_EQ(Codes(r), std::vector<std::string>{"PARSE_FAILED"});
  EXPECT_FALSE(Of(r, kGpu0).activity);
  h.body = Fixture("classic.prom");
  (void)h.Read();
  r = h.Read();
  EXPECT_EQ(h.fetches, 4);
  ExpectFilledFromTheFixture(r);
}

TEST(DcgmGpuSource, FetchesAtMostOncePerRefreshAndAppliesTheLastScrapeBetween) {
  DcgmOptions options;
  options.refresh_us = 5 * kS;
  Harness h(Fixture("classic.prom"), options);
  for (int i = 0; i < 12; ++i) {
    GpuReading r = h.Read();
    if (i > 0) ExpectFilledFromTheFixture(r);
  }
  // Readings 1..11 cover 11 s: fetched at the 1st, 6th and 11th second.
  EXPECT_EQ(h.fetches, 3);
}

TEST(DcgmGpuSource, NoFetchWithoutGpus) {
  int fetches = 0;
  DcgmGpuSource source(
      std::make_unique<ScriptedGpus>([](int n) -> Result<GpuReading> {
        GpuReading r;
        r.start_us = n * kS;
        r.end_us = (n + 1) * kS;
        return r;
      }),
      [&]() -> Result<std::string> {
        ++fetches;
        return std::string();
      },
      DcgmOptions{});
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(source.Read());
  EXPECT_EQ(fetches, 0);
}

TEST(DcgmGpuSource, InnerErrorsPassThrough) {
  DcgmGpuSource source(
      std::make_unique<ScriptedGpus>(
          [](int) -> Result<GpuReading> { return Unavailable("nvml: stale (TIMEOUT)"); }),
      []() -> Result<std::string> { return std::string(); }, DcgmOptions{});
  auto r = source.Read();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "nvml: stale (TIMEOUT)");
}

TEST(DcgmGpuSource, AnExporterServingTheSameNonZeroValuesIsStale) {
  DcgmOptions options;
  options.refresh_us = kS;
  options.stale_after_us = 10 * kS;
  Harness h(Fixture("classic.prom"), options);
  (void)h.Read();
  int stale_reports = 0;
  for (int second = 1; second <= 10; ++second) {
    GpuReading r = h.Read();
    ExpectFilledFromTheFixture(r);
    for (const SourceFault& f : r.faults) stale_reports += f.code == "STALE";
  }
  EXPECT_EQ(stale_reports, 0);
  GpuReading r = h.Read();  // 11 s in: 10 s unchanged
  EXPECT_EQ(Codes(r), std::vector<std::string>{"STALE"});
  EXPECT_FALSE(Of(r, kGpu0).activity);
  EXPECT_FALSE(Of(r, kMigA).busy_us);
  r = h.Read();
  EXPECT_TRUE(r.faults.empty()) << "reported once per change of state";
  EXPECT_FALSE(Of(r, kGpu0).activity);
  // One value moves (power jitters on any live GPU): fresh again.
  const std::string from = "pod=\"trainer-0\"} 350.5";
  const std::size_t at = h.body.find(from);
  ASSERT_NE(at, std::string::npos);
  h.body.replace(at, from.size(), "pod=\"trainer-0\"} 350.625");
  r = h.Read();
  ExpectFilledFromTheFixture(r);
}

TEST(DcgmGpuSource, AllZerosAreNeverStale) {
  DcgmOptions options;
  options.refresh_us = kS;
  options.stale_after_us = 3 * kS;
  Harness h("DCGM_FI_PROF_SM_ACTIVE{UUID=\"" + kGpu1.value +
                "\"} 0\n"
                "DCGM_FI_PROF_SM_OCCUPANCY{UUID=\"" +
                kGpu1.value +
                "\"} 0\n"
                "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{UUID=\"" +
                kGpu1.value +
                "\"} 0\n"
                "DCGM_FI_PROF_DRAM_ACTIVE{UUID=\"" +
                kGpu1.value + "\"} 0\n",
            options);
  for (int i = 0; i < 10; ++i) {
    GpuReading r = h.Read();
    if (i == 0) continue;
    EXPECT_EQ(Of(r, kGpu1).activity, (Activity{0, 0, 0, 0})) << i;
    for (const SourceFault& f : r.faults) EXPECT_NE(f.code, "STALE");
  }
}

TEST(DcgmGpuSource, AnotherNodesExporterMatchesNothing) {
  Harness h("DCGM_FI_PROF_GR_ENGINE_ACTIVE{UUID=\"GPU-elsewhere\",gpu=\"0\"} 0.5\n");
  (void)h.Read();
  GpuReading r = h.Read();
  ASSERT_EQ(Codes(r), std::vector<std::string>{"NO_MATCHING_GPU"});
  EXPECT_NE(r.faults[0].detail.find("GPU-elsewhere"), std::string::npos);
  EXPECT_TRUE(h.Read().faults.empty());
}

TEST(DcgmGpuSource, MalformedLinesAreReportedOncePerChange) {
  Harness h(Fixture("classic.prom") + "DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\"} 0.5\n");
  (void)h.Read();
  GpuReading r = h.Read();
  std::vector<std::string> codes = Codes(r);
  EXPECT_NE(std::find(codes.begin(), codes.end(), "MALFORMED_LINES"), codes.end());
  ExpectFilledFromTheFixture(r);
}

TEST(DcgmGpuSource, DescribeNamesBoth) {
  Harness h("");
  EXPECT_EQ(h.source->Describe(), "nvml: fake; dcgm-exporter at http://localhost:9400/metrics");
}

// --- The MIG join ---------------------------------------------------------------------------

DcgmUnit MigUnit(const GpuUuid& parent, int gi, std::string profile, double gr) {
  DcgmUnit u;
  u.gpu_uuid = parent;
  u.gpu_instance_id = gi;
  u.gpu_instance_profile = std::move(profile);
  u.gr_engine_active = gr;
  return u;
}

GpuReading MigReading(std::vector<MigInstance> migs) {
  GpuReading r;
  r.start_us = 0;
  r.end_us = kS;
  r.gpus.emplace_back();
  r.gpus.back().uuid = kGpu2;
  r.mig_instances = std::move(migs);
  for (const MigInstance& m : r.mig_instances) r.signals.push_back(Signals(m.uuid, {}));
  return r;
}

TEST(MatchMigInstances, BySlicesWhateverDcgmCallsTheMemory) {
  DcgmScrape scrape;
  // DCGM has spelled NVML's 1g.12gb as 1g.11gb and 7g.80gb as 7g.79gb (dcgm-exporter #544, #713).
  scrape.units = {MigUnit(kGpu2, 7, "1g.11gb", 0.5)};
  GpuReading r = MigReading({Mig(kMigA, kGpu2, "1g.12gb", 1)});
  ApplyStats stats = ApplyScrape(scrape, r);
  EXPECT_TRUE(stats.unmatched_mig.empty());
  EXPECT_EQ(Of(r, kMigA).busy_us, 500'000);
}

TEST(MatchMigInstances, MixedProfilesJoinByTheirSlicesNotTheirOrder) {
  DcgmScrape scrape;
  scrape.units = {MigUnit(kGpu2, 1, "4g.40gb", 0.25), MigUnit(kGpu2, 2, "3g.40gb", 0.75)};
  GpuReading r = MigReading({Mig(kMigA, kGpu2, "3g.40gb", 3), Mig(kMigB, kGpu2, "4g.40gb", 4)});
  auto match = MatchMigInstances(r, scrape);
  ASSERT_EQ(match.size(), 2u);
  EXPECT_EQ(*match[kMigA]->gpu_instance_id, 2);
  EXPECT_EQ(*match[kMigB]->gpu_instance_id, 1);
}

TEST(MatchMigInstances, SameSlicesJoinInOrderOfGpuInstanceId) {
  DcgmScrape scrape;
  // The exporter's order is not the join's: ascending GPU_I_ID is.
  scrape.units = {MigUnit(kGpu2, 13, "1g.10gb", 0.3), MigUnit(kGpu2, 9, "1g.10gb", 0.1),
                  MigUnit(kGpu2, 11, "1g.10gb", 0.2)};
  const GpuUuid c{"MIG-cccccccc-1111-2222-3333-444455556666"};
  GpuReading r = MigReading({Mig(kMigA, kGpu2, "1g.10gb", 1), Mig(kMigB, kGpu2, "1g.10gb", 1),
                             Mig(c, kGpu2, "1g.10gb", 1)});
  auto match = MatchMigInstances(r, scrape);
  EXPECT_EQ(*match[kMigA]->gpu_instance_id, 9);
  EXPECT_EQ(*match[kMigB]->gpu_instance_id, 11);
  EXPECT_EQ(*match[c]->gpu_instance_id, 13);
}

TEST(MatchMigInstances, LegacyMigUuidsCarryTheirGpuInstance) {
  DcgmScrape scrape;
  const GpuUuid parent{"GPU-a810a1fc-9f46-0e6f-5cef-bf34c2248e12"};
  scrape.units = {MigUnit(parent, 1, "3g.20gb", 0.1), MigUnit(parent, 2, "3g.20gb", 0.2)};
  const GpuUuid second{"MIG-GPU-a810a1fc-9f46-0e6f-5cef-bf34c2248e12/2/0"};
  const GpuUuid first{"MIG-GPU-a810a1fc-9f46-0e6f-5cef-bf34c2248e12/1/0"};
  GpuReading r;
  r.mig_instances = {Mig(second, parent, "3g.20gb", 3), Mig(first, parent, "3g.20gb", 3)};
  auto match = MatchMigInstances(r, scrape);
  EXPECT_EQ(*match[second]->gpu_instance_id, 2);
  EXPECT_EQ(*match[first]->gpu_instance_id, 1);
}

// NVML's GPU instance id is DCGM's GPU_I_ID: the join is exact whatever the orders.
TEST(MatchMigInstances, NvmlsGpuInstanceIdJoinsExactly) {
  DcgmScrape scrape;
  scrape.units = {MigUnit(kGpu2, 9, "1g.10gb", 0.1), MigUnit(kGpu2, 13, "1g.10gb", 0.3)};
  MigInstance a = Mig(kMigA, kGpu2, "1g.10gb", 1), b = Mig(kMigB, kGpu2, "1g.10gb", 1);
  a.gpu_instance_id = 13;  // NVML's first device is the exporter's higher id
  b.gpu_instance_id = 9;
  GpuReading r = MigReading({a, b});
  auto match = MatchMigInstances(r, scrape);
  ASSERT_EQ(match.size(), 2u);
  EXPECT_EQ(*match[kMigA]->gpu_instance_id, 13);
  EXPECT_EQ(*match[kMigB]->gpu_instance_id, 9);
}

TEST(MatchMigInstances, DifferentCountsLeaveTheGroupUnmatched) {
  DcgmScrape scrape;
  scrape.units = {MigUnit(kGpu2, 1, "3g.40gb", 0.5)};
  GpuReading r = MigReading({Mig(kMigA, kGpu2, "3g.40gb", 3), Mig(kMigB, kGpu2, "3g.40gb", 3)});
  ApplyStats stats = ApplyScrape(scrape, r);
  ASSERT_EQ(stats.unmatched_mig.size(), 1u);
  EXPECT_EQ(stats.unmatched_mig[0],
            kGpu2.value + ": 2 NVML instance(s) of 3 slices, 1 in dcgm-exporter");
  EXPECT_FALSE(Of(r, kMigA).busy_us);
  EXPECT_FALSE(Of(r, kMigB).busy_us);
}

TEST(DcgmGpuSource, UnmatchedMigInstancesAreReported) {
  std::string body = Fixture("classic.prom");
  // Drop instance 2 from the exporter: two NVML instances, one DCGM one.
  std::string kept;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);)
    if (line.find("GPU_I_ID=\"2\"") == std::string::npos) kept += line + "\n";
  Harness h(kept);
  (void)h.Read();
  GpuReading r = h.Read();
  std::vector<std::string> codes = Codes(r);
  EXPECT_NE(std::find(codes.begin(), codes.end(), "MIG_UNMATCHED"), codes.end());
  EXPECT_FALSE(Of(r, kMigA).busy_us);
  EXPECT_TRUE(Of(r, kGpu0).activity) << "the whole GPUs still join";
}

// The adapter and the decorator together, over a real socket: a fake dcgm-exporter on port 0.
TEST(DcgmGpuSource, OverHttpAndThroughAHungExporter) {
  using namespace std::chrono_literals;
  httplib::Server server;
  const std::string body = Fixture("renamed_4_9.prom");
  std::atomic<bool> hang{false};
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    if (hang.load()) std::this_thread::sleep_for(800ms);
    res.set_content(body, "text/plain; version=0.0.4");  // gzipped by the server: we accept it
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { server.listen_after_bind(); });
  for (int i = 0; i < 200 && !server.is_running(); ++i) std::this_thread::sleep_for(5ms);

  auto url = prometheus::ParseHttpUrl("http://127.0.0.1:" + std::to_string(port) + "/metrics");
  ASSERT_TRUE(url);
  DcgmOptions options;
  options.url = url->text;
  options.refresh_us = 2 * kS;
  DcgmGpuSource source(
      OneSecondNode(), [u = *url] { return prometheus::HttpGet(u, 200'000); }, options);
  ASSERT_TRUE(source.Read());  // baseline
  auto r = source.Read();
  ASSERT_TRUE(r);
  ExpectFilledFromTheFixture(*r);

  hang = true;
  ASSERT_TRUE(source.Read());  // within the refresh: the last scrape, no fetch
  const auto start = std::chrono::steady_clock::now();
  r = source.Read();
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r) << "a hung exporter never fails the reading";
  EXPECT_EQ(Codes(*r), std::vector<std::string>{"TIMEOUT"});
  EXPECT_LT(took, 700ms) << "bounded by the fetch timeout";
  EXPECT_FALSE(Of(*r, kGpu0).activity);
  server.stop();
  serving.join();
}

}  // namespace
}  // namespace gpuledger::sources::dcgm
