
!
nvidia.com/gpuGPU-1GPU-2::3

nvidia.com/gpuMIG-1::1