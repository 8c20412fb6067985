# leka: task=ex-matmul-256 target=host-cpu
# Expected verdict: rejected as not TVMScript (this is CUDA C, not a TVMScript PrimFunc).
__global__ void main_kernel(const float* A, const float* B, float* C) {
  int i = blockIdx.x, j = threadIdx.x;
  float acc = 0.f;
  for (int k = 0; k < 256; ++k) acc += A[i * 256 + k] * B[k * 256 + j];
  C[i * 256 + j] = acc;
}
