// Keeps the calibration library non-empty while its sources are added.
namespace peakcast::calibration {
const char* library_name() { return "peakcast_calibration"; }
}  // namespace peakcast::calibration
