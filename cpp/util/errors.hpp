// The one way Ember reports bad input, and the one way it prints a scale in a message.
#pragma once

#include <string>
#include <string_view>

namespace ember {

/// Throws std::invalid_argument("<where>: <why>") (ValueError in Python). `where` names the operation as
/// the user called it ("cannot mul", "bootstrapping", "ciphertext_from_bytes"), `why` the problem and,
/// where there is one, the bound.
[[noreturn]] void fail(std::string_view where, std::string_view why);
/// fail("cannot <op>", why): the form of every evaluator and circuit error ("cannot mul: no level left").
[[noreturn]] inline void cannot(std::string_view op, std::string_view why) { fail("cannot " + std::string(op), why); }

/// A scale for messages: "2^40" for a power of two, else log2 with enough digits that two scales that
/// differ print differently ("2^40.0000000002").
std::string scale_str(double scale);

}  // namespace ember
