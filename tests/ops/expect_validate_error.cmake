# Runs `sluiced validate` on one tests/ops pipeline that must be refused at validate (not at
# create, not at run) and checks the message: the pipeline's line
#   # sluiced validate: LINE:COL: error: node 'ID': key 'K': PROBLEM
# must appear in stderr after the file name, and the exit status must be 2.
#   cmake -DSLUICED=... -DPIPELINE=... -DPLUGIN_DIR=... -P expect_validate_error.cmake
file(STRINGS ${PIPELINE} expected REGEX "^# sluiced validate: ")
if(NOT expected)
  message(FATAL_ERROR "${PIPELINE} has no '# sluiced validate: ' line")
endif()
string(REGEX REPLACE "^# sluiced validate: " "" expected "${expected}")
string(REPLACE "\\;" ";" expected "${expected}")  # file(STRINGS) escapes list separators
get_filename_component(file ${PIPELINE} NAME)
execute_process(COMMAND ${SLUICED} validate ${PIPELINE} --plugin-dir ${PLUGIN_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "expected exit 2 from sluiced validate, got ${rc}\n${out}${err}")
endif()
string(FIND "${err}" "${file}:${expected}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "expected in stderr:\n  ${file}:${expected}\ngot:\n${err}")
endif()
message(STATUS "refused at validate as expected: ${file}:${expected}")
