#pragma once
// Units used across peakcast. Sizes are exact byte counts (int64); FLOPs and seconds are doubles.
#include <compare>
#include <cstdint>

namespace peakcast {

// A count of bytes on one GPU. Signed so that differences (savings) are representable.
struct Bytes {
  std::int64_t value = 0;

  constexpr Bytes() = default;
  constexpr explicit Bytes(std::int64_t v) : value(v) {}

  constexpr Bytes& operator+=(Bytes o) { value += o.value; return *this; }
  constexpr Bytes& operator-=(Bytes o) { value -= o.value; return *this; }
  friend constexpr Bytes operator+(Bytes a, Bytes b) { return Bytes{a.value + b.value}; }
  friend constexpr Bytes operator-(Bytes a, Bytes b) { return Bytes{a.value - b.value}; }
  friend constexpr Bytes operator*(Bytes a, std::int64_t k) { return Bytes{a.value * k}; }
  friend constexpr Bytes operator*(std::int64_t k, Bytes a) { return Bytes{a.value * k}; }
  friend constexpr auto operator<=>(Bytes, Bytes) = default;

  constexpr double gb() const { return static_cast<double>(value) / 1e9; }     // 10^9 bytes
  constexpr double gib() const { return static_cast<double>(value) / 1073741824.0; }
};

constexpr Bytes max(Bytes a, Bytes b) { return a.value >= b.value ? a : b; }

// Element types a tensor can hold, with their sizes.
enum class DType { fp32, bf16, fp16, fp8, int64, int32, int16, uint8, boolean };

constexpr std::int64_t dtype_bytes(DType t) {
  switch (t) {
    case DType::fp32: case DType::int32: return 4;
    case DType::bf16: case DType::fp16: case DType::int16: return 2;
    case DType::fp8: case DType::uint8: case DType::boolean: return 1;
    case DType::int64: return 8;
  }
  return 0;
}

const char* dtype_name(DType t);

}  // namespace peakcast
