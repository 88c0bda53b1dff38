#pragma once
// The simulator's world, built once from a scenario: each node's devices (GPUs, MIG instances,
// power model, NVML sample period) and each actor (a pod or a host process) with its grants,
// contexts and pids. Internal to the simulator's files (simulator.cc steps it).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/units.h"
#include "model/consumer.h"
#include "model/snapshot.h"
#include "sim/scenario.h"

namespace gpuledger::sim::world {

// Real NVML shows a small driver reservation on any device with a context; it is memory no
// process explains (unattributed).
inline constexpr double kDriverReservation = 0.004;

struct Power {
  double idle_w, max_w;
};
// Idle and maximum board power of a GPU model, for the simulated energy counter.
Power PowerOf(std::string_view model);

struct Context {  // where an actor's processes run on one GPU
  int gpu = 0;
  int mig = -1;  // MIG instance index in the node's layout; -1: the physical GPU
  int first_pid = 0;
};

// A pod or a host process.
struct Actor {
  ConsumerRef ref;
  bool host = false;
  std::string host_name;
  int node = 0;
  Micros start = 0, end = 0;  // absolute
  Micros linger_until = 0;    // the kubelet lists its grants until then (grant_lingers)
  const ComputeProfile* compute = nullptr;
  const EfficiencyProfile* efficiency = nullptr;
  const MemoryProfile* memory = nullptr;
  std::uint64_t seed = 0;
  int processes = 1;
  std::vector<Grant> grants;
  std::vector<SharePpd> share;  // static share per grant; -1: DRA, decided per interval
  std::vector<int> grant_gpu;
  std::vector<Context> contexts;
  std::string visible_devices;
  // The MPS server of an MPS node (a process of the device plugin's MPS control daemon pod, one
  // context per GPU): on a GPU only while a client is, NVML's per-process samples are all its.
  bool mps_server = false;
};

// The process NVML gave a GPU's latest sample window to, and the window's value.
struct WindowOwner {
  int actor = -1;  // -1: none (the window went to nobody, or several windows were drawn at once)
  int process = 0;
  int percent = 0;
};

struct NodeWorld {
  const NodeSpec* spec = nullptr;
  std::vector<PhysicalGpu> gpus;
  std::vector<MigInstance> migs;  // gpu-major: gpu * layout + m
  std::vector<int> mig_slices;
  std::vector<double> period_us;        // NVML sample period per GPU
  std::vector<WindowOwner> last_owner;  // per GPU, as the simulation runs (reset by each Run)
  std::vector<int> actors;
  int mps_server = -1;  // the actor of the node's MPS server, -1: none (not an MPS node)
  std::vector<Micros> cuts;
  Power power{};
};

// A scenario's devices, pods and host processes (with grants, contexts and pids) and consumers:
// everything but the cut times. Actors point into the Scenario it was built from.
struct World {
  std::vector<Actor> actors;
  std::vector<NodeWorld> nodes;
  std::map<ConsumerRef, ConsumerInfo> consumers;
};

World BuildWorld(const Scenario& sc);

// Whether an actor has a process on GPU `g`, given the node's active actors: the MPS server only
// while another actor does, every other actor whenever it is active and has a context there.
bool OnGpu(const std::vector<Actor>& actors, const std::vector<int>& active, int ai, int g);

}  // namespace gpuledger::sim::world
