# sluice_warnings: an INTERFACE target that carries the project's warning and
# sanitizer options, linked PRIVATE by every target we build (no global flags).
add_library(sluice_warnings INTERFACE)
target_compile_options(sluice_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wpedantic -Wshadow=local>
  $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor -Wold-style-cast>)
if(SLUICE_WERROR)
  target_compile_options(sluice_warnings INTERFACE -Werror)
endif()
if(SLUICE_SANITIZE)
  target_compile_options(sluice_warnings INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                                   -fno-sanitize-recover=undefined)
  target_link_options(sluice_warnings INTERFACE -fsanitize=address,undefined)
endif()
