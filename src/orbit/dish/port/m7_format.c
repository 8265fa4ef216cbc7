/* m7_format.c -- a formatter with vsnprintf's contract and no heap, for
 * the board (m7_libc.c): the conversions the runtime's messages use,
 * nothing more. The output is cut to cap - 1 characters and terminated;
 * the return is the length the whole output would have had. */
#include "m7_port.h"

/* The output so far: n counts every character, written or not. */
typedef struct out {
    char *buf;
    size_t cap, n;
} out;

/* One conversion's flags, width and length (0 int, 1 long, 2 long long,
 * 3 size_t). */
typedef struct spec {
    int left;
    char pad;
    unsigned width;
    int length;
} spec;

static void put(out *o, char ch) {
    if (o->n + 1 < o->cap)
        o->buf[o->n] = ch;
    o->n++;
}

static void pad_to(out *o, unsigned width, size_t len, char pad) {
    for (size_t k = len; k < width; k++)
        put(o, pad);
}

static void put_text(out *o, const char *s, const spec *sp) {
    size_t len = 0;
    while (s[len])
        len++;
    if (!sp->left)
        pad_to(o, sp->width, len, ' ');
    for (size_t k = 0; k < len; k++)
        put(o, s[k]);
    if (sp->left)
        pad_to(o, sp->width, len, ' ');
}

/* mag in base, after a '-' when neg; zeros pad between sign and digits. */
static void put_number(out *o, unsigned long long mag, int neg, unsigned base,
                       const spec *sp) {
    char digit[24];
    size_t n = 0;
    do {
        digit[n++] = "0123456789abcdef"[mag % base];
        mag /= base;
    } while (mag);
    size_t len = n + (size_t)neg;
    if (neg && sp->pad == '0')
        put(o, '-');
    if (!sp->left)
        pad_to(o, sp->width, len, sp->pad);
    if (neg && sp->pad != '0')
        put(o, '-');
    while (n)
        put(o, digit[--n]);
    if (sp->left)
        pad_to(o, sp->width, len, ' ');
}

static long long signed_arg(va_list *ap, int length) {
    switch (length) {
    case 1: return va_arg(*ap, long);
    case 2: return va_arg(*ap, long long);
    default: return va_arg(*ap, int);
    }
}

static unsigned long long unsigned_arg(va_list *ap, int length) {
    switch (length) {
    case 1: return va_arg(*ap, unsigned long);
    case 2: return va_arg(*ap, unsigned long long);
    case 3: return va_arg(*ap, size_t);
    default: return va_arg(*ap, unsigned);
    }
}

/* Flags, width and length from *f on; *f left at the conversion. */
static spec read_spec(const char **f) {
    spec sp = {0, ' ', 0, 0};
    for (; **f == '-' || **f == '0'; (*f)++) {
        if (**f == '-')
            sp.left = 1;
        else
            sp.pad = '0';
    }
    for (; **f >= '0' && **f <= '9'; (*f)++)
        sp.width = sp.width * 10 + (unsigned)(**f - '0');
    if (**f == 'z')
        sp.length = 3, (*f)++;
    for (; **f == 'l' && sp.length < 2; (*f)++)
        sp.length++;
    if (sp.left)
        sp.pad = ' ';
    return sp;
}

/* The conversion c with its spec; an unknown one is written as it is. */
static void convert(out *o, char c, const spec *sp, va_list *ap) {
    long long v;
    char ch[2] = {0, 0};
    switch (c) {
    case 'd': case 'i':
        v = signed_arg(ap, sp->length);
        put_number(o, v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v, v < 0,
                   10, sp);
        return;
    case 'u': put_number(o, unsigned_arg(ap, sp->length), 0, 10, sp); return;
    case 'x': put_number(o, unsigned_arg(ap, sp->length), 0, 16, sp); return;
    case 's': put_text(o, va_arg(*ap, const char *), sp); return;
    case 'c': ch[0] = (char)va_arg(*ap, int); put_text(o, ch, sp); return;
    case '%': put(o, '%'); return;
    }
    put(o, '%');
    put(o, c);
}

int m7_vformat(char *buf, size_t cap, const char *fmt, va_list ap) {
    out o = {buf, cap, 0};
    va_list args; /* a copy, so that its address can be passed on */
    va_copy(args, ap);
    for (const char *f = fmt; *f; f++) {
        if (*f != '%') {
            put(&o, *f);
            continue;
        }
        f++;
        spec sp = read_spec(&f);
        if (!*f)
            break;
        convert(&o, *f, &sp, &args);
    }
    va_end(args);
    if (cap)
        buf[o.n < cap ? o.n : cap - 1] = 0;
    return (int)o.n;
}
