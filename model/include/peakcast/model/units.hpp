#pragma once
// Units used across peakcast. Sizes are exact byte counts (int64); FLOPs and seconds are doubles.
#include <compare>
#include <cstdint>
#include <stdexcept>

namespace peakcast {

// A byte count or element count that left int64: no run any GPU can hold gets there, so it is an
// input error (the CLI reports it with exit 2), never a wrapped or negative figure. Validation
// refuses the usual ways there (model/src/validate_magnitudes.cpp); this catches the rest.
struct SizeOverflow : std::overflow_error {
  using std::overflow_error::overflow_error;
};

constexpr std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw SizeOverflow("a size or count exceeds 2^63");
  return r;
}
constexpr std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw SizeOverflow("a size or count exceeds 2^63");
  return r;
}
// An element count computed in double (products of shapes) as int64; NaN or beyond 2^63 throws.
constexpr std::int64_t checked_count(double x) {
  if (!(x > -9.2e18 && x < 9.2e18)) throw SizeOverflow("a size or count exceeds 2^63");
  return static_cast<std::int64_t>(x);
}
constexpr std::int64_t checked_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) throw SizeOverflow("a size or count exceeds 2^63");
  return r;
}

// A count of bytes on one GPU. Signed so that differences (savings) are representable.
struct Bytes {
  std::int64_t value = 0;

  constexpr Bytes() = default;
  constexpr explicit Bytes(std::int64_t v) : value(v) {}

  // Checked: an overflow throws SizeOverflow instead of wrapping.
  constexpr Bytes& operator+=(Bytes o) {
    value = checked_add(value, o.value);
    return *this;
  }
  constexpr Bytes& operator-=(Bytes o) {
    value = checked_sub(value, o.value);
    return *this;
  }
  friend constexpr Bytes operator+(Bytes a, Bytes b) { return Bytes{checked_add(a.value, b.value)}; }
  friend constexpr Bytes operator-(Bytes a, Bytes b) { return Bytes{checked_sub(a.value, b.value)}; }
  friend constexpr Bytes operator*(Bytes a, std::int64_t k) { return Bytes{checked_mul(a.value, k)}; }
  friend constexpr Bytes operator*(std::int64_t k, Bytes a) { return Bytes{checked_mul(a.value, k)}; }
  friend constexpr auto operator<=>(Bytes, Bytes) = default;

  constexpr double gb() const { return static_cast<double>(value) / 1e9; }  // 10^9 bytes
  constexpr double gib() const { return static_cast<double>(value) / 1073741824.0; }
};

constexpr Bytes max(Bytes a, Bytes b) { return a.value >= b.value ? a : b; }

// Element types a tensor can hold, with their sizes.
enum class DType { fp32,
                   bf16,
                   fp16,
                   fp8,
                   int64,
                   int32,
                   int16,
                   uint8,
                   boolean };

constexpr std::int64_t dtype_bytes(DType t) {
  switch (t) {
    case DType::fp32:
    case DType::int32: return 4;
    case DType::bf16:
    case DType::fp16:
    case DType::int16: return 2;
    case DType::fp8:
    case DType::uint8:
    case DType::boolean: return 1;
    case DType::int64: return 8;
  }
  return 0;
}

const char* dtype_name(DType t);

}  // namespace peakcast
