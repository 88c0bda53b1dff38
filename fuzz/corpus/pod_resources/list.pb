
h
train-0mlY
main!
nvidia.com/gpuGPU-1GPU-2::3*.claim-aml"gpu.nvidia.comnode-a"gpu-0

idledefault