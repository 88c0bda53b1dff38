#pragma once
// How fast one GPU of a catalog model is, from its vendor's datasheet: memory bandwidth and
// dense FP16/BF16 tensor throughput (without structured sparsity). Rightsizing scales a
// workload's measured need by these to tell whether a cheaper model keeps up (issue 59); each
// row names the document it is taken from (gpu_speed.cc).

#include <string_view>

namespace gpuledger::cost {

struct GpuDatasheet {
  double memory_bandwidth_gbs = 0;  // GB/s
  double fp16_dense_tflops = 0;     // TFLOPS
  std::string_view source;          // the datasheet
};

// The datasheet figures of `gpu_model` (a catalog name: "T4", "H100-80GB"); all zero when the
// model is not in the table.
GpuDatasheet GpuModelSpeed(std::string_view gpu_model);

}  // namespace gpuledger::cost
