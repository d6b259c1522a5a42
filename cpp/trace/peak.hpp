// The machine's measured peaks, the yardsticks of the trace counters' rates (`ember bench heaan-mul --breakdown`
// reports each function's modular multiplications, word products and bytes per second as fractions of these, as
// paper 002's Table II reports OPS against the machine's peak OPS):
//   * modular multiplications per second of the element-wise product vec_mul (math/vec_ops.hpp, on the path it
//     dispatches to for the prime), two operands of mul_words words each (L1-resident), the product written over
//     the first, many repetitions;
//   * word products per second of a scalar 64 x 64 -> 128-bit multiply-accumulate into two-word sums (the inner
//     product of the scalar CRT / iCRT kernels, four independent sums), on L1-resident operands;
//   * lane products per second of the AVX2 multiply-accumulate (vpmuludq into 64-bit lanes, four independent
//     vector sums), where the CPU has AVX2: the word products of the AVX2 CRT / iCRT kernels;
//   * copy bandwidth: memcpy of a copy_mib MiB buffer into another, split over the threads, counted as bytes read
//     plus bytes written per second.
// Each is measured on one thread and on `threads` threads together (every thread the same work, timed from a
// common start to the last finish) and is the best of a few trials (the machine may be shared).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ember::trace {

struct MachinePeak {
    int threads = 1;
    std::uint64_t prime = 0;               // modulus of the vec_mul measurement
    std::string mul_path;                  // the path vec_mul took for it ("ifma", "avx512", "avx2", "scalar")
    std::size_t mul_words = 0;             // words per operand
    double mulmod_per_s_thread = 0;        // vec_mul, one thread
    double mulmod_per_s = 0;               // vec_mul, `threads` threads together
    double word_mul_per_s_thread = 0;      // scalar multiply-accumulate, one thread
    double word_mul_per_s = 0;             // `threads` threads together
    std::string lane_mul_path;             // "avx2" where the CPU has it (the AVX2 CRT / iCRT products), else ""
    double lane_mul_per_s_thread = 0;      // 32 x 32 -> 64-bit lane multiply-accumulate (vpmuludq), one thread
    double lane_mul_per_s = 0;             // `threads` threads together
    std::size_t copy_bytes = 0;            // bytes of the copied buffer
    double copy_bytes_per_s_thread = 0;    // (read + written) / s, one thread
    double copy_bytes_per_s = 0;           // (read + written) / s, `threads` threads together
    double seconds = 0;                    // wall time the measurement took
};

/// Measures the peaks above (about a second with the defaults). prime: the first NTT prime below 2^prime_bits
/// (2N = 2^17), as HEAAN's basis takes them.
MachinePeak machine_peak(int threads, std::size_t copy_mib = 256, std::size_t mul_words = 1024, int prime_bits = 50);

}  // namespace ember::trace
