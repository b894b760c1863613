// The built-in filesystem checkpoint store "fs" (docs/CHECKPOINTING.md): one
// directory per pipeline, one file per epoch, written to a temporary file,
// fsynced, renamed into place, and the directory fsynced.
#pragma once

#include <sluice/sluice.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace sluice::host::checkpoint {

// The descriptor registered as store "fs" (param `dir`).
const sl_checkpoint_store* fs_store_descriptor();

// Where "fs" keeps the checkpoints of `pipeline` when `dir` is not given:
// $STATE_DIRECTORY/<pipeline> under systemd (StateDirectory=), else
// ./<pipeline>.checkpoints.
std::filesystem::path default_fs_dir(std::string_view pipeline);

// Name of the file of `epoch` in the directory ("epoch-00000000000000000042.ckpt").
std::string fs_epoch_file(uint64_t epoch);

}  // namespace sluice::host::checkpoint
