// PartFile: buffered, optionally gzip-compressed writes to one in-progress file.
#include "part_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace sluice::files {

namespace {

constexpr size_t k_buffer_size = size_t{64} * 1024;
// windowBits 15 + 16: a gzip header and trailer around the deflate stream (zlib.h).
constexpr int k_gzip_window_bits = 15 + 16;

}  // namespace

void PartFile::ZDeleter::operator()(z_stream* z) const noexcept {
  deflateEnd(z);
  delete z;
}

sdk::Result<PartFile> PartFile::create(std::string path, bool gzip, int level) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return sdk::errno_status(errno, "to_files: cannot create '" + path + "'");
  std::unique_ptr<z_stream, ZDeleter> z;
  if (gzip) {
    auto* raw = new z_stream{};
    if (deflateInit2(raw, level, Z_DEFLATED, k_gzip_window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      delete raw;
      ::close(fd);
      ::unlink(path.c_str());
      return sdk::Status(SL_RESOURCE_EXHAUSTED, "to_files: zlib could not start a gzip stream");
    }
    z.reset(raw);
  }
  return PartFile(std::move(path), fd, std::move(z));
}

PartFile::PartFile(std::string path, int fd, std::unique_ptr<z_stream, ZDeleter> z)
    : path_(std::move(path)), fd_(fd), z_(std::move(z)) {
  out_.reserve(k_buffer_size);
}

PartFile::PartFile(PartFile&& o) noexcept
    : path_(std::move(o.path_)),
      fd_(std::exchange(o.fd_, -1)),
      z_(std::move(o.z_)),
      out_(std::move(o.out_)),
      bytes_in_(o.bytes_in_),
      written_(o.written_) {}

PartFile& PartFile::operator=(PartFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(o.path_);
    fd_ = std::exchange(o.fd_, -1);
    z_ = std::move(o.z_);
    out_ = std::move(o.out_);
    bytes_in_ = o.bytes_in_;
    written_ = o.written_;
  }
  return *this;
}

PartFile::~PartFile() {
  if (fd_ >= 0) ::close(fd_);
}

sdk::Status PartFile::io_error(int err, const char* what) const {
  return sdk::errno_status(err, std::string("to_files: cannot ") + what + " '" + path_ + "'");
}

sdk::Status PartFile::append(std::string_view lines) {
  if (fd_ < 0) return sdk::failed_precondition("to_files: '" + path_ + "' is finished");
  bytes_in_ += lines.size();
  if (z_) {
    SLUICE_SDK_RETURN_IF_ERROR(deflate_into(lines, Z_NO_FLUSH));
  } else {
    out_.append(lines);
  }
  if (out_.size() >= k_buffer_size) return write_out();
  return {};
}

sdk::Status PartFile::deflate_into(std::string_view in, int flush) {
  z_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z_->avail_in = static_cast<uInt>(in.size());
  for (;;) {
    const size_t had = out_.size();
    const size_t room = std::max<size_t>(k_buffer_size / 4, in.size() / 2 + 64);
    out_.resize(had + room);
    z_->next_out = reinterpret_cast<Bytef*>(out_.data() + had);
    z_->avail_out = static_cast<uInt>(room);
    const int rc = deflate(z_.get(), flush);
    out_.resize(had + room - z_->avail_out);
    if (rc == Z_STREAM_ERROR) {
      return sdk::Status(SL_INTERNAL, "to_files: zlib failed compressing '" + path_ + "'");
    }
    if (flush == Z_FINISH ? rc == Z_STREAM_END : z_->avail_in == 0 && z_->avail_out != 0) break;
    if (out_.size() >= k_buffer_size) SLUICE_SDK_RETURN_IF_ERROR(write_out());
  }
  return {};
}

sdk::Status PartFile::write_out() {
  size_t done = 0;
  while (done < out_.size()) {
    const ssize_t n = ::write(fd_, out_.data() + done, out_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error(errno, "write to");
    done += static_cast<size_t>(n);
  }
  written_ += out_.size();
  out_.clear();
  return {};
}

sdk::Status PartFile::finish() {
  if (fd_ < 0) return {};
  if (z_) SLUICE_SDK_RETURN_IF_ERROR(deflate_into({}, Z_FINISH));
  SLUICE_SDK_RETURN_IF_ERROR(write_out());
  if (::fsync(fd_) != 0) return io_error(errno, "fsync");
  const int fd = std::exchange(fd_, -1);
  z_.reset();
  if (::close(fd) != 0) return io_error(errno, "close");
  return {};
}

}  // namespace sluice::files
