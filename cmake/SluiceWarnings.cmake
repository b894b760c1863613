# sluice_warnings: an INTERFACE target that carries the project's warning and
# sanitizer options, linked PRIVATE by every target we build (no global flags).
add_library(sluice_warnings INTERFACE)
target_compile_options(sluice_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wpedantic>
  $<$<AND:$<COMPILE_LANGUAGE:C,CXX>,$<C_COMPILER_ID:GNU>>:-Wshadow=local>
  $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor -Wold-style-cast>)
if(SLUICE_WERROR)
  target_compile_options(sluice_warnings INTERFACE -Werror)
endif()
if(SLUICE_SANITIZE)
  target_compile_options(sluice_warnings INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                                   -fno-sanitize-recover=undefined)
  target_link_options(sluice_warnings INTERFACE -fsanitize=address,undefined)
endif()
if(SLUICE_FUZZ)
  # libFuzzer builds (scripts/fuzz.sh): coverage for the fuzzer everywhere, ASan+UBSan to
  # turn memory errors and undefined behaviour into findings. The fuzz targets add
  # -fsanitize=fuzzer (libFuzzer's main) themselves.
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SLUICE_FUZZ needs clang (libFuzzer): CC=clang CXX=clang++")
  endif()
  target_compile_options(sluice_warnings INTERFACE
    -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=undefined)
  target_link_options(sluice_warnings INTERFACE -fsanitize=address,undefined)
endif()
