#include "terminal_filter.hpp"

#include <iostream>

#include "peakcast/model/diagnostics.hpp"

namespace peakcast::cli {

bool PrintableBuf::put(const std::string& text) {
  return out_->sputn(text.data(), static_cast<std::streamsize>(text.size())) == static_cast<std::streamsize>(text.size());
}

std::streamsize PrintableBuf::xsputn(const char* s, std::streamsize n) {
  std::string chunk;
  if (pending_c2_) chunk += '\xC2';
  chunk.append(s, static_cast<std::size_t>(n));
  // A trailing 0xC2 waits for the next byte: with 0x80-0x9F after it, the pair is one C1 control.
  pending_c2_ = !chunk.empty() && static_cast<unsigned char>(chunk.back()) == 0xC2;
  if (pending_c2_) chunk.pop_back();
  return put(model::printable(chunk)) ? n : 0;
}

int PrintableBuf::overflow(int c) {
  if (c == traits_type::eof()) return traits_type::not_eof(c);
  const char ch = traits_type::to_char_type(c);
  return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
}

// A flush between 0xC2 and its successor keeps the byte back, so no flush splits a C1 control.
int PrintableBuf::sync() { return out_->pubsync(); }

void PrintableBuf::finish() {
  if (pending_c2_) put("\\xC2");  // a lone 0xC2 at the very end is not text: shown escaped
  pending_c2_ = false;
  out_->pubsync();
}

PrintableStreams::PrintableStreams()
    : cout_(std::cout.rdbuf()), cerr_(std::cerr.rdbuf()), out_(std::cout.rdbuf()), err_(std::cerr.rdbuf()) {
  std::cout.rdbuf(&out_);
  std::cerr.rdbuf(&err_);
}

PrintableStreams::~PrintableStreams() {
  std::cout.flush();
  std::cerr.flush();
  out_.finish();
  err_.finish();
  std::cout.rdbuf(cout_);
  std::cerr.rdbuf(cerr_);
}

}  // namespace peakcast::cli
