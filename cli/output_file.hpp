// Every file a command writes goes through here: written whole or not at all.
#pragma once
#include <string>

namespace peakcast::cli {

// Writes `content` to `path` for the option `flag` (e.g. "--html"). A regular file is written to a
// temporary file beside it, flushed, closed and renamed over `path` only when all of that succeeded, so a
// full disk or a short write leaves no partial file and the old one untouched. A path that already is a
// character device or a pipe (/dev/stdout, /dev/full, a FIFO) is written directly, every write and the
// close checked. On failure: prints "error: FLAG: cannot write PATH: REASON" to stderr, removes the
// temporary file and returns false (the command then exits 2).
bool write_output(const std::string& flag, const std::string& path, const std::string& content);

}  // namespace peakcast::cli
