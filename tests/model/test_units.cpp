#include <catch2/catch.hpp>

#include "peakcast/model/embedded_configs.hpp"
#include "peakcast/model/units.hpp"

using peakcast::Bytes;

TEST_CASE("Bytes arithmetic and decimal/binary conversions", "[model][units]") {
  const Bytes a{3'000'000'000}, b{1'000'000'000};
  CHECK((a - b).value == 2'000'000'000);
  CHECK((a + b).gb() == Approx(4.0));
  CHECK(Bytes{1073741824}.gib() == Approx(1.0));
  CHECK(peakcast::dtype_bytes(peakcast::DType::bf16) == 2);
  CHECK(peakcast::dtype_bytes(peakcast::DType::int64) == 8);
}
