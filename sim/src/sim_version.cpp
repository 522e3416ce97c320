// Keeps the sim library non-empty while its sources are added.
namespace peakcast::sim {
const char* library_name() { return "peakcast_sim"; }
}  // namespace peakcast::sim
