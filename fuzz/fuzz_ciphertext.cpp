// libFuzzer target: ciphertext_from_bytes, then the accepted ciphertext is written back, read again and used
// (fuzz_common.hpp).
#include "fuzz_common.hpp"

using namespace ember;

EMBER_FUZZ_READER(Ciphertext, ciphertext_from_bytes, to_bytes) {
    fuzz::use_ciphertext(w, obj);
}
