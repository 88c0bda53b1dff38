#include "cost/gpu_speed.h"

namespace gpuledger::cost {
namespace {

struct Row {
  std::string_view name;
  GpuDatasheet sheet;
};

// Where a datasheet gives a figure with sparsity and without, the one without. H100 rows are the
// SXM part (what p5, a3 and ND H100 v5 run: 3.35 TB/s, 989 TFLOPS; the PCIe card is 2.0 TB/s,
// 756 TFLOPS); A100-80GB is the SXM part (2,039 GB/s; PCIe 1,935).
constexpr Row kRows[] = {
    {"T4",
     {320, 65, "NVIDIA T4 Tensor Core GPU datasheet: 320 GB/s, mixed-precision FP16 65 TFLOPS"}},
    {"L4",
     {300, 121,
      "NVIDIA L4 Tensor Core GPU datasheet: 300 GB/s, FP16 Tensor 242 TFLOPS with sparsity"}},
    {"A10",
     {600, 125,
      "NVIDIA A10 Tensor Core GPU datasheet: 600 GB/s, FP16 Tensor 125 TFLOPS (250 with "
      "sparsity)"}},
    {"A10G",
     {600, 70,
      "AWS EC2 G5 (A10G): 600 GB/s GDDR6 as the A10; FP16 Tensor 70 TFLOPS as AWS and NVIDIA's "
      "partners list it"}},
    {"L40S",
     {864, 362, "NVIDIA L40S datasheet: 864 GB/s, FP16 Tensor 362.05 TFLOPS (733 with sparsity)"}},
    {"A30",
     {933, 165,
      "NVIDIA A30 Tensor Core GPU datasheet: 933 GB/s, FP16 Tensor 165 TFLOPS (330 with "
      "sparsity)"}},
    {"A30-24GB",
     {933, 165,
      "NVIDIA A30 Tensor Core GPU datasheet: 933 GB/s, FP16 Tensor 165 TFLOPS (330 with "
      "sparsity)"}},
    {"A100-40GB",
     {1555, 312,
      "NVIDIA A100 Tensor Core GPU datasheet: 40GB 1,555 GB/s, FP16 Tensor 312 TFLOPS (624 with "
      "sparsity)"}},
    {"A100-80GB",
     {2039, 312,
      "NVIDIA A100 Tensor Core GPU datasheet: 80GB SXM 2,039 GB/s, FP16 Tensor 312 TFLOPS (624 "
      "with sparsity)"}},
    {"H100",
     {3350, 989,
      "NVIDIA H100 Tensor Core GPU datasheet: SXM 3.35 TB/s, FP16 Tensor 1,979 TFLOPS with "
      "sparsity"}},
    {"H100-80GB",
     {3350, 989,
      "NVIDIA H100 Tensor Core GPU datasheet: SXM 3.35 TB/s, FP16 Tensor 1,979 TFLOPS with "
      "sparsity"}},
    {"H200",
     {4800, 989,
      "NVIDIA H200 Tensor Core GPU datasheet: SXM 4.8 TB/s, FP16 Tensor 1,979 TFLOPS with "
      "sparsity"}},
    {"H200-141GB",
     {4800, 989,
      "NVIDIA H200 Tensor Core GPU datasheet: SXM 4.8 TB/s, FP16 Tensor 1,979 TFLOPS with "
      "sparsity"}},
    {"B200",
     {8000, 2250,
      "NVIDIA HGX B200 datasheet: 8 TB/s per GPU, FP16/BF16 Tensor 4.5 PFLOPS with sparsity"}},
    {"V100-16GB",
     {900, 125, "NVIDIA V100 Tensor Core GPU datasheet: SXM2 900 GB/s, Tensor 125 TFLOPS"}},
    {"V100-32GB",
     {900, 125, "NVIDIA V100 Tensor Core GPU datasheet: SXM2 900 GB/s, Tensor 125 TFLOPS"}},
    {"P100",
     {732, 18.7,
      "NVIDIA Tesla P100 datasheet: PCIe 16GB 732 GB/s, FP16 18.7 TFLOPS (no tensor cores)"}},
};

}  // namespace

GpuDatasheet GpuModelSpeed(std::string_view gpu_model) {
  for (const Row& r : kRows)
    if (r.name == gpu_model) return r.sheet;
  return {};
}

}  // namespace gpuledger::cost
