# bpf_skeleton(NAME SOURCE [HEADERS...])
# Compiles SOURCE with clang -target bpf into NAME.bpf.o and generates NAME.skel.h with
# bpftool, both in the build tree. Defines the INTERFACE target NAME_skel that carries the
# include path of the skeleton; link it to get the header.
find_program(BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)

function(bpf_skeleton name src)
  set(obj "${CMAKE_CURRENT_BINARY_DIR}/${name}.bpf.o")
  set(skel "${CMAKE_CURRENT_BINARY_DIR}/${name}.skel.h")
  add_custom_command(
    OUTPUT "${obj}"
    COMMAND "${BPF_CLANG}" -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86
            -I/usr/include/x86_64-linux-gnu -I "${CMAKE_CURRENT_SOURCE_DIR}"
            -Wall -Werror -c "${CMAKE_CURRENT_SOURCE_DIR}/${src}" -o "${obj}"
    DEPENDS "${src}" ${ARGN}
    COMMENT "BPF ${src}")
  add_custom_command(
    OUTPUT "${skel}"
    COMMAND "${BPFTOOL}" gen skeleton "${obj}" name "${name}" > "${skel}"
    DEPENDS "${obj}"
    COMMENT "skeleton ${name}.skel.h")
  add_custom_target(${name}_skel_gen DEPENDS "${skel}")
  add_library(${name}_skel INTERFACE)
  target_include_directories(${name}_skel INTERFACE "${CMAKE_CURRENT_BINARY_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}")
  add_dependencies(${name}_skel ${name}_skel_gen)
endfunction()
