target_sources(sluice_host_core PRIVATE
  src/checkpoint/format.cc
  src/checkpoint/fs_store.cc
  src/checkpoint/store.cc
  src/checkpoint/key_group_index.cc
  src/checkpoint/coordinator.cc)
