// std::cout and std::cerr through model::printable: no control character from input (a spec's ESC,
// BEL or CSI in a key, a value, a path) reaches the terminal, whichever message quotes it.
#pragma once
#include <iosfwd>
#include <streambuf>
#include <string>

namespace peakcast::cli {

class PrintableBuf : public std::streambuf {
 public:
  explicit PrintableBuf(std::streambuf* out) : out_(out) {}
  void finish();  // writes what is held back; call once, at the end

 protected:
  int overflow(int c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  bool put(const std::string& text);
  std::streambuf* out_;
  bool pending_c2_ = false;  // a 0xC2 byte whose successor decides whether it starts a C1 control
};

// Filters both streams for the life of the object, then restores them.
class PrintableStreams {
 public:
  PrintableStreams();
  ~PrintableStreams();
  PrintableStreams(const PrintableStreams&) = delete;
  PrintableStreams& operator=(const PrintableStreams&) = delete;

 private:
  std::streambuf* cout_;
  std::streambuf* cerr_;
  PrintableBuf out_, err_;
};

}  // namespace peakcast::cli
