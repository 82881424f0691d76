// AVX-512 VNNI kernels (Cascade Lake and later, Zen 4/5: vpdpwssd on 512 bits; compiled with
// -mavx512f -mavx512bw -mavx512vnni, called only where the CPU and the OS report all three).
#include <immintrin.h>

#include "dot4_kernels.hpp"
#include "dot_kernels.hpp"
#include "simd_avx2.hpp"
#include "simd_avx512.hpp"

namespace qwen3tts::native {
namespace {

// The INT4 kernels' 256-bit steps where a 512-bit one would straddle two groups of 32 (dot4_kernels.hpp).
struct Avx512VnniNarrow : Avx2Base {
    static constexpr int64_t kRowPrefetchBytes = 4096;
    static reg dot(reg acc, reg a, reg b) { return _mm256_dpwssd_epi32(acc, a, b); }
};

struct Avx512Vnni : Avx512Base {
    using Narrow = Avx512VnniNarrow;
    // A decode row as straight-line groups and a decode step's rows in one call (dot_kernels.hpp's
    // straight_row and decode_rows), as the AVX2 set. On Zen 4 the INT8 frame at batch 1 took 0.91 of the
    // general loop's time, the talker step about 0.95. The INT4 rows prefetch 4 KiB ahead (dot4_kernels.hpp),
    // measured as fast as 1 or 2 KiB or faster.
    static constexpr bool kStraightGroups = true;
    static constexpr int64_t kRowPrefetchBytes = 4096;
    static reg dot(reg acc, reg a, reg b) { return _mm512_dpwssd_epi32(acc, a, b); }
};

const KernelSet kAvx512Vnni{"avx512_vnni", Avx512Vnni::kStep, block_dot<Avx512Vnni>, 2, 4,
                            block_dot4<Avx512Vnni>, decode_rows<Avx512Vnni>,
                            decode_rows4<Avx512Vnni>};

}  // namespace

const KernelSet& avx512_vnni_kernels() { return kAvx512Vnni; }

}  // namespace qwen3tts::native
