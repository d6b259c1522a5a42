// The bootstrapping world of fuzz/fuzz_bootstrap_keys.cpp and its seeds: a bootstrappable insecure ring
// (N = 2^6, 4 slots, two CoeffToSlot and SlotToCoeff levels) with a valid key set.
//
// Input format of the target: [what: 1 byte][element: 2 bytes, little endian][bytes of one key file].
// what % 4: 0 relin.key, 1 from_sparse.key, 2 galois-<element>.key, 3 to_sparse-<element % 256>.ct (an
// index past the last part appends one, element >= 256 also drops the parts after it). The key replaces
// its counterpart in the valid set, and the set bootstraps a ciphertext.
#pragma once

#include "circuits/bootstrap.hpp"
#include "fuzz_common.hpp"  // the world's headers (context, memory, vector) and secret_key()

namespace ember::fuzz {

/// 4 slots, two CoeffToSlot and two SlotToCoeff levels, a sparse secret of weight 16 for the encapsulation.
inline BootstrapConfig boot_config() {
    BootstrapConfig c;
    c.slots = 4;
    c.cts_levels = c.stc_levels = 2;
    c.ephemeral_weight = 16;
    return c;
}

struct BootWorld {
    std::shared_ptr<const Context> ctx;
    std::unique_ptr<Bootstrapper> bt;
    std::shared_ptr<SecretKey> sk;
    BootstrapKeys keys;
    Ciphertext ct;  // 4 slots at level 0
    BootWorld() {
        ctx = std::make_shared<Context>(bootstrappable_params(6, 1, 40, boot_config(), 0, 50, 56, /*insecure=*/true), 1);
        bt = std::make_unique<Bootstrapper>(ctx, boot_config());
        sk = secret_key(*ctx);
        keys = bt->gen_keys(*sk);
        std::vector<cplx> z(bt->slots(), cplx(0.25, -0.5));
        ct = ctx->encrypt(ctx->encode(z, ctx->scale_at(0), 0), *sk);
        ct.slots = bt->slots();
    }
};

inline const BootWorld& boot_world() {
    static const BootWorld w;
    return w;
}

}  // namespace ember::fuzz
