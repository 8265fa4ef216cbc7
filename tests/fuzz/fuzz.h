/* fuzz.h -- what a fuzz target (one input format's reader under attack)
 * gives the driver, and what the driver gives it.
 *
 * A target defines LLVMFuzzerTestOneInput(), libFuzzer's entry, and
 * fuzz_tokens: bytes its format is made of, which the driver's edits
 * insert. It reports a fault by aborting (FUZZ_CHECK): a crash, a
 * sanitizer report or a hang is one too. fuzz_driver.c runs it in every
 * build; with clang and -DAEGIS_LIBFUZZER=ON, libFuzzer runs it instead
 * (docs/development.md, "Fuzzing").
 */
#ifndef AEGIS_FUZZ_H
#define AEGIS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The target's alphabet: its format's punctuation and keywords' bytes,
 * fuzz_ntokens of them (NUL may be one). A target defines both with
 * FUZZ_TOKENS("..."). */
extern const char fuzz_tokens[];
extern const size_t fuzz_ntokens;
#define FUZZ_TOKENS(text)                                                  \
    const char fuzz_tokens[] = text;                                       \
    const size_t fuzz_ntokens = sizeof(text) - 1

/* Aborts, saying which rule the input broke, when ok is false. */
#define FUZZ_CHECK(ok, what)                                               \
    do {                                                                   \
        if (!(ok)) {                                                       \
            fprintf(stderr, "%s:%d: the input broke a rule: %s\n",        \
                    __FILE__, __LINE__, what);                             \
            abort();                                                       \
        }                                                                  \
    } while (0)

/* Writes data to a file of this process's own (the readers under test
 * take paths), its name ending in suffix, into path (at least 128
 * bytes). Aborts when it cannot: that is the machine's fault, not the
 * input's. */
void fuzz_write_file(const uint8_t *data, size_t size, const char *suffix,
                     char *path);

#endif
