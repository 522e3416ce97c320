#include "peakcast/model/units.hpp"

namespace peakcast {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::fp32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp8: return "fp8";
    case DType::int64: return "int64";
    case DType::int32: return "int32";
    case DType::int16: return "int16";
    case DType::uint8: return "uint8";
    case DType::boolean: return "bool";
  }
  return "?";
}

}  // namespace peakcast
