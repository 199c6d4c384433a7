# Runs a command and passes only when it exits 0 AND its stdout matches EXPECT
# (a CMake regex). ctest's PASS_REGULAR_EXPRESSION alone ignores the exit
# status: a run that prints the text and then aborts under ASan would pass.
#
#   cmake -DEXPECT=<regex> [-DWORKDIR=<dir>] -P expect_output.cmake -- CMD [ARGS...]
set(cmd)
set(seen_sep FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(seen_sep)
    # A ';' inside an argument would split it into two list elements.
    string(REPLACE ";" "\\;" arg "${CMAKE_ARGV${i}}")
    list(APPEND cmd "${arg}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(seen_sep TRUE)
  endif()
endforeach()
if(NOT cmd)
  message(FATAL_ERROR "expect_output.cmake: no command after --")
endif()
if(NOT WORKDIR)
  set(WORKDIR .)
endif()
execute_process(COMMAND ${cmd} WORKING_DIRECTORY ${WORKDIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(err)
  message("stderr: ${err}")
endif()
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "exit status ${rc} (expected 0): ${cmd}")
endif()
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "output does not match '${EXPECT}'")
endif()
