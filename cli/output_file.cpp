#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "peakcast/model/diagnostics.hpp"

namespace peakcast::cli {
namespace {

bool fail(const std::string& flag, const std::string& path, const std::string& reason) {
  std::cerr << "error: " << flag << ": cannot write " << model::printable(path) << ": " << reason << "\n";
  return false;
}

// write(2) until every byte is out; a short write that makes no progress is an error (errno, or ENOSPC).
bool write_all(int fd, const std::string& content) {
  const char* at = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, at, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return false;
    }
    at += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

bool write_direct(const std::string& flag, const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return fail(flag, path, std::strerror(errno));
  const bool wrote = write_all(fd, content);
  const int write_errno = errno;
  const bool closed = ::close(fd) == 0;
  if (!wrote) return fail(flag, path, std::strerror(write_errno));
  if (!closed) return fail(flag, path, std::strerror(errno));
  return true;
}

}  // namespace

bool write_output(const std::string& flag, const std::string& path, const std::string& content) {
  if (path.empty()) return fail(flag, path, "empty path");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return fail(flag, path, "is a directory");
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return write_direct(flag, path, content);
  }
  std::string tmp = path + ".peakcast-XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return fail(flag, path, std::strerror(errno));
  const bool wrote = write_all(fd, content) && ::fsync(fd) == 0;
  const int write_errno = errno;
  const bool closed = ::close(fd) == 0;
  const int close_errno = errno;
  if (!wrote || !closed) {
    ::unlink(tmp.c_str());
    return fail(flag, path, std::strerror(wrote ? close_errno : write_errno));
  }
  // mkstemp creates 0600; an output file gets the usual 0666 less the umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(tmp.c_str(), 0666 & ~mask);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    ::unlink(tmp.c_str());
    return fail(flag, path, std::strerror(rename_errno));
  }
  return true;
}

}  // namespace peakcast::cli
