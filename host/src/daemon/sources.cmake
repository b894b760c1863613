target_sources(sluice_host_core PRIVATE
  src/daemon/systemd_notify.cc
  src/daemon/reload.cc
  src/daemon/logging.cc
  src/daemon/log_redaction.cc
  src/daemon/daemon.cc)
