/* dish.h -- what the DISH compiler, verifier, VM and disassembler agree
 * on: the limits of the co-processor's runtime, the opcodes with their
 * operand sizes and stack effects, and the bytecode image's layout
 * (docs/orbit.md, "DISH"). Nothing here depends on the platform. */
#ifndef DISH_H
#define DISH_H

#include <stddef.h>
#include <stdint.h>

/* ---- runtime limits: the verifier refuses what exceeds them ---- */
#define DISH_VERSION 1
#define DISH_SLOTS 50          /* procedure slots on board, as the flight code */
#define DISH_MAX_RUNS 16       /* concurrent runs, as the flight code's tasks */
#define DISH_ARENA_WORDS 256   /* 1 KiB per run: frames, counters, stacks */
#define DISH_MAX_LOCALS 32     /* per procedure, arguments included */
#define DISH_MAX_COUNTERS 8    /* loop counters per procedure */
#define DISH_MAX_STACK 32      /* operand stack per frame */
#define DISH_MAX_DEPTH 8       /* frames of one run: the root and 7 calls */
#define DISH_MAX_CODE 512      /* code bytes per procedure */
#define DISH_MAX_PROCS 16      /* procedures per image */
#define DISH_MAX_IMAGE 4096    /* bytes per image */
#define DISH_MAX_LOOP 10000    /* iterations of one counted loop */
#define DISH_MAX_WAIT_S (7 * 86400) /* longest sleep or wait timeout */
/* Instructions one run may execute, each wait's condition counted once
 * (its re-checks, one per event, aside): the verifier's static bound
 * (dish_bound.c). 10 million is 5,000 of the scheduler's DISH_BUDGET
 * slices, about 10 s of interpretation on a slow co-processor (a
 * Cortex-M7 at 100 MHz and some 100 cycles an instruction, 1 million a
 * second), against a 94-minute orbit; a procedure only waits and
 * commands, so one needing more is a mistake: two nested loops of 10,000
 * already come to 100 million. */
#define DISH_MAX_STEPS 10000000
#define DISH_NODES 64          /* parameter nodes 0..63 */
#define DISH_PARAMS 128        /* parameter ids 0..127 per node */
#define DISH_PIPELINES 6       /* DIPP's pipeline slots 1..6 */
#define DISH_PACKET 200        /* uplink chunk: an image travels in these */
#define DISH_FIX_ONE 65536     /* fixed point is Q16.16 */

/* ---- the image: little-endian, header then procedure table then code ----
 *  0  4  magic "DISH"
 *  4  1  version (DISH_VERSION)
 *  5  1  number of procedures, 1..DISH_MAX_PROCS
 *  6  2  code bytes after the table
 *  8  4  CRC-32 (IEEE) of every byte after these 12
 * 12  8n per procedure: slot, nargs, nlocals, ncounters (1 byte each),
 *        code offset, code length (2 bytes each; offset from the code start)
 * A procedure's stack depth, call depth and arena need are not carried:
 * the verifier derives them, on the ground and again on board. */
#define DISH_HDR 12
#define DISH_PROC_REC 8

typedef struct dish_proc {
    uint8_t slot, nargs, nlocals, ncounters;
    uint16_t off, len;
} dish_proc;

/* ---- events a wait can be woken by (a WAIT's mask) ---- */
#define DISH_EV_TIME 1  /* the condition reads the clock: polled */
#define DISH_EV_GNSS 2  /* a new GNSS fix */
#define DISH_EV_PARAM 4 /* a parameter changed */
#define DISH_EV_PIPE 8  /* a pipeline finished */

/* Pipeline status as pipe(P) reads it. */
#define DISH_PIPE_RUNNING 0
#define DISH_PIPE_OK 1
#define DISH_PIPE_FAILED (-1)
#define DISH_PIPE_IDLE 2

/* ---- opcodes: X(name, operand bytes, pops, pushes, flags) ----
 * Operands: u8 local / counter / node / param / slot; u16 code
 * offsets (absolute within the procedure); i8 or i32 immediates. CALL
 * pops its nargs operand. A pipeline number is a value, checked when
 * used: outside 1..DISH_PIPELINES it starts nothing and reads idle. F_PURE: may appear in a wait's condition. */
#define DISH_F_PURE 1
#define DISH_F_JUMP 2
#define DISH_OPS(X)                                                       \
    X(PUSH8, 1, 0, 1, DISH_F_PURE)   /* i8 */                             \
    X(PUSH32, 4, 0, 1, DISH_F_PURE)  /* i32 */                            \
    X(LOAD, 1, 0, 1, DISH_F_PURE)    /* local */                          \
    X(STORE, 1, 1, 0, 0)             /* local */                          \
    X(POP, 0, 1, 0, 0)                                                    \
    X(ADD, 0, 2, 1, DISH_F_PURE)                                          \
    X(SUB, 0, 2, 1, DISH_F_PURE)                                          \
    X(MUL, 0, 2, 1, DISH_F_PURE)                                          \
    X(DIV, 0, 2, 1, DISH_F_PURE)                                          \
    X(MOD, 0, 2, 1, DISH_F_PURE)                                          \
    X(FMUL, 0, 2, 1, DISH_F_PURE)                                         \
    X(FDIV, 0, 2, 1, DISH_F_PURE)                                         \
    X(EQ, 0, 2, 1, DISH_F_PURE)                                           \
    X(NE, 0, 2, 1, DISH_F_PURE)                                           \
    X(LT, 0, 2, 1, DISH_F_PURE)                                           \
    X(LE, 0, 2, 1, DISH_F_PURE)                                           \
    X(AND, 0, 2, 1, DISH_F_PURE)                                          \
    X(OR, 0, 2, 1, DISH_F_PURE)                                           \
    X(NEG, 0, 1, 1, DISH_F_PURE)                                          \
    X(NOT, 0, 1, 1, DISH_F_PURE)                                          \
    X(ITOF, 0, 1, 1, DISH_F_PURE)                                         \
    X(FTOI, 0, 1, 1, DISH_F_PURE)                                         \
    X(JMP, 2, 0, 0, DISH_F_JUMP)     /* target */                         \
    X(JZ, 2, 1, 0, DISH_F_JUMP)      /* target, taken when zero */        \
    X(INIT, 3, 0, 0, 0)              /* counter, u16 bound */             \
    X(TEST, 3, 0, 0, DISH_F_JUMP)    /* counter, exit target */           \
    X(NEXT, 2, 0, 0, DISH_F_JUMP)    /* the loop's TEST (backward) */     \
    X(CTR, 1, 0, 1, DISH_F_PURE)     /* counter: iterations left */       \
    X(WSET, 0, 1, 0, 0)              /* timeout s: the wait's deadline */ \
    X(WAIT, 5, 1, 0, DISH_F_JUMP)    /* cond start, else, event mask */   \
    X(SLEEP, 0, 1, 0, 0)             /* seconds from now */               \
    X(SLEEPU, 0, 1, 0, 0)            /* until the clock reads this */     \
    X(CALL, 2, 0, 1, 0)              /* slot, nargs */                    \
    X(RET, 0, 1, 0, 0)                                                    \
    X(NOW, 0, 0, 1, DISH_F_PURE)                                          \
    X(HASFIX, 0, 0, 1, DISH_F_PURE)                                       \
    X(LAT, 0, 0, 1, DISH_F_PURE)                                          \
    X(LON, 0, 0, 1, DISH_F_PURE)                                          \
    X(INBOX, 0, 4, 1, DISH_F_PURE)   /* lat0 lat1 lon0 lon1 */            \
    X(PGET, 2, 0, 1, DISH_F_PURE)    /* node, param */                    \
    X(PSET, 2, 1, 0, 0)              /* node, param */                    \
    X(PSTART, 0, 1, 1, 0)            /* pipeline: 0 started, -1 refused */\
    X(PSTAT, 0, 1, 1, DISH_F_PURE)   /* pipeline: its DISH_PIPE_* */      \
    X(WAKE, 0, 0, 0, 0)                                                   \
    X(SUSPEND, 0, 0, 0, 0)                                                \
    X(TLM, 0, 2, 0, 0)               /* code, value */

enum {
#define DISH_ENUM(n, b, po, pu, f) DISH_OP_##n,
    DISH_OPS(DISH_ENUM)
#undef DISH_ENUM
    DISH_NOPS
};

typedef struct dish_opinfo {
    const char *name;
    uint8_t operand_bytes, pops, pushes, flags;
} dish_opinfo;

extern const dish_opinfo dish_ops[DISH_NOPS];

/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32). */
uint32_t dish_crc32(const uint8_t *p, size_t n);
uint16_t dish_get16(const uint8_t *p);
int32_t dish_get32(const uint8_t *p);
void dish_put16(uint8_t *p, uint16_t v);
void dish_put32(uint8_t *p, uint32_t v);

/* Writes Q16.16 value v as a decimal into buf (up to 5 places). */
void dish_fix_str(int32_t v, char *buf, size_t cap);

#endif
