// One part file of to_files: an open, hidden in-progress file that whole lines are appended
// to, plain or as one gzip stream (zlib), until it is finished (flushed, fsynced, closed).
//
// Data is buffered here (64 KiB) and written with write(2): the node owns every byte it has
// not handed to the kernel, so a failed write is reported against the file that failed.
#pragma once

#include <sluice/sluice.hpp>

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace sluice::files {

class PartFile {
 public:
  /// Creates `path` (which must not exist: O_EXCL), for gzip output when `gzip` (zlib level
  /// `level`).
  static sdk::Result<PartFile> create(std::string path, bool gzip, int level);

  PartFile(PartFile&&) noexcept;
  PartFile& operator=(PartFile&&) noexcept;
  PartFile(const PartFile&) = delete;
  PartFile& operator=(const PartFile&) = delete;
  /// Closes the descriptor if finish() did not: what was not finished stays in-progress.
  ~PartFile();

  /// Appends `lines` (whole lines, with their newlines).
  sdk::Status append(std::string_view lines);
  /// Writes what is buffered (and the gzip trailer), fsyncs and closes: the file is complete.
  sdk::Status finish();

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// Bytes of lines appended (before compression).
  [[nodiscard]] uint64_t bytes_in() const noexcept { return bytes_in_; }
  /// Bytes the file holds once finished, as far as known now (for gzip: compressed so far).
  [[nodiscard]] uint64_t bytes_out() const noexcept { return written_ + out_.size(); }

 private:
  struct ZDeleter {
    void operator()(z_stream* z) const noexcept;
  };
  PartFile(std::string path, int fd, std::unique_ptr<z_stream, ZDeleter> z);
  /// Compresses `in` into out_ (flush: Z_NO_FLUSH or Z_FINISH).
  sdk::Status deflate_into(std::string_view in, int flush);
  /// Writes out_ to the file.
  sdk::Status write_out();
  sdk::Status io_error(int err, const char* what) const;

  std::string path_;
  int fd_ = -1;
  std::unique_ptr<z_stream, ZDeleter> z_;  // null: plain text
  std::string out_;                        // bytes for the file, not yet written
  uint64_t bytes_in_ = 0;
  uint64_t written_ = 0;
};

}  // namespace sluice::files
