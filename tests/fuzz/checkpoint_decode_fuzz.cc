// Fuzz target: the checkpoint decoder (host/src/checkpoint/format.cc), which reads files
// and topic records that a crash, a full disk or another program may have damaged.
//
// The first byte picks what the rest is: a whole checkpoint file as stored (header, CRC,
// payload), a payload wrapped in a valid header (so that the fuzzer gets past the CRC and
// reaches the value decoder's structure), or one encoded value. Whatever decodes must
// encode again and decode to the same encoding: the format has one spelling per value.
#include "checkpoint/format.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace ck = sluice::host::checkpoint;

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "checkpoint_decode_fuzz: %s\n", what);
    std::abort();
  }
}

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// The header format.hpp documents, around `payload`, with its true CRC and length.
std::string with_valid_header(std::string_view payload) {
  std::string file(ck::k_magic);
  put_le(file, ck::k_format_version, 4);
  put_le(file, ck::crc32c(payload), 4);
  put_le(file, payload.size(), 8);
  file.append(payload);
  return file;
}

void round_trip_checkpoint(std::string_view bytes) {
  auto decoded = ck::decode_checkpoint(bytes);
  if (!decoded.is_ok()) return;
  const std::string once = ck::encode_checkpoint(*decoded);
  auto again = ck::decode_checkpoint(once);
  check(again.is_ok(), "a re-encoded checkpoint does not decode");
  check(ck::encode_checkpoint(*again) == once, "a checkpoint's encoding is not stable");
}

void round_trip_value(std::string_view bytes) {
  auto decoded = ck::decode_value(bytes);
  if (!decoded.is_ok()) return;
  std::string once;
  ck::encode_value(*decoded, once);
  auto again = ck::decode_value(once);
  check(again.is_ok(), "a re-encoded value does not decode");
  std::string twice;
  ck::encode_value(*again, twice);
  check(twice == once, "a value's encoding is not stable");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: round_trip_checkpoint(rest); break;
    case 1: round_trip_checkpoint(with_valid_header(rest)); break;
    default: round_trip_value(rest); break;
  }
  return 0;
}
