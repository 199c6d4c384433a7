# A program outside seam's tree, built against an installed seam (docs/library.md):
# `cmake --install` of the build into a scratch prefix, then tests/install/ configured with
# find_package(seam), built and run, and examples/simple_generate.cpp compiled once more with
# nothing but `pkg-config --cflags --libs seam`. Each program must exit 0 with its output.
#
#   cmake -DBUILD=<seam build> -DWORK=<scratch> -DSOURCE=<tests/install> -DEXAMPLES=<examples>
#         -DMODEL=<stories260K.gguf> -DCXX=<compiler> -DGENERATOR=<generator> -P install_consumer.cmake

function(run_checked what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${what} failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

# Exit 0 and stdout matching `regex`: expect_output.cmake's check, run as its own script.
function(expect_output what regex)
  run_checked("${what}" ${CMAKE_COMMAND} "-DEXPECT=${regex}"
              -P ${CMAKE_CURRENT_LIST_DIR}/expect_output.cmake -- ${ARGN})
  message("${what}: ${err}")  # expect_output.cmake shows the program's output on stderr
endfunction()

set(greedy_story "^Once upon a time, there was a little girl named Lily")
file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
run_checked("install" ${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix})

# find_package(seam) and seam::seam.
run_checked("configure the consumer" ${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/build -G ${GENERATOR}
            -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
            -DSEAM_EXAMPLES_DIR=${EXAMPLES})
run_checked("build the consumer" ${CMAKE_COMMAND} --build ${WORK}/build)
expect_output("simple_generate (find_package)" "${greedy_story}" ${WORK}/build/simple_generate ${MODEL})
expect_output("serve_health (find_package)" "GET /health: HTTP/1.1 200" ${WORK}/build/serve_health ${MODEL})

# pkg-config: the flags seam.pc gives are all a compiler needs.
file(GLOB pc_file ${prefix}/*/pkgconfig/seam.pc ${prefix}/*/*/pkgconfig/seam.pc)
if(NOT pc_file)
  message(FATAL_ERROR "no seam.pc under ${prefix}")
endif()
get_filename_component(pc_dir ${pc_file} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
run_checked("pkg-config" pkg-config --cflags --libs seam)
separate_arguments(pc_flags UNIX_COMMAND "${out}")
run_checked("compile with pkg-config" ${CXX} -O2 ${EXAMPLES}/simple_generate.cpp ${pc_flags}
            -o ${WORK}/simple_generate_pc)
expect_output("simple_generate (pkg-config)" "${greedy_story}" ${WORK}/simple_generate_pc ${MODEL})
