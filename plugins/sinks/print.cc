// print: elements to stdout.
#include <sluice/sluice.hpp>

#include <cerrno>
#include <cstdio>

#include "line_text.hpp"
#include "sinks.hpp"

namespace sluice::sinks {

using sdk::Batch;
using sdk::Config;
using sdk::Context;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

Print::Print(Context /*ctx*/, const Config& cfg) : prefix_(cfg.get_string("prefix")) {}

Status Print::process(Context /*ctx*/, uint32_t /*input*/, Batch batch) {
  text_.clear();
  for (const sl_message& m : batch) {
    text_.append(prefix_);
    append_display(text_, ValueRef(m.value));
    text_.push_back('\n');
  }
  // One locked stdio call per batch, flushed at once: a reader sees whole batches promptly.
  if (std::fwrite(text_.data(), 1, text_.size(), stdout) != text_.size() ||
      std::fflush(stdout) != 0) {
    return sdk::errno_status(errno, "print: cannot write to stdout");
  }
  return {};
}

Status Print::finish(Context /*ctx*/) {
  if (std::fflush(stdout) != 0) return sdk::errno_status(errno, "print: cannot flush stdout");
  return {};
}

}  // namespace sluice::sinks
