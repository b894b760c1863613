// libFuzzer target: the HTTP/1.1 request reader of from_http_server and the admin endpoint
// (lib/http/http_request_reader.hpp), with the limits the servers use: 16 KiB for the
// header, a chunk line or the trailers, a 64 KiB body (the admin endpoint's; from_http_server's
// default is 1 MiB, the same code path). The input's first byte sets the size of the pieces
// the rest is fed in (1..256 bytes), as a socket would deliver it.
//
// Checked beyond "no crash, no leak, no exception": the buffer holds less than the
// header limit while it waits for input, a refusal is 400, 413 or 431, and a complete request has a
// body within the limit.
#include "http/http_request_reader.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

constexpr sluice::net::HttpLimits k_limits{size_t{16} * 1024, uint64_t{64} * 1024};

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = size_t{data[0]} + 1;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  sluice::net::HttpRequestReader reader(k_limits);
  using Step = sluice::net::HttpRequestReader::Step;
  for (;;) {
    const Step step = reader.next();
    if (step == Step::error) {
      const int s = reader.status();
      check(s == 400 || s == 413 || s == 431);
      check(reader.next() == Step::error);  // spent
      return 0;
    }
    if (step == Step::request) {
      const auto req = reader.take();
      check(req.body().size() <= k_limits.body_bytes);
      continue;
    }
    if (step == Step::header) continue;
    // need_more
    check(reader.buffered() < k_limits.header_bytes);
    if (rest.empty()) return 0;
    const size_t n = rest.size() < piece ? rest.size() : piece;
    reader.feed(rest.substr(0, n));
    rest.remove_prefix(n);
  }
}
