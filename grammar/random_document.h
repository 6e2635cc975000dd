// Random documents of a compiled grammar, drawn by walking the matcher one byte at a time: at
// each step a random byte among those it accepts. A generator that knows nothing of the schema,
// so tests and the coverage bench (bench/grammar/schema_coverage.py) can have every document
// judged by an independent validator: whatever the matcher lets through, it must accept.
#ifndef ARBOR_GRAMMAR_RANDOM_DOCUMENT_H_
#define ARBOR_GRAMMAR_RANDOM_DOCUMENT_H_

#include <optional>
#include <random>
#include <string>

#include "grammar/json_grammar.h"

namespace arbor::grammar {

// A document of `grammar`, or nothing when the walk ran past `max_bytes`. Past `budget` bytes the
// walk prefers bytes that close values (`}`, `]`, a string's quote), then ones that continue a
// key or literal, and opens new values last, so most walks end.
std::optional<std::string> RandomDocument(const JsonGrammar& grammar, std::mt19937_64& rng,
                                          size_t budget = 200, size_t max_bytes = 4000);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_RANDOM_DOCUMENT_H_
