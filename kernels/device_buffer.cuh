// Owning device and pinned-host buffers. Allocation happens when a rollout is set up, never in
// the epoch loop.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "cuda_check.cuh"

namespace crawleval::cuda::detail {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) { resize(n); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }

  void resize(std::size_t n) {
    if (n == n_) return;
    release();
    if (n > 0) CE_CUDA_TRY(cudaMalloc(&ptr_, n * sizeof(T)));
    n_ = n;
  }
  void upload(const T* host, std::size_t n, cudaStream_t s) {
    resize(n);
    if (n) CE_CUDA_TRY(cudaMemcpyAsync(ptr_, host, n * sizeof(T), cudaMemcpyHostToDevice, s));
  }
  void upload(const std::vector<T>& host, cudaStream_t s) { upload(host.data(), host.size(), s); }
  void download(T* host, std::size_t n, cudaStream_t s) const {
    if (n) CE_CUDA_TRY(cudaMemcpyAsync(host, ptr_, n * sizeof(T), cudaMemcpyDeviceToHost, s));
  }
  void zero(cudaStream_t s) {
    if (n_) CE_CUDA_TRY(cudaMemsetAsync(ptr_, 0, n_ * sizeof(T), s));
  }

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return n_; }

 private:
  void release() {
    if (ptr_) CE_CUDA_TRY_NOTHROW(cudaFree(ptr_));
    ptr_ = nullptr;
    n_ = 0;
  }
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};

/// Pinned host memory for the few values read back every epoch.
template <class T>
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t n) : n_(n) {
    CE_CUDA_TRY(cudaMallocHost(&ptr_, n * sizeof(T)));
  }
  ~PinnedBuffer() {
    if (ptr_) CE_CUDA_TRY_NOTHROW(cudaFreeHost(ptr_));
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  T* data() { return ptr_; }
  T& operator[](std::size_t i) { return ptr_[i]; }

 private:
  T* ptr_ = nullptr;
  std::size_t n_;
};

/// A stream that is destroyed with its owner.
class Stream {
 public:
  Stream() { CE_CUDA_TRY(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { CE_CUDA_TRY_NOTHROW(cudaStreamDestroy(s_)); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

}  // namespace crawleval::cuda::detail
