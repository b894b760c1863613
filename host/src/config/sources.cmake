target_sources(sluice_host_core PRIVATE
  src/config/diagnostic.cc
  src/config/config_loader.cc
  src/config/config_values.cc
  src/config/validator.cc
  src/config/node_params.cc
  src/config/checkpoint_settings.cc
  src/config/repartition_expansion.cc
  src/config/detail/toml_util.cc
  src/config/detail/suggest.cc)
