# The fork example against single-sequence runs: each branch of
# fork_sequences (a shared prefix decoded once, copy_seq, then both branches in
# one batch per step) must print what simple_generate prints, greedily, for
# that branch's whole prompt on a session of its own. A fork that shared the
# wrong cells, or a batch that mixed the sequences up, changes the text.
#
#   cmake -DFORK=<fork_sequences> -DSINGLE=<simple_generate> -DMODEL=<gguf> -P check_fork.cmake
function(run_ok out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "exit status ${rc} (expected 0): ${ARGN}\n${out}\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

run_ok(fork_out ${FORK} ${MODEL})
message("${fork_out}")
set(words " little" " big")
foreach(b 0 1)
  list(GET words ${b} word)
  string(REGEX MATCH "branch ${b}: ([^\n]*)" line "${fork_out}")
  if(NOT line)
    message(FATAL_ERROR "no 'branch ${b}:' line in the fork example's output")
  endif()
  set(branch "${CMAKE_MATCH_1}")
  run_ok(single_out ${SINGLE} ${MODEL} "Once upon a time, there was a${word}")
  message("single sequence: ${single_out}")
  # The branch decodes 24 tokens after its first word, simple_generate 40:
  # the branch's text is the start of the single run's.
  string(LENGTH "${branch}" n)
  string(SUBSTRING "${single_out}" 0 ${n} single_head)
  if(NOT single_head STREQUAL branch)
    message(FATAL_ERROR "branch ${b} differs from its single-sequence run:\n"
                        "  fork:   '${branch}'\n  single: '${single_head}'")
  endif()
endforeach()
