#include "rightsizing/mig_profiles.h"

#include <algorithm>
#include <cmath>

namespace gpuledger::rightsizing {
namespace {

// One row of the table: a profile as NVIDIA names it.
struct Row {
  const char* name;
  int compute_slices;
  int memory_slices;
  int memory_gb;  // nominal, decimal
  int max_instances;
};

struct Family {
  std::vector<std::string_view> models;
  int total_slices;
  int total_memory_slices;
  std::vector<Row> rows;
};

// The public facts, per GPU family: NVIDIA MIG User Guide, "Supported MIG
// Profiles" (docs.nvidia.com/datacenter/tesla/mig-user-guide), and
// NVIDIA/mig-parted deployments/systemd/config-default.yaml (@219e780d), whose
// all-<profile> entries give each profile's maximum count per GPU. "+me"
// variants left out (see the header). Memory slices are of 8 (A30: 4); the
// profile's memory is its share of them.
const std::vector<Family>& Families() {
  static const auto* families = new std::vector<Family>{
      {{"A100-40GB"},
       7,
       8,
       {{"1g.5gb", 1, 1, 5, 7},
        {"1g.10gb", 1, 2, 10, 4},
        {"2g.10gb", 2, 2, 10, 3},
        {"3g.20gb", 3, 4, 20, 2},
        {"4g.20gb", 4, 4, 20, 1},
        {"7g.40gb", 7, 8, 40, 1}}},
      // A100-80GB, A800-80GB, H100-80GB (SXM and PCIe), H800-80GB share one
      // layout.
      {{"A100-80GB", "H100-80GB", "H100"},
       7,
       8,
       {{"1g.10gb", 1, 1, 10, 7},
        {"1g.20gb", 1, 2, 20, 4},
        {"2g.20gb", 2, 2, 20, 3},
        {"3g.40gb", 3, 4, 40, 2},
        {"4g.40gb", 4, 4, 40, 1},
        {"7g.80gb", 7, 8, 80, 1}}},
      {{"A30-24GB", "A30"},
       4,
       4,
       {{"1g.6gb", 1, 1, 6, 4}, {"2g.12gb", 2, 2, 12, 2}, {"4g.24gb", 4, 4, 24, 1}}},
      {{"H100-NVL-94GB"},
       7,
       8,
       {{"1g.12gb", 1, 1, 12, 7},
        {"1g.24gb", 1, 2, 24, 4},
        {"2g.24gb", 2, 2, 24, 3},
        {"3g.47gb", 3, 4, 47, 2},
        {"4g.47gb", 4, 4, 47, 1},
        {"7g.94gb", 7, 8, 94, 1}}},
      // H100-96GB, GH200 with 96 GB and H20 share one layout.
      {{"H100-96GB", "GH200", "H20"},
       7,
       8,
       {{"1g.12gb", 1, 1, 12, 7},
        {"1g.24gb", 1, 2, 24, 4},
        {"2g.24gb", 2, 2, 24, 3},
        {"3g.48gb", 3, 4, 48, 2},
        {"4g.48gb", 4, 4, 48, 1},
        {"7g.96gb", 7, 8, 96, 1}}},
      {{"H200-141GB"},
       7,
       8,
       {{"1g.18gb", 1, 1, 18, 7},
        {"1g.35gb", 1, 2, 35, 4},
        {"2g.35gb", 2, 2, 35, 3},
        {"3g.71gb", 3, 4, 71, 2},
        {"4g.71gb", 4, 4, 71, 1},
        {"7g.141gb", 7, 8, 141, 1}}},
      {{"GH200-144GB"},
       7,
       8,
       {{"1g.18gb", 1, 1, 18, 7},
        {"1g.36gb", 1, 2, 36, 4},
        {"2g.36gb", 2, 2, 36, 3},
        {"3g.72gb", 3, 4, 72, 2},
        {"4g.72gb", 4, 4, 72, 1},
        {"7g.144gb", 7, 8, 144, 1}}},
      {{"B200"},
       7,
       8,
       {{"1g.23gb", 1, 1, 23, 7},
        {"1g.45gb", 1, 2, 45, 4},
        {"2g.45gb", 2, 2, 45, 3},
        {"3g.90gb", 3, 4, 90, 2},
        {"4g.90gb", 4, 4, 90, 1},
        {"7g.180gb", 7, 8, 180, 1}}},
  };
  return *families;
}

struct Entry {
  std::string_view model;
  std::vector<MigProfile> profiles;
};

const std::vector<Entry>& Table() {
  static const auto* table = [] {
    auto* t = new std::vector<Entry>;
    for (const Family& f : Families()) {
      std::vector<MigProfile> profiles;
      for (const Row& r : f.rows) {
        profiles.push_back(MigProfile{
            r.name, r.compute_slices, f.total_slices, r.memory_slices, f.total_memory_slices,
            static_cast<Bytes>(r.memory_gb) * 1'000'000'000, r.max_instances});
      }
      std::stable_sort(profiles.begin(), profiles.end(),
                       [](const MigProfile& a, const MigProfile& b) {
                         if (a.compute_slices != b.compute_slices)
                           return a.compute_slices < b.compute_slices;
                         return a.memory_bytes < b.memory_bytes;
                       });
      for (std::string_view m : f.models) t->push_back(Entry{m, profiles});
    }
    return t;
  }();
  return *table;
}

}  // namespace

const std::vector<MigProfile>* MigProfilesFor(std::string_view gpu_model) {
  for (const Entry& e : Table())
    if (e.model == gpu_model) return &e.profiles;
  return nullptr;
}

std::optional<MigProfile> SmallestFittingProfile(std::string_view gpu_model, Bytes memory_needed,
                                                 double compute_share_needed) {
  const std::vector<MigProfile>* profiles = MigProfilesFor(gpu_model);
  if (profiles == nullptr) return std::nullopt;
  // The list is ordered smallest first, so the first fit is the smallest.
  for (const MigProfile& p : *profiles) {
    // slices >= share * total, compared in slices with a tolerance for a share
    // computed as k / total in floating point (3/7 must fit 3g).
    bool compute_fits =
        static_cast<double>(p.compute_slices) + 1e-9 >= compute_share_needed * p.total_slices;
    if (p.memory_bytes >= memory_needed && compute_fits) return p;
  }
  return std::nullopt;
}

Bytes WithHeadroom(Bytes bytes, double headroom) {
  return static_cast<Bytes>(
      std::ceil(static_cast<long double>(bytes) * static_cast<long double>(headroom)));
}

}  // namespace gpuledger::rightsizing
