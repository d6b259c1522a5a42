# The public / private split of the C++ headers (cpp/), for `cmake --install`.
#
# Installed under <prefix>/include/ember/ (a user writes `#include <ember/ckks/context.hpp>`):
#   EMBER_API_HEADERS      what a user includes: parameters, context, keys, encoder, encryption and the evaluator,
#                          the circuits built on it (linear transforms, polynomial evaluation, bootstrapping),
#                          serialization, the HEAAN scheme, the trace counters, CPU features and kernel paths,
#                          errors; plus the generated <ember/version.hpp>.
#   EMBER_SUPPORT_HEADERS  included by the API headers (so they are installed too) but not meant to be included on
#                          their own: the ring layer (Poly, RingContext, key-switching blocks), the backend
#                          interface, modular arithmetic, NTT tables, RNS bases, sampling, HEAAN's BigInt and CRT.
# Everything else under cpp/ is private and stays in the source tree: the per-ISA kernel helpers
# (math/*_util.hpp, vec_simd.hpp, ntt_simd.hpp, ntt_schedule.hpp, ntt_scalar_impl.hpp), the element-wise kernels
# (vec_ops.hpp), prime generation, the CPU backend's thread pool and block cache, the peak-rate kernels. A new
# header is private until it is listed here.
#
# ember_check_public_headers() fails the configuration when an installed header includes a header that is not
# installed (the installed tree would not compile), so the split cannot rot silently.

set(EMBER_API_HEADERS
  ckks/params.hpp ckks/context.hpp ckks/ciphertext.hpp ckks/encoder.hpp ckks/keys.hpp ckks/evaluator.hpp
  ckks/symbolic.hpp ckks/op_record.hpp
  circuits/lintrans.hpp circuits/polyeval.hpp circuits/rotsum.hpp circuits/dft.hpp circuits/bootstrap.hpp
  circuits/bootstrap_keys_io.hpp
  io/serialize.hpp
  heaan/params.hpp heaan/context.hpp heaan/keys.hpp
  trace/trace.hpp
  math/cpu_features.hpp math/kernel_paths.hpp
  util/errors.hpp)

set(EMBER_SUPPORT_HEADERS
  ring/poly.hpp ring/ring_context.hpp ring/key_switch.hpp
  backend/backend.hpp
  math/modarith.hpp math/ntt.hpp math/rns.hpp math/sampling.hpp
  heaan/big_poly.hpp heaan/bigint.hpp heaan/crt.hpp)

function(ember_check_public_headers src_dir)
  set(installed ${EMBER_API_HEADERS} ${EMBER_SUPPORT_HEADERS})
  foreach(h IN LISTS installed)
    if(NOT EXISTS "${src_dir}/${h}")
      message(FATAL_ERROR "cmake/EmberHeaders.cmake lists ${h}, which is not in ${src_dir}")
    endif()
    file(STRINGS "${src_dir}/${h}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" inc "${line}")
      if(NOT inc IN_LIST installed)
        message(FATAL_ERROR "public header ${h} includes \"${inc}\", which is private (not installed): list it in "
                            "EMBER_SUPPORT_HEADERS of cmake/EmberHeaders.cmake or drop the include")
      endif()
    endforeach()
  endforeach()
endfunction()

# Installs each header at include/ember/<its path under cpp/>.
function(ember_install_headers src_dir)
  foreach(h IN LISTS EMBER_API_HEADERS EMBER_SUPPORT_HEADERS)
    get_filename_component(dir "${h}" DIRECTORY)
    install(FILES "${src_dir}/${h}" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/ember/${dir}" COMPONENT ember_dev)
  endforeach()
endfunction()
