# bpf_skeleton(NAME SOURCE [TARGET_ARCH ARCH] [DEPENDS FILES...])
# Compiles SOURCE with clang -target bpf into NAME.bpf.o and generates NAME.skel.h with
# bpftool, both in the build tree. Defines the INTERFACE target NAME_skel that carries the
# include path of the skeleton; link it to get the header.
#
# TARGET_ARCH is the kernel architecture the programs are for, as libbpf's bpf_tracing.h
# spells it (x86, arm64, ...): it becomes -D__TARGET_ARCH_<ARCH>. It defaults to the one of
# CMAKE_SYSTEM_PROCESSOR. clang writes a depfile (-MD -MF), so that a change to any header
# SOURCE includes rebuilds the object; DEPENDS adds files that are not included.
find_program(BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)

# The kernel architecture name (as in __TARGET_ARCH_<name>) of a CMAKE_SYSTEM_PROCESSOR value.
function(bpf_target_arch processor out)
  string(TOLOWER "${processor}" p)
  if(p MATCHES "^(x86_64|amd64|i.86|x86)$")
    set(arch x86)
  elseif(p MATCHES "^(aarch64|arm64)")
    set(arch arm64)
  elseif(p MATCHES "^arm")
    set(arch arm)
  elseif(p MATCHES "^riscv")
    set(arch riscv)
  elseif(p MATCHES "^(ppc|powerpc)")
    set(arch powerpc)
  elseif(p MATCHES "^s390")
    set(arch s390)
  elseif(p MATCHES "^loongarch")
    set(arch loongarch)
  elseif(p MATCHES "^mips")
    set(arch mips)
  else()
    message(FATAL_ERROR "bpf_skeleton: no BPF target architecture for processor '${processor}'; pass TARGET_ARCH")
  endif()
  set(${out} ${arch} PARENT_SCOPE)
endfunction()

function(bpf_skeleton name src)
  cmake_parse_arguments(PARSE_ARGV 2 BPF "" "TARGET_ARCH" "DEPENDS")
  if(BPF_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "bpf_skeleton: unknown arguments ${BPF_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT BPF_TARGET_ARCH)
    bpf_target_arch("${CMAKE_SYSTEM_PROCESSOR}" BPF_TARGET_ARCH)
  endif()
  # <asm/types.h> and the rest of the UAPI headers that are per architecture (multiarch).
  set(arch_includes)
  if(CMAKE_LIBRARY_ARCHITECTURE)
    list(APPEND arch_includes -I "/usr/include/${CMAKE_LIBRARY_ARCHITECTURE}")
  endif()
  set(obj "${CMAKE_CURRENT_BINARY_DIR}/${name}.bpf.o")
  set(dep "${CMAKE_CURRENT_BINARY_DIR}/${name}.bpf.d")
  set(skel "${CMAKE_CURRENT_BINARY_DIR}/${name}.skel.h")
  add_custom_command(
    OUTPUT "${obj}"
    COMMAND "${BPF_CLANG}" -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_${BPF_TARGET_ARCH}
            ${arch_includes} -I "${CMAKE_CURRENT_SOURCE_DIR}"
            -Wall -Werror -MD -MF "${dep}" -MT "${obj}"
            -c "${CMAKE_CURRENT_SOURCE_DIR}/${src}" -o "${obj}"
    DEPENDS "${src}" ${BPF_DEPENDS}
    DEPFILE "${dep}"
    COMMENT "BPF ${src} (${BPF_TARGET_ARCH})")
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
