/* The stack walk of call sites deeper than one frame (unwind.h).
 *
 * backtrace() costs microseconds per call: glibc's unwinder finds and
 * interprets each frame's DWARF call-frame information (CFI) anew.  The
 * default walk here (MPILENS_CALLSITE_UNWIND=cfi) reads the same tables
 * (.eh_frame, found through the module's .eh_frame_hdr search table), but
 * once per return address: the rule it gives for that address (x86-64: the
 * frame's CFA is %rsp or %rbp plus a constant, the return address is at
 * CFA-8, %rbp saved at CFA+k or not saved) is kept in a cache, and each later
 * walk applies cached rules, a few loads per frame.  It is right for code
 * built with or without frame pointers, as long as the code has unwind
 * tables (GCC's and Clang's default on x86-64, C and Fortran alike).
 *
 * The walk starts at the wrapper: mpilens is built with frame pointers, so
 * the frame whose saved return address is ra is found by following them from
 * here; its frame record gives the caller's %rsp (just above it) and %rbp
 * (saved in it).  Then, per frame, checks: the return address lies in an
 * executable segment of a module loaded at MPI_Init and follows a call
 * instruction; each CFA lies in this thread's stack, above the previous one.
 * A frame whose rule cannot be used (no unwind table, a CFA computed by a
 * DWARF expression, a signal frame, a module loaded later) or a failed check
 * returns -1, and the caller uses backtrace() for that call.
 *
 * The cache is shared by all threads: an entry is written once, under a lock
 * taken with trylock (a wrapper called in a signal handler while another
 * holds it computes the rule without caching it), and published by a release
 * store of its key; readers take no lock.  Rules of modules unloaded later
 * (dlclose) stay in the cache: a module loaded at the same address afterwards
 * fails the segment check first (segments are those of MPI_Init).
 *
 * MPILENS_CALLSITE_UNWIND=fp follows the saved frame pointers instead: right
 * only when every frame has one (a function without one between two with one
 * is skipped unseen); kept for comparison (docs/runtime.md). */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ml.h"
#include "unwind.h"

#define ML_NXRANGE 512
#define ML_UW_CACHE 8192 /* rules cached (a power of two): 16 B each */
#define ML_UW_PROBE 16

typedef struct {
    uintptr_t lo, hi;
    const uint8_t *ehdr; /* the module's .eh_frame_hdr, NULL: none */
    int internal;        /* an MPI library or mpilens */
} ml_xr_t;

/* One return address's rule.  flags: ML_UWF_RA (a return address: in a
 * segment, after a call), ML_UWF_RULE (cfa/rbp usable), ML_UWF_INTERNAL. */
enum { ML_UWF_RA = 1, ML_UWF_RULE = 2, ML_UWF_INTERNAL = 4, ML_UWF_CFA_RBP = 8, ML_UWF_END = 16 };
typedef struct {
    uintptr_t pc;    /* key, 0 empty; stored last (release) */
    int32_t cfa_off; /* CFA = (CFA_RBP ? %rbp : %rsp) + cfa_off */
    int16_t rbp_off; /* %rbp saved at CFA + rbp_off; 0: not saved */
    uint16_t flags;
} ml_rule_t;

/* This file's state: the segments of MPI_Init (read without a lock after
 * ml_uw_init), the shared rule cache and its figures. */
static struct {
    ml_xr_t xr[ML_NXRANGE]; /* executable segments of every module, sorted by address */
    int nxr;
    int (*is_internal)(const char *path);
    pthread_mutex_t lock;   /* inserting into the cache (trylock) */
    uint64_t nrules, fallbacks;
    ml_rule_t cache[ML_UW_CACHE];
} U = {.lock = PTHREAD_MUTEX_INITIALIZER};

static ML_TLS struct { uintptr_t lo, hi; } ml_stk; /* this thread's stack (hi 0: not looked up yet) */

/* ---- the segments ---- */

static int ml_xr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    const uint8_t *ehdr = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
            ehdr = (const uint8_t *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    int internal = info->dlpi_name && *info->dlpi_name && U.is_internal(info->dlpi_name);
    for (int i = 0; i < info->dlpi_phnum && U.nxr < ML_NXRANGE; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        ml_xr_t *x = &U.xr[U.nxr++];
        x->lo = info->dlpi_addr + ph->p_vaddr;
        x->hi = x->lo + ph->p_memsz;
        x->ehdr = ehdr;
        x->internal = internal;
    }
    return 0;
}

static int ml_xr_cmp(const void *a, const void *b)
{
    uintptr_t x = ((const ml_xr_t *)a)->lo, y = ((const ml_xr_t *)b)->lo;
    return x < y ? -1 : x > y;
}

void ml_uw_init(int (*is_internal)(const char *path))
{
    U.is_internal = is_internal;
    U.nxr = 0;
    dl_iterate_phdr(ml_xr_cb, NULL);
    qsort(U.xr, (size_t)U.nxr, sizeof *U.xr, ml_xr_cmp);
}

void ml_uw_stats(uint64_t *rules, uint64_t *fallbacks)
{
    *rules = __atomic_load_n(&U.nrules, __ATOMIC_RELAXED);
    *fallbacks = __atomic_load_n(&U.fallbacks, __ATOMIC_RELAXED);
}

void ml_uw_reset(void) { __atomic_store_n(&U.fallbacks, 0, __ATOMIC_RELAXED); }

/* pc is in executable code, and the instruction before it is a call
 * (x86-64: E8 rel32, or FF /2 of 2 to 7 bytes): its segment, else NULL. */
static const ml_xr_t *ml_return_address(uintptr_t pc)
{
    int lo = 0, hi = U.nxr - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (pc < U.xr[mid].lo) hi = mid - 1;
        else if (pc >= U.xr[mid].hi) lo = mid + 1;
        else {
            if (pc < U.xr[mid].lo + 8) return NULL;
#if defined(__x86_64__)
            const unsigned char *p = (const unsigned char *)pc;
            if (p[-5] == 0xE8) return &U.xr[mid];
            for (int n = 2; n <= 7; n++)
                if (p[-n] == 0xFF && ((p[-n + 1] >> 3) & 7) == 2) return &U.xr[mid];
            return NULL;
#else
            return &U.xr[mid];
#endif
        }
    }
    return NULL;
}

static void ml_stack_bounds(void)
{
    pthread_attr_t a;
    void *lo = NULL;
    size_t sz = 0;
    ml_stk.hi = 1; /* tried */
    if (pthread_getattr_np(pthread_self(), &a) != 0) return;
    if (pthread_attr_getstack(&a, &lo, &sz) == 0 && lo) {
        ml_stk.lo = (uintptr_t)lo;
        ml_stk.hi = (uintptr_t)lo + sz;
    }
    pthread_attr_destroy(&a);
}

/* ---- reading the unwind tables (DWARF 4 section 6.4, LSB's .eh_frame) ---- */

typedef struct {
    const uint8_t *p, *end;
} ml_rd_t;

static int rd_u8(ml_rd_t *r, uint64_t *v)
{
    if (r->p >= r->end) return -1;
    *v = *r->p++;
    return 0;
}

static int rd_uleb(ml_rd_t *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int s = 0; s < 64; s += 7) {
        if (r->p >= r->end) return -1;
        uint8_t b = *r->p++;
        x |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

static int rd_sleb(ml_rd_t *r, int64_t *v)
{
    uint64_t x = 0;
    int s = 0;
    uint8_t b;
    do {
        if (r->p >= r->end || s >= 64) return -1;
        b = *r->p++;
        x |= (uint64_t)(b & 0x7f) << s;
        s += 7;
    } while (b & 0x80);
    if (s < 64 && (b & 0x40)) x |= ~(uint64_t)0 << s;
    *v = (int64_t)x;
    return 0;
}

static int rd_fixed(ml_rd_t *r, void *out, size_t n)
{
    if ((size_t)(r->end - r->p) < n) return -1;
    memcpy(out, r->p, n);
    r->p += n;
    return 0;
}

/* A pointer in encoding enc (DW_EH_PE_*): absolute, pc-relative or, with
 * datarel, relative to that base; no indirect ones. */
static int rd_enc(ml_rd_t *r, uint8_t enc, uintptr_t datarel, uintptr_t *out)
{
    uintptr_t base;
    switch (enc & 0x70) {
    case 0x00: base = 0; break;
    case 0x10: base = (uintptr_t)r->p; break;
    case 0x30: base = datarel; break;
    default: return -1;
    }
    if (enc == 0xff || (enc & 0x80)) return -1;
    uint64_t u = 0;
    int64_t s = 0;
    int sig = 0;
    switch (enc & 0x0f) {
    case 0x00: case 0x04: case 0x0c: if (rd_fixed(r, &u, 8)) return -1; break;
    case 0x01: if (rd_uleb(r, &u)) return -1; break;
    case 0x09: if (rd_sleb(r, &s)) return -1; sig = 1; break;
    case 0x02: { uint16_t v; if (rd_fixed(r, &v, 2)) return -1; u = v; break; }
    case 0x03: { uint32_t v; if (rd_fixed(r, &v, 4)) return -1; u = v; break; }
    case 0x0a: { int16_t v; if (rd_fixed(r, &v, 2)) return -1; s = v; sig = 1; break; }
    case 0x0b: { int32_t v; if (rd_fixed(r, &v, 4)) return -1; s = v; sig = 1; break; }
    default: return -1;
    }
    *out = base + (sig ? (uintptr_t)s : (uintptr_t)u);
    return 0;
}

/* The FDE covering pc, by the binary search table of .eh_frame_hdr (only its
 * usual encoding: datarel sdata4 pairs); NULL if none. */
static const uint8_t *ml_find_fde(const uint8_t *hdr, uintptr_t pc)
{
    if (!hdr || hdr[0] != 1 || hdr[3] != 0x3b) return NULL;
    ml_rd_t r = {hdr + 4, hdr + 4 + 16};
    uintptr_t ehf, count;
    if (rd_enc(&r, hdr[1], (uintptr_t)hdr, &ehf) || rd_enc(&r, hdr[2], (uintptr_t)hdr, &count)) return NULL;
    const int32_t *tab = (const int32_t *)r.p; /* [initial location, FDE] pairs, sorted */
    if (!count) return NULL;
    size_t lo = 0, hi = count;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if ((uintptr_t)hdr + (intptr_t)tab[2 * mid] <= pc) lo = mid;
        else hi = mid;
    }
    if ((uintptr_t)hdr + (intptr_t)tab[2 * lo] > pc) return NULL;
    return hdr + (intptr_t)tab[2 * lo + 1];
}

/* The registers a rule follows (x86-64 DWARF numbers). */
enum { R_RBP = 6, R_RSP = 7, R_RA = 16 };
enum { H_SAME, H_OFFSET, H_OTHER, H_UNDEF }; /* how a register is recovered */
typedef struct {
    int cfa_reg; /* -1: a DWARF expression */
    int64_t cfa_off;
    uint8_t rbp_how, ra_how;
    int64_t rbp_off, ra_off;
} ml_row_t;

static void ml_row_set(ml_row_t *w, uint64_t reg, int how, int64_t off)
{
    if (reg == R_RBP) {
        w->rbp_how = (uint8_t)how;
        w->rbp_off = off;
    } else if (reg == R_RA) {
        w->ra_how = (uint8_t)how;
        w->ra_off = off;
    }
}

static void ml_row_restore(ml_row_t *w, const ml_row_t *init, uint64_t reg)
{
    if (reg == R_RBP) {
        w->rbp_how = init->rbp_how;
        w->rbp_off = init->rbp_off;
    } else if (reg == R_RA) {
        w->ra_how = init->ra_how;
        w->ra_off = init->ra_off;
    }
}

/* Runs call-frame instructions [p, end) from location loc until the row
 * holding target; init: the CIE's row (NULL while running the CIE's). */
static int ml_cfi_run(ml_rd_t r, ml_row_t *w, const ml_row_t *init, uintptr_t loc, uintptr_t target,
                      uint64_t caf, int64_t daf, uint8_t fenc)
{
    ml_row_t stk[8];
    int sp = 0;
    while (r.p < r.end) {
        uint64_t op, a, b;
        int64_t s;
        uintptr_t nl;
        if (rd_u8(&r, &op)) return -1;
        switch (op >> 6) {
        case 1: /* advance_loc */
            if (loc + (op & 0x3f) * caf > target) return 0;
            loc += (op & 0x3f) * caf;
            continue;
        case 2: /* offset */
            if (rd_uleb(&r, &a)) return -1;
            ml_row_set(w, op & 0x3f, H_OFFSET, (int64_t)a * daf);
            continue;
        case 3: /* restore */
            if (!init) return -1;
            ml_row_restore(w, init, op & 0x3f);
            continue;
        }
        switch (op) {
        case 0x00: break; /* nop */
        case 0x01: /* set_loc */
            if (rd_enc(&r, fenc, 0, &nl)) return -1;
            if (nl > target) return 0;
            loc = nl;
            break;
        case 0x02: case 0x03: case 0x04: { /* advance_loc1/2/4 */
            uint64_t d = 0;
            if (rd_fixed(&r, &d, op == 0x02 ? 1 : op == 0x03 ? 2 : 4)) return -1;
            if (loc + d * caf > target) return 0;
            loc += d * caf;
            break;
        }
        case 0x05: /* offset_extended */
            if (rd_uleb(&r, &a) || rd_uleb(&r, &b)) return -1;
            ml_row_set(w, a, H_OFFSET, (int64_t)b * daf);
            break;
        case 0x06: /* restore_extended */
            if (rd_uleb(&r, &a) || !init) return -1;
            ml_row_restore(w, init, a);
            break;
        case 0x07: case 0x08: /* undefined, same_value */
            if (rd_uleb(&r, &a)) return -1;
            ml_row_set(w, a, op == 0x07 && a == R_RA ? H_UNDEF : H_SAME, 0);
            break;
        case 0x09: /* register */
            if (rd_uleb(&r, &a) || rd_uleb(&r, &b)) return -1;
            ml_row_set(w, a, H_OTHER, 0);
            break;
        case 0x0a: /* remember_state */
            if (sp == 8) return -1;
            stk[sp++] = *w;
            break;
        case 0x0b: /* restore_state */
            if (!sp) return -1;
            *w = stk[--sp];
            break;
        case 0x0c: /* def_cfa */
            if (rd_uleb(&r, &a) || rd_uleb(&r, &b)) return -1;
            w->cfa_reg = (int)a;
            w->cfa_off = (int64_t)b;
            break;
        case 0x0d: /* def_cfa_register */
            if (rd_uleb(&r, &a)) return -1;
            w->cfa_reg = (int)a;
            break;
        case 0x0e: /* def_cfa_offset */
            if (rd_uleb(&r, &a)) return -1;
            w->cfa_off = (int64_t)a;
            break;
        case 0x0f: /* def_cfa_expression */
            if (rd_uleb(&r, &a) || (uint64_t)(r.end - r.p) < a) return -1;
            r.p += a;
            w->cfa_reg = -1;
            break;
        case 0x10: case 0x16: /* expression, val_expression */
            if (rd_uleb(&r, &a) || rd_uleb(&r, &b) || (uint64_t)(r.end - r.p) < b) return -1;
            r.p += b;
            ml_row_set(w, a, H_OTHER, 0);
            break;
        case 0x11: /* offset_extended_sf */
            if (rd_uleb(&r, &a) || rd_sleb(&r, &s)) return -1;
            ml_row_set(w, a, H_OFFSET, s * daf);
            break;
        case 0x12: /* def_cfa_sf */
            if (rd_uleb(&r, &a) || rd_sleb(&r, &s)) return -1;
            w->cfa_reg = (int)a;
            w->cfa_off = s * daf;
            break;
        case 0x13: /* def_cfa_offset_sf */
            if (rd_sleb(&r, &s)) return -1;
            w->cfa_off = s * daf;
            break;
        case 0x14: case 0x15: /* val_offset(_sf) */
            if (rd_uleb(&r, &a)) return -1;
            if (op == 0x14 ? rd_uleb(&r, &b) : rd_sleb(&r, &s)) return -1;
            ml_row_set(w, a, H_OTHER, 0);
            break;
        case 0x2e: /* GNU_args_size */
            if (rd_uleb(&r, &a)) return -1;
            break;
        case 0x2f: /* GNU_negative_offset_extended */
            if (rd_uleb(&r, &a) || rd_uleb(&r, &b)) return -1;
            ml_row_set(w, a, H_OFFSET, -(int64_t)b * daf);
            break;
        default: return -1;
        }
    }
    return 0;
}

/* The rule of the frame executing at return address ra (the call
 * instruction just before it: ra - 1): 0 and *out filled, -1 unusable. */
static int ml_rule_compute(const ml_xr_t *x, uintptr_t ra, ml_rule_t *out)
{
    uintptr_t target = ra - 1;
    const uint8_t *fde = ml_find_fde(x->ehdr, target);
    if (!fde) return -1;
    uint32_t len;
    memcpy(&len, fde, 4);
    if (len == 0 || len == 0xffffffffu) return -1;
    ml_rd_t f = {fde + 4, fde + 4 + len};
    uint32_t cie_ptr;
    if (rd_fixed(&f, &cie_ptr, 4) || !cie_ptr) return -1;
    const uint8_t *cie = fde + 4 - cie_ptr;
    uint32_t clen, cid;
    memcpy(&clen, cie, 4);
    if (clen == 0 || clen == 0xffffffffu) return -1;
    ml_rd_t c = {cie + 4, cie + 4 + clen};
    uint64_t ver, caf, rareg, alen;
    int64_t daf;
    if (rd_fixed(&c, &cid, 4) || cid != 0 || rd_u8(&c, &ver) || (ver != 1 && ver != 3)) return -1;
    const char *aug = (const char *)c.p;
    size_t auglen = strnlen(aug, (size_t)(c.end - c.p));
    if (auglen == (size_t)(c.end - c.p)) return -1;
    c.p += auglen + 1;
    if (rd_uleb(&c, &caf) || rd_sleb(&c, &daf)) return -1;
    if (ver == 1 ? rd_u8(&c, &rareg) : rd_uleb(&c, &rareg)) return -1;
    if (rareg != R_RA) return -1;
    uint8_t fenc = 0; /* absptr */
    if (aug[0] == 'z') {
        if (rd_uleb(&c, &alen) || (uint64_t)(c.end - c.p) < alen) return -1;
        const uint8_t *data = c.p, *dend = c.p + alen;
        for (const char *a = aug + 1; *a; a++) {
            if (*a == 'R') {
                if (data >= dend) return -1;
                fenc = *data++;
            } else if (*a == 'L') {
                data++;
            } else if (*a == 'P') { /* the personality routine: an encoding, then a pointer in it */
                if (data >= dend) return -1;
                uint8_t penc = *data++;
                ml_rd_t pr = {data, dend};
                uintptr_t unused;
                if (rd_enc(&pr, penc & 0x0f, 0, &unused)) return -1; /* its format alone: its size */
                data = pr.p;
            } else {
                return -1; /* 'S' (a signal frame) or unknown */
            }
        }
        c.p = dend;
    } else if (aug[0]) {
        return -1;
    }
    uintptr_t begin, range;
    if (rd_enc(&f, fenc, 0, &begin) || rd_enc(&f, fenc & 0x0f, 0, &range)) return -1;
    if (target < begin || target - begin >= range) return -1;
    if (aug[0] == 'z') {
        if (rd_uleb(&f, &alen) || (uint64_t)(f.end - f.p) < alen) return -1;
        f.p += alen;
    }
    ml_row_t init = {.cfa_reg = R_RSP, .cfa_off = 8, .rbp_how = H_SAME, .ra_how = H_OTHER};
    if (ml_cfi_run(c, &init, NULL, begin, (uintptr_t)-1, caf, daf, fenc)) return -1;
    ml_row_t w = init;
    if (ml_cfi_run(f, &w, &init, begin, target, caf, daf, fenc)) return -1;
    if (w.ra_how == H_UNDEF) { /* the outermost frame (_start): the stack ends here */
        out->flags |= ML_UWF_END;
        return 0;
    }
    if ((w.cfa_reg != R_RSP && w.cfa_reg != R_RBP) || w.ra_how != H_OFFSET || w.ra_off != -8 ||
        w.rbp_how == H_OTHER || w.cfa_off < 8 || w.cfa_off > INT32_MAX ||
        (w.rbp_how == H_OFFSET && (w.rbp_off >= 0 || w.rbp_off < INT16_MIN)))
        return -1;
    out->cfa_off = (int32_t)w.cfa_off;
    out->rbp_off = w.rbp_how == H_OFFSET ? (int16_t)w.rbp_off : 0;
    out->flags |= ML_UWF_RULE | (w.cfa_reg == R_RBP ? ML_UWF_CFA_RBP : 0);
    return 0;
}

/* ---- the rule cache ---- */

static uint32_t ml_rule_hash(uintptr_t pc) { return (uint32_t)(((uint64_t)pc * 0x9E3779B97F4A7C15ull) >> 40); }

/* ra's rule: cached, else computed (and cached when the lock is free and a
 * probe slot is empty).  *tmp holds a rule not cached. */
static const ml_rule_t *ml_rule_of(uintptr_t ra, ml_rule_t *tmp)
{
    uint32_t h = ml_rule_hash(ra);
    for (int i = 0; i < ML_UW_PROBE; i++) {
        const ml_rule_t *e = &U.cache[(h + i) & (ML_UW_CACHE - 1)];
        uintptr_t k = __atomic_load_n(&e->pc, __ATOMIC_ACQUIRE);
        if (k == ra) return e;
        if (!k) break;
    }
    memset(tmp, 0, sizeof *tmp);
    const ml_xr_t *x = ml_return_address(ra);
    if (!x) return tmp; /* not a return address: not cached (the stack held anything) */
    tmp->flags = ML_UWF_RA | (x->internal ? ML_UWF_INTERNAL : 0);
    (void)ml_rule_compute(x, ra, tmp);
    if (pthread_mutex_trylock(&U.lock) != 0) return tmp;
    for (int i = 0; i < ML_UW_PROBE; i++) {
        ml_rule_t *e = &U.cache[(h + i) & (ML_UW_CACHE - 1)];
        uintptr_t k = __atomic_load_n(&e->pc, __ATOMIC_RELAXED);
        if (k == ra) break;
        if (k) continue;
        e->cfa_off = tmp->cfa_off;
        e->rbp_off = tmp->rbp_off;
        e->flags = tmp->flags;
        __atomic_store_n(&e->pc, ra, __ATOMIC_RELEASE);
        __atomic_fetch_add(&U.nrules, 1, __ATOMIC_RELAXED);
        break;
    }
    pthread_mutex_unlock(&U.lock);
    return tmp;
}

/* ---- the walks ---- */

/* The frame record of the wrapper that returns to ra, by mpilens' own frame
 * pointers from here; 0 if not found. */
static __attribute__((noinline)) uintptr_t ml_wrapper_frame(uintptr_t ra)
{
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    for (int i = 0; i < 64; i++) {
        if (fp < ml_stk.lo || fp > ml_stk.hi - 16 || (fp & 7)) return 0;
        if (((const uintptr_t *)fp)[1] == ra) return fp;
        uintptr_t next = ((const uintptr_t *)fp)[0];
        if (next <= fp) return 0;
        fp = next;
    }
    return 0;
}

static int ml_cfi_walk(uintptr_t *out, int want, uintptr_t ra)
{
#if !defined(__x86_64__)
    (void)out, (void)want, (void)ra;
    return -1; /* the rules read x86-64's registers: backtrace() elsewhere */
#endif
    uintptr_t fp = ml_wrapper_frame(ra);
    if (!fp) return -1;
    uintptr_t ip = ra, sp = fp + 16, bp = ((const uintptr_t *)fp)[0];
    int k = 0;
    for (int i = 0; i < 64; i++) {
        ml_rule_t tmp;
        const ml_rule_t *r = ml_rule_of(ip, &tmp);
        uint16_t fl = r->flags;
        if (!(fl & ML_UWF_RA)) return -1;
        if (!(fl & ML_UWF_INTERNAL)) {
            out[k++] = ip;
            if (k == want) return k;
        }
        if (fl & ML_UWF_END) return k ? k : -1;
        if (!(fl & ML_UWF_RULE)) return -1;
        uintptr_t cfa = ((fl & ML_UWF_CFA_RBP) ? bp : sp) + (uintptr_t)(intptr_t)r->cfa_off;
        if (cfa <= sp || cfa > ml_stk.hi - 8 || (cfa & 7)) return -1;
        if (r->rbp_off) {
            uintptr_t at = cfa + (uintptr_t)(intptr_t)r->rbp_off;
            if (at < sp) return -1;
            bp = *(const uintptr_t *)at;
        }
        ip = ((const uintptr_t *)cfa)[-1];
        sp = cfa;
    }
    return -1;
}

/* By the saved frame pointers alone (MPILENS_CALLSITE_UNWIND=fp). */
static int ml_fp_walk(uintptr_t *out, int want, uintptr_t ra)
{
    uintptr_t fp = ml_wrapper_frame(ra);
    if (!fp) return -1;
    int k = 0;
    for (int i = 0; i < 64; i++) {
        if (fp < ml_stk.lo || fp > ml_stk.hi - 16 || (fp & 7)) return -1;
        uintptr_t next = ((const uintptr_t *)fp)[0], pc = ((const uintptr_t *)fp)[1];
        const ml_xr_t *x = ml_return_address(pc);
        if (!x) return -1;
        if (!x->internal) out[k++] = pc;
        if (k == want) return k;
        /* the chain ends before `want` frames (a saved frame pointer of 0: a function
         * without one kept %rbp = 0 from _start, say): backtrace() */
        if (next <= fp) return -1;
        fp = next;
    }
    return -1;
}

int ml_uw_walk(uintptr_t *out, int want, void *ra, int how)
{
    if (!ml_stk.hi) ml_stack_bounds();
    int got = -1;
    if (ml_stk.lo) /* the stack is known */
        got = how == ML_UW_CFI ? ml_cfi_walk(out, want, (uintptr_t)ra)
            : how == ML_UW_FP  ? ml_fp_walk(out, want, (uintptr_t)ra)
                               : -1;
    if (got < 0) __atomic_fetch_add(&U.fallbacks, 1, __ATOMIC_RELAXED);
    return got;
}
